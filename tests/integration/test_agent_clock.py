#!/usr/bin/env python3
"""Recorded times against the program's own clock: write_loop prints
CLOCK_MONOTONIC right after every 100th write, so that write's recorded end
must lie just before the printed time (whether the agent reads the TSC or
clock_gettime), over a run long enough for several writer drains, and over
one so short that its only drain is at exit, a fraction of a millisecond
after the agent's first clock reading."""
import os

from rstest import PROG, check, cleanup, dump, finish, run, tempdir, trace_files, traced_env


def check_run(label, out, work, count, **env):
    p = run([os.path.join(PROG, "write_loop"), os.path.join(work, label + ".out"), str(count)],
            env=traced_env(out, **env))
    check("%s: program runs" % label, p.returncode == 3, p.stderr.decode())
    printed = {}
    for line in p.stdout.decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            printed[int(parts[0])] = int(parts[1])
    recs, _, _ = dump(trace_files(out)[0])
    writes = [r for r in recs if r["type"] == "io" and r["op"] == "write" and r["path"].endswith(label + ".out")]
    check("%s: every write recorded" % label, len(writes) == count, "%d recorded" % len(writes))
    writes.sort(key=lambda r: r["start_ns"])
    gaps = sorted(printed[n] - (writes[n - 1]["start_ns"] + writes[n - 1]["dur_ns"])
                  for n in printed if n <= len(writes))
    check("%s: recorded ends precede the program's clock" % label, gaps and gaps[0] > -2000,
          "earliest gap %d ns" % (gaps[0] if gaps else 0))
    med = gaps[len(gaps) // 2] if gaps else None
    check("%s: recorded ends within 20 us of the program's clock (median)" % label,
          med is not None and med < 20000,
          "median gap %s ns, 99th %s ns" % (med, gaps[len(gaps) * 99 // 100] if gaps else None))


def main():
    out, work = tempdir("trace-clock"), tempdir("clock")
    check_run("long", out, work, 300000, RINGSIDE_FLUSH_MS=100)
    cleanup(out)
    out = tempdir("trace-clock-short")
    check_run("short", out, work, 300)
    cleanup(out, work)
    finish()


main()
