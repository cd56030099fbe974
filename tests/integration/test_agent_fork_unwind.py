#!/usr/bin/env python3
"""A fork while the loader's object list is being walked or changed must not leave the child
hung (docs/agent.md, What it guarantees). tests/programs/fork_unwind forks 600 children while two threads wait (each
wait a stack capture under the agent: libunwind walks the list), a third opens and closes a
library that brings many others along (the loader changes the list, and the agent's writer
walks it to see what changed), and each child waits once itself and exits. A child forked while
another thread held the loader's lock inherits the lock held by no thread of its own; before the
agent kept its walks out of a fork and out of a child whose loader was mid-change, 7 to 21 of
1,000 such children hung in their first stack capture (and a multiprocessing Pool of
test_agent_fork once hung for good, its worker holding the queue's lock). Held: every child
exits (the program's own count, hung=0), with and without the agent the program's output is the
same, and the parent's trace is whole."""
import ctypes
import os

from rstest import PROG, check, cleanup, dump, finish, run, skip, tempdir, trace_files, traced_env

PROGRAM = os.path.join(PROG, "fork_unwind")
FORKS = 600


def library():
    """A library that brings others along, where there is one (the reporter's own needs)."""
    for name in ("libcurl-gnutls.so.4", "libdebuginfod.so.1", "libdw.so.1"):
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            continue
    return None


def main():
    lib = library()
    if not os.path.exists(PROGRAM) or not lib:
        skip("fork while walking", "build/tests/prog/fork_unwind is not built or no library to open: %s" % lib)
        finish()
        return
    bare = run([PROGRAM, "20", lib], timeout=120)
    check("without the agent: every child exits", bare.returncode == 0 and b"hung=0" in bare.stdout,
          "status %d: %s %s" % (bare.returncode, bare.stdout[-200:], bare.stderr[-300:]))
    out = tempdir("trace-fork-unwind")
    p = run([PROGRAM, str(FORKS), lib], env=traced_env(out, RINGSIDE_FLUSH_MS="10"), timeout=600)
    text = p.stdout.decode(errors="replace").strip()
    check("under the agent: every child of %d exits (%s opened and closed meanwhile)" % (FORKS, lib),
          p.returncode == 0 and text == "forks=%d hung=0" % FORKS,
          "status %d, %r: %s" % (p.returncode, text, p.stderr.decode(errors="replace")[-4000:]))
    parents = []
    for t in trace_files(out):
        recs, rc, _ = dump(t)
        meta = [r for r in recs if r["type"] == "meta"]
        if meta and meta[0].get("role") != "child":
            chunks = [r for r in recs if r["type"] == "chunk"]
            parents.append(bool(chunks) and chunks[-1]["end"])
    check("the parent's trace ends cleanly", parents == [True], "parents' traces ending cleanly: %s" % parents)
    cleanup(out)
    finish()


main()
