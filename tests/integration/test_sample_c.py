#!/usr/bin/env python3
"""CPU samples of a C program whose three hot functions do 60/30/10 of the
work by construction (tests/programs/hot3.c): the shares of the sampled
innermost frames, symbolised here with binutils' addr2line through the
trace's module map, are within 5 points or 4 sd (sampled.py) of the shares
the program's own clock gives (its thread's CPU time around each call); the
callers unwind to main; the program's output is the same with and without
the agent; at RINGSIDE_SAMPLE_HZ=0 no samples are taken."""
import os
import re
import resource

from rstest import PROG, check, cleanup, finish, run, tempdir, trace_files, traced_env
from sampled import effective_n, share_check
from samples import Trace, folded, shares, weighted_shares

NAMES = ("hot_a", "hot_b", "hot_c")
HOT3 = os.path.join(PROG, "hot3")


def main():
    args = [HOT3, "2500", "100000"]
    plain = run(args)
    out = tempdir("sample-c")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = run(args, env=traced_env(out, RINGSIDE_SAMPLE_HZ=999, HOT3_SHARES=1))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    own = dict((m.group(1), float(m.group(2)))
               for m in re.finditer(r"(hot_[abc]) ([0-9.]+)", p.stderr.decode()))
    check("hot3 runs under the agent and gives its own shares", p.returncode == 0 and set(own) == set(NAMES),
          p.stderr.decode()[-300:])
    truth = {n: own.get(n, 0.0) for n in NAMES}
    check("same output as without the agent", p.stdout == plain.stdout,
          "%r vs %r" % (p.stdout, plain.stdout))
    files = trace_files(out)
    flame_n = 0
    if check("one trace file", len(files) == 1, "%d files" % len(files)):
        t = Trace(files[0])
        cpu = t.of_kind("cpu")
        check("cpu samples recorded", len(cpu) >= 400, "%d samples" % len(cpu))
        leaf = [t.names(s)[0] if t.stacks.get(s["stack"]) else None for s in cpu]
        got, n = shares(leaf, truth)
        check("hot functions are most samples", n >= 0.9 * len(cpu),
              "%d of %d samples in hot_a/b/c" % (n, len(cpu)))
        for fn, want in truth.items():
            share_check("%s share (its own clock)" % fn, got[fn], want, n, floor=5.0)
        flame_n = effective_n([s["weight_ns"] for s, name in zip(cpu, leaf) if name in truth])
        callers = [t.names(s)[1:] for s in cpu if len(t.stacks.get(s["stack"], [])) > 1]
        with_main = sum(1 for c in callers if "main" in c)
        check("stacks unwind to main", with_main >= 0.9 * len(cpu),
              "%d of %d stacks reach main" % (with_main, len(cpu)))
        weight = sum(s["weight_ns"] for s in cpu) / 1e9
        check("CPU weights add up to the process's CPU time (kernel's rusage, within 5%)",
              abs(weight - child_cpu) <= 0.05 * child_cpu, "%.3f s sampled, rusage %.3f s" % (weight, child_cpu))
        check("no samples dropped", t.counters.get("dropped_samples") == 0, str(t.counters))
    rows = folded(out)
    if check("ringside flame --kind cpu folded output", rows, "ringside flame failed"):
        # weighted by CPU time: the same samples as above, as many as their
        # weights make them
        got, _ = weighted_shares(rows, lambda f: f[-1], truth)
        for fn, want in truth.items():
            share_check("flame: %s share (its own clock)" % fn, got[fn], want, flame_n, floor=5.0)
        check("flame: main is the hot functions' caller",
              all(f[-2] == "main" for f, _ in rows if f[-1] in truth), str(rows[:3]))
    cleanup(out)

    out = tempdir("sample-off")
    p = run([HOT3, "200", "100000"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=0))
    samples = sum(len(Trace(f).samples) for f in trace_files(out))
    check("RINGSIDE_SAMPLE_HZ=0: no samples", p.returncode == 0 and samples == 0,
          "%d samples" % samples)
    cleanup(out)
    finish()


main()
