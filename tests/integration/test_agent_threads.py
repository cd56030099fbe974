#!/usr/bin/env python3
"""16 threads x 100,000 writes under the agent: every call is either
recorded or counted as dropped, exactly, and at the default memory bound
nothing is dropped; with a 1 MiB bound records are dropped, still exactly
counted."""
import os

from rstest import PROG, check, cleanup, dump, finish, run, tempdir, trace_files, traced_env

THREADS, WRITES = 16, 100000


def count(out):
    """(io events in the traces, dropped_io from the last chunk, end seen)."""
    events = dropped = 0
    ended = True
    for t in trace_files(out):
        recs, _, _ = dump(t)
        events += sum(1 for r in recs if r["type"] == "io")
        chunks = [r for r in recs if r["type"] == "chunk"]
        dropped += chunks[-1]["counters"]["dropped_io"] if chunks else 0
        ended = ended and bool(chunks) and chunks[-1]["end"]
    return events, dropped, ended


def main():
    for label, extra in (("default bound", {}), ("1 MiB bound", {"RINGSIDE_BUFFER_MB": 1})):
        out, work = tempdir("trace-threads"), tempdir("threads")
        p = run([os.path.join(PROG, "threads_write"), work, str(THREADS), str(WRITES)],
                env=traced_env(out, **extra))
        if not check(label + ": program runs", p.returncode == 0, p.stderr.decode()[-300:]):
            continue
        calls = int(p.stdout.decode())
        check(label + ": calls made", calls == THREADS * (WRITES + 2), "program says %d" % calls)
        events, dropped, ended = count(out)
        check(label + ": recorded + dropped == calls", events + dropped == calls,
              "recorded %d + dropped %d != %d calls" % (events, dropped, calls))
        check(label + ": end chunk written", ended, "no end mark")
        if extra:
            check(label + ": drops happen", dropped > 0, "nothing dropped with 1 MiB")
        else:
            check(label + ": zero drops", dropped == 0, "%d dropped" % dropped)
        cleanup(out, work)
    finish()


main()
