#!/usr/bin/env python3
"""Recorded times against the program's own clock: write_loop prints
CLOCK_MONOTONIC right after every 100th write, so that write's recorded end
must lie just before the printed time (whether the agent reads the TSC or
clock_gettime), over a run long enough for several writer drains."""
import os

from rstest import PROG, check, cleanup, dump, finish, run, tempdir, trace_files, traced_env


def main():
    out, work = tempdir("trace-clock"), tempdir("clock")
    p = run([os.path.join(PROG, "write_loop"), os.path.join(work, "w.out"), "300000"],
            env=traced_env(out, RINGSIDE_FLUSH_MS=100))
    check("program runs", p.returncode == 3, p.stderr.decode())
    printed = {}
    for line in p.stdout.decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            printed[int(parts[0])] = int(parts[1])
    recs, _, _ = dump(trace_files(out)[0])
    writes = [r for r in recs if r["type"] == "io" and r["op"] == "write" and r["path"].endswith("w.out")]
    check("every write recorded", len(writes) == 300000, "%d recorded" % len(writes))
    writes.sort(key=lambda r: r["start_ns"])
    gaps = sorted(printed[n] - (writes[n - 1]["start_ns"] + writes[n - 1]["dur_ns"])
                  for n in printed if n <= len(writes))
    check("recorded ends precede the program's clock", gaps and gaps[0] > -2000,
          "earliest gap %d ns" % (gaps[0] if gaps else 0))
    med = gaps[len(gaps) // 2] if gaps else None
    check("recorded ends within 20 us of the program's clock (median)", med is not None and med < 20000,
          "median gap %s ns, 99th %s ns" % (med, gaps[len(gaps) * 99 // 100] if gaps else None))
    cleanup(out, work)
    finish()


main()
