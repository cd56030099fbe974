#!/usr/bin/env python3
"""Wait stacks of blocking file I/O: tests/programs/wait_read blocks in
read() on a FIFO for a known time, measured by its own clock; the trace has
one wait sample on the pipe (reason pipe) weighted by that time (within
2%), whose stack, symbolised
with addr2line through the trace's module map, starts at the caller
slow_reader (the agent's own frames left out) and goes on to main."""
import os

from rstest import PROG, check, cleanup, finish, run, tempdir, trace_files, traced_env
from samples import Trace


def main():
    out, work = tempdir("sample-wait"), tempdir("wait")
    p = run([os.path.join(PROG, "wait_read"), os.path.join(work, "fifo"), "300"], env=traced_env(out))
    check("wait_read runs", p.returncode == 0, p.stderr.decode()[-300:])
    blocked = int(p.stdout.decode().split("blocked_ns=")[1]) if b"blocked_ns=" in p.stdout else 0
    # Both processes may have wait samples (the child's open of the FIFO
    # waits for the reader under load): the long one is looked for in all.
    waits = []
    for f in trace_files(out):
        tr = Trace(f)
        waits += [(tr, s) for s in tr.of_kind("wait")]
    # The child's nanosleep is a wait of its own (reason sleep): the read's
    # is the one long wait on the pipe.
    long_waits = [(tr, s) for tr, s in waits if s["weight_ns"] >= 100000000 and s.get("reason") == "pipe"]
    if check("one long wait sample on the pipe", len(long_waits) == 1,
             "%d wait samples: %s" % (len(waits), [(s["weight_ns"], s.get("reason")) for _, s in waits])):
        t, s = long_waits[0]
        check("weight is the time blocked (within 2%)", abs(s["weight_ns"] - blocked) <= 0.02 * blocked,
              "%d ns vs the program's %d ns" % (s["weight_ns"], blocked))
        names = t.names(s)
        check("stack starts at the caller slow_reader", names[:1] == ["slow_reader"], str(names[:4]))
        check("stack goes on to main", "main" in names, str(names))
    cleanup(out, work)
    finish()


main()
