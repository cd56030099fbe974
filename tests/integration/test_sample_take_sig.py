#!/usr/bin/env python3
"""A program that takes the sampler's signal keeps it, and the sampler goes
on with another free real-time signal: tests/programs/take_sig takes the
signal it finds with a handler it did not install, twice over, with a
second thread working throughout. With the agent: the program's own output
(which signals it took, that every raise reached its handler, that no
timer's signal strayed into it, that its handlers stayed in place) is what
it expects, one notice says the sampling moved, and CPU samples name the
functions of all three phases (by binutils' addr2line through the trace's
module map), the worker thread's included; the main thread's sampled CPU
time splits among its phases as its own clock says it did, within 5 points
or 4 sd (sampled.py; the phases do equal work, which is not equal time)."""
import os

from rstest import PROG, check, cleanup, finish, run, tempdir, trace_files, traced_env
from sampled import effective_n, share_check
from samples import Trace

TAKE = os.path.join(PROG, "take_sig")


def main():
    out = tempdir("take-sig")
    # 900M turns of each phase: about 1.5 s of the main thread's CPU, 375
    # samples from a 250 Hz kernel tick on (4 sd of a third: 9.7 points)
    p = run([TAKE, "900000000"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    line = p.stdout.decode().strip()
    err = p.stderr.decode()
    check("take_sig exits 0", p.returncode == 0, err[-300:])
    words = line.split()
    took = [int(w) for w in words[1:3]] if len(words) > 2 and words[0] == "took" else []
    check("the program found the sampler's signal twice (two different ones)",
          len(took) == 2 and 0 not in took and took[0] != took[1], line)
    check("its raises reached its handler, no stray, handlers kept",
          line.endswith("hits 3 3 strays 0 kept 1"), line)
    moved = [ln for ln in err.splitlines() if "they are sampled with signal" in ln]
    check("one notice that sampling moved", len(moved) == 1, err[-500:])
    check("no notice that samples are off", "CPU samples are off" not in err, err[-500:])
    files = trace_files(out)
    if check("one trace file", len(files) == 1, "%d files" % len(files)):
        t = Trace(files[0])
        cpu = t.of_kind("cpu")
        phases = ("spin_first", "spin_second", "spin_third")
        leaf, weights = {}, []
        for s in cpu:
            names = t.names(s) if t.stacks.get(s["stack"]) else []
            if names:
                leaf[names[0]] = leaf.get(names[0], 0) + s["weight_ns"]
                if names[0] in phases:
                    weights.append(s["weight_ns"])
        main_phases = [leaf.get(f, 0) for f in phases]
        total = sum(main_phases)
        check("CPU samples in each phase of the main thread", all(w > 0 for w in main_phases),
              "%s of %d samples" % (leaf, len(cpu)))
        clock = [float(x) for ln in err.splitlines() if ln.startswith("phases ") for x in ln.split()[1:]]
        if check("the program's own clock of its phases", len(clock) == 3 and sum(clock) > 0, err[-300:]):
            for f, w, spent in zip(phases, main_phases, clock):
                share_check("%s's share of the main thread's sampled CPU time (its own clock)" % f,
                            100.0 * w / total if total else 0.0, 100.0 * spent / sum(clock), effective_n(weights),
                            floor=5.0)
        check("the worker thread sampled too", leaf.get("worker_spin", 0) > 0, str(leaf))
        check("no samples dropped", t.counters.get("dropped_samples") == 0, str(t.counters))
    cleanup(out)

    plain = run([TAKE, "20000000"])
    check("without the agent it finds no foreign handler", plain.stdout.decode().startswith("took 0 0"),
          plain.stdout.decode())
    finish()


main()
