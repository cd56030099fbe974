#!/usr/bin/env python3
"""The agent's own functions stay out of the program's flame graphs.

A CPU sample taken while a thread is inside a hook used to show the hook
and what it called under the program's call: `main;write;timed_call` (the
demo's CPU graph had 1.14 s under `write;timed_call`), and every thread of
the program sat under the agent's thread-start wrapper. Now the hook reads
as the function the program called (`main;write`), and the agent's frames
further out are left out.

The agent's own function names come from outside ringside: `nm` of
libagent.so, its local text symbols (t). For write_loop (writes through the
hook's fast path), threads_write (threads the agent starts, writes of each)
and wait_read (a read that blocks in a FIFO, its wait graph): no frame of
the CPU or wait graph is one of them; in write_loop's CPU graph `write` is a leaf right
under `main` (the program's own call) and holds time."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import AGENT, PROG, check, finish, run, tempdir, traced_env  # noqa: E402
from samples import folded  # noqa: E402


def agent_locals():
    out = subprocess.run(["nm", AGENT], capture_output=True, text=True).stdout
    return {l.split()[2] for l in out.splitlines() if len(l.split()) == 3 and l.split()[1] == "t"}


def main():
    own = agent_locals()
    check("nm lists the agent's own functions (%d)" % len(own), "timed_call" in own or len(own) > 50,
          str(sorted(own))[:200])
    work = tempdir("flame-no-agent")
    cases = [
        ("write_loop", [os.path.join(PROG, "write_loop"), os.path.join(work, "w.out"), "300000"], 3,
         ("cpu", "wait")),
        ("threads_write", [os.path.join(PROG, "threads_write"), work, "4", "60000"], 0, ("cpu", "wait")),
        ("wait_read", [os.path.join(PROG, "wait_read"), os.path.join(work, "fifo"), "300"], 0, ("wait",)),
    ]
    for name, argv, status, kinds in cases:
        out = os.path.join(work, name)
        p = run(argv, env=traced_env(out, RINGSIDE_SAMPLE_HZ=999, RINGSIDE_WAIT_US=100), timeout=120)
        if not check("%s runs under the agent (status %d)" % (name, status), p.returncode == status,
                     p.stderr.decode(errors="replace")[-300:]):
            continue
        for kind in kinds:
            rows = folded(out, kind) or []
            theirs = sorted({f for stack, _ in rows for f in stack if f in own})
            check("%s: %d %s stacks, none with a frame of the agent's own" % (name, len(rows), kind),
                  rows and not theirs, str(theirs[:8]))
        if name == "write_loop":
            rows = folded(out, "cpu") or []
            under = sum(w for stack, w in rows if stack[-2:] == ["main", "write"])
            total = sum(w for _, w in rows)
            check("write_loop: its writes read main;write (%.0f%% of CPU time)" % (100.0 * under / max(total, 1)),
                  under > 0, str(sorted(rows, key=lambda r: -r[1])[:3]))
    finish()


if __name__ == "__main__":
    main()
