#!/usr/bin/env python3
"""The hang watch cuts into long waits unseen (RINGSIDE_HANG_S, docs/agent.md):
tests/programs/long_waits (its first event a file written, which starts
the agent, as a rank's always has) blocks about 1.5 s in a sleep, a condition
variable, a mutex, a join and a semaphore, as a rank (RANK=0) with
RINGSIDE_HANG_S=1. Its output and status are the same as without the agent
(every call returned what it returns alone: no EINTR); each of the four
waits the watch may ask about was asked (two wait samples under its
function: the part up to the watch's question and the rest), the semaphore
was left alone (one); and each function's blocked time in the wait flame
graph is within 10% of its own measure (the parts add up, nothing twice)."""
import os

from rstest import PROG, check, cleanup, dump, finish, run, tempdir, trace_files, traced_env
from waitflame import folded, truth

PROGRAM = os.path.join(PROG, "long_waits")
ASKED = {"wait_sleep": "sleep", "wait_condvar": "condvar", "wait_mutex": "lock", "wait_join": "join"}
LEFT = {"wait_semaphore": "semaphore"}


def samples_under(recs, fn_addrs):
    """Wait samples whose stack's innermost frame is in fn_addrs (lo, hi)."""
    stacks = {r["id"]: r["frames"] for r in recs if r["type"] == "stack"}
    n = 0
    for r in recs:
        if r["type"] == "sample" and r["kind"] == "wait":
            fr = stacks.get(r["stack"], [])
            if fr and fn_addrs[0] <= fr[0] < fn_addrs[1]:
                n += 1
    return n


def main():
    out = tempdir("hang-watch")
    bare = run([PROGRAM, "1500", os.path.join(out, "bare.txt")], cwd="/tmp")
    traced = run([PROGRAM, "1500", os.path.join(out, "traced.txt")], env=traced_env(out, RANK=0, WORLD_SIZE=1, RINGSIDE_HANG_S=1, RINGSIDE_FLUSH_MS=100),
                 cwd="/tmp")
    check("runs without the agent", bare.returncode == 0, bare.stderr.decode()[-300:])
    check("same status and output with the agent (no EINTR)",
          traced.returncode == bare.returncode and traced.stdout == bare.stdout,
          "%r vs %r" % (traced.stdout, bare.stdout))
    t = truth(traced.stderr)
    stacks = folded(out)
    for fn, reason in sorted(list(ASKED.items()) + list(LEFT.items())):
        leaf = "[wait: %s]" % reason
        got = sum(w for frames, w in stacks if fn in frames and frames[-1] == leaf)
        want = t.get(fn, 0)
        check("%s: %s, blocked time within 10%% of its own measure" % (fn, leaf),
              want > 0 and abs(got - want) <= 0.1 * want, "flame graph %d ns, program %d ns" % (got, want))
    files = trace_files(out)
    if check("one trace file", len(files) == 1, str(files)):
        recs, _, _ = dump(files[0])
        # the functions' addresses, by nm over the program's module record
        mods = [r for r in recs if r["type"] == "module" and r.get("path_text", "").endswith("long_waits")]
        base = min((m["start"] - m["file_off"] for m in mods), default=0)
        nm = run(["nm", PROGRAM]).stdout.decode().split("\n")
        syms = sorted((int(l.split()[0], 16), l.split()[2]) for l in nm if len(l.split()) == 3)
        for fn in sorted(list(ASKED) + list(LEFT)):
            lohi = [(a, syms[i + 1][0]) for i, (a, name) in enumerate(syms[:-1]) if name == fn]
            n = samples_under(recs, (base + lohi[0][0], base + lohi[0][1])) if lohi else -1
            if fn in ASKED:
                check("%s: the watch asked (two wait samples)" % fn, n == 2, "%d" % n)
            else:
                check("%s: left alone (one wait sample)" % fn, n == 1, "%d" % n)
    cleanup(out)
    finish()


main()
