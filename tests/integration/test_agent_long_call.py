#!/usr/bin/env python3
"""A read of a regular file that blocks for 3 s (tests/programs/uffd_read:
the page it reads into is supplied through userfaultfd 3 s after the fault).
3 s is more than 2^32 TSC ticks on any counter from 1.5 GHz up, so the
record needs the long form, and it is past the wait threshold, so it makes
a wait sample: both ways out of the hooks' common path. The recorded
duration must be the time the program measured around the call (its own
clock; within 1 ms under, 10 us over), and so must the wait sample's
weight."""
import os

from rstest import PROG, check, cleanup, dump, finish, run, skip, tempdir, trace_files, traced_env

HOLD_MS = 3000
# Ticks become ns on a line through clock pairs the writer takes every
# 500 ms; 3 s back from the last pair, a pair's jitter of ~100 ns moves a
# time by a few hundred ns.
SLACK_NS = 10000


def main():
    out, work = tempdir("trace-long"), tempdir("long")
    data = os.path.join(work, "long.dat")
    p = run([os.path.join(PROG, "uffd_read"), data, str(HOLD_MS)], env=traced_env(out), timeout=60)
    text = p.stdout.decode()
    if p.returncode == 3 and text.startswith("unavailable"):
        skip("a 3 s read of a regular file", text.strip())
        cleanup(out, work)
        return finish()
    check("uffd_read runs under the agent", p.returncode == 0, text + p.stderr.decode()[-300:])
    fields = dict(f.split("=") for f in text.split() if "=" in f)
    blocked = int(fields.get("blocked_ns", 0))
    check("the read blocked for the hold time", blocked >= HOLD_MS * 1000000, text)
    files = trace_files(out)
    if check("one trace", len(files) == 1, str(files)):
        recs, rc, err = dump(files[0])
        reads = [r for r in recs if r.get("type") == "io" and r.get("path") == data and r["op"] == "pread"]
        if check("the pread is recorded once", len(reads) == 1, str(reads)):
            r = reads[0]
            check("its result is the program's", r["result"] == int(fields.get("result", -1)), str(r))
            check("its duration is the program's measure of the call: not 1 ms short of it, not 10 us over",
                  blocked - 1000000 <= r["dur_ns"] <= blocked + SLACK_NS, "%d ns recorded, %d ns measured" % (r["dur_ns"], blocked))
            # Any call the program makes can take over the 1 ms threshold
            # on a busy machine (its open and write, the supplier's read),
            # and make a wait sample of its own; only one is this long
            # among those on files (the supplier's sleep is a wait too).
            waits = [s for s in recs if s.get("type") == "sample" and s.get("kind") == "wait"
                     and s.get("reason") == "file" and s["weight_ns"] >= HOLD_MS * 1000000 // 2]
            if check("one wait sample of over half the hold time", len(waits) == 1, str(waits)):
                check("the wait sample is at the call (within 1 ms), weighted by the time the program measured",
                      abs(waits[0]["ts_ns"] - r["start_ns"]) <= 1000000 and
                      blocked - 1000000 <= waits[0]["weight_ns"] <= blocked + SLACK_NS,
                      "%s; the read at %d, %d ns measured" % (waits[0], r["start_ns"], blocked))
    cleanup(out, work)
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
