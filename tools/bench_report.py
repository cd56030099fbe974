#!/usr/bin/env python3
"""The reporter's part of `make bench`: (a) `ringside import-kineto` +
`ringside report` on the real PyTorch traces in ../shared/data/kineto
against HTA's own load + analyse time for them (expected-hta.json, measured
on the same kind of machine), best of ROUNDS runs; (b) a generated job
(build/gen_job: 64 ranks x 1 million records) decoded and analysed by
`ringside report`: records per second and peak memory (ru_maxrss), for 16
and for 64 of its ranks, to show memory grows with the records the report
holds and not with the number of ranks beyond that.
Usage: tools/bench_report.py [BUILD]   (env: ROUNDS, default 3; RANKS, EVENTS)"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "kineto")
if not os.path.isdir(DATA):
    DATA = "/work/shared/data/kineto"
RINGSIDE = os.path.join(BUILD, "ringside")
GEN = os.path.join(BUILD, "gen_job")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
RANKS = int(os.environ.get("RANKS", "64"))
EVENTS = int(os.environ.get("EVENTS", "1000000"))


def timed(cmd):
    """Wall seconds of cmd, its CPU seconds (user + system, all threads) and
    its peak resident memory in KiB (ru_maxrss of that child, from wait4)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench_report: %s failed: %s" % (" ".join(cmd), err.strip()))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def kineto_part(work):
    with open(os.path.join(DATA, "expected-hta.json")) as f:
        expected = json.load(f)
    print("Kineto traces: import-kineto + report (best of %d) vs. HTA's load + analyse. CPU: user +"
          % ROUNDS)
    print("system time of both commands, all threads: what the wall time would be on an idle core;")
    print("on a shared machine the wall time also holds the time others took.")
    print()
    print("| trace | HTA | ringside wall | ringside CPU | ratio (wall) | ratio (CPU) | target | met (wall) |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    total_hta = total_ours = total_cpu = 0.0
    for entry, want in sorted(expected.items()):
        if entry.endswith(" (both files)"):
            files = sorted(glob.glob(os.path.join(DATA, entry[: -len(" (both files)")], "*.json*")))
        else:
            files = [os.path.join(DATA, entry)]
        hta = want["load_s"] + want["analyze_s"]
        best = cpu = None
        for _ in range(ROUNDS):
            job = os.path.join(work, "kineto")
            shutil.rmtree(job, ignore_errors=True)
            t1, c1, _ = timed([RINGSIDE, "import-kineto", "-q", *files, "-o", job])
            t2, c2, _ = timed([RINGSIDE, "report", "-q", job, "--json", os.path.join(work, "k.json")])
            best = t1 + t2 if best is None else min(best, t1 + t2)
            cpu = c1 + c2 if cpu is None else min(cpu, c1 + c2)
        total_hta += hta
        total_ours += best
        total_cpu += cpu
        print("| %s | %.2f s | %.3f s | %.3f s | %.1fx | %.1fx | >= 20x | %s |" %
              (entry.replace(" (both files)", ""), hta, best, cpu, hta / best, hta / cpu,
               "yes" if hta / best >= 20 else "no"))
    print("| all | %.2f s | %.3f s | %.3f s | %.1fx | %.1fx | >= 20x | %s |" %
          (total_hta, total_ours, total_cpu, total_hta / total_ours, total_hta / total_cpu,
           "yes" if total_hta / total_ours >= 20 else "no"))
    print()


def generated_part(work):
    print("Generated job: %d ranks x %d records (GPU, collective, sync), decoded and analysed by"
          " `ringside report`" % (RANKS, EVENTS))
    print()
    full = os.path.join(work, "gen%d" % RANKS)
    t, _, _ = timed([GEN, "-n", str(RANKS), "-e", str(EVENTS), "-o", full, "-j", str(os.cpu_count() or 1)])
    files = sorted(os.listdir(full), key=lambda n: int(n.split(".")[0].split("-")[1]))
    size = sum(os.path.getsize(os.path.join(full, n)) for n in files)
    print("(generated in %.1f s: %d files, %.0f MB, %.1f B per record)" %
          (t, len(files), size / 1e6, size / (RANKS * EVENTS)))
    print()
    print("| ranks | records | wall | CPU | records/s (wall) | peak memory | per record | per rank |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for ranks in sorted({min(16, RANKS), RANKS}):
        job = os.path.join(work, "ranks%d" % ranks)
        os.makedirs(job)
        for n in files[:ranks]:
            os.link(os.path.join(full, n), os.path.join(job, n))
        wall, cpu, rss_kib = timed([RINGSIDE, "report", "-q", job, "--json", os.path.join(work, "g.json")])
        records = ranks * EVENTS
        rss = rss_kib * 1024
        rows.append((ranks, rss))
        print("| %d | %d | %.2f s | %.2f s | %.2f M | %.0f MB | %.0f B | %.1f MB |" %
              (ranks, records, wall, cpu, records / wall / 1e6, rss / 1e6, rss / records, rss / ranks / 1e6))
        shutil.rmtree(job)
    if len(rows) == 2:
        (r1, m1), (r2, m2) = rows
        print()
        print("Memory added per rank from %d to %d ranks: %.1f MB (%.0f B per record); at %d ranks: "
              "%.1f MB per rank." % (r1, r2, (m2 - m1) / (r2 - r1) / 1e6, (m2 - m1) / ((r2 - r1) * EVENTS),
                                     r1, m1 / r1 / 1e6))
    print()


def main():
    for f in (RINGSIDE, GEN):
        if not os.path.isfile(f):
            sys.exit("bench_report: %s is missing (make %s)" % (f, f))
    work = tempfile.mkdtemp(prefix="ringside-bench-report.")
    try:
        if os.path.isfile(os.path.join(DATA, "expected-hta.json")):
            kineto_part(work)
        else:
            print("Kineto traces: skipped, no %s" % DATA)
        generated_part(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("Machine: %d CPUs (%s); load average %.2f at the end." %
          (os.cpu_count() or 0, os.uname().machine, os.getloadavg()[0]))


main()
