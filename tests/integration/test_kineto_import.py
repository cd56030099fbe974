#!/usr/bin/env python3
"""`ringside import-kineto` and the Perfetto export end to end, on the real
A100 traces in ../shared/data/kineto: import, report, and the report's GPU
figures held against HTA's own (expected-hta.json, within 0.5 points); then
the report's trace.json imported again and reported: the same report (all
of it but file names, clock offsets and the launch geometry's figures,
which trace.json does not carry). Also
the file names and modes, never overwriting, and bad input."""
import glob
import gzip
import json
import os
import re
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import RINGSIDE, ROOT, check, cleanup, finish, report_problems, run, skip, tempdir

DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "kineto")
# Fall back to the path the team sheet gives when this checkout is elsewhere.
if not os.path.isdir(DATA):
    DATA = "/work/shared/data/kineto"


def entry_files(entry):
    """The trace files of one expected-hta.json entry."""
    if entry.endswith(" (both files)"):
        d = os.path.join(DATA, entry[: -len(" (both files)")])
        return sorted(glob.glob(os.path.join(d, "*.json*")))
    return [os.path.join(DATA, entry)]


def import_and_report(files, work, name):
    job = os.path.join(work, name)
    out = os.path.join(work, name + "-report")
    r = run([RINGSIDE, "import-kineto", "-q", *files, "-o", job])
    if r.returncode != 0:
        return None, None, "import-kineto: %s" % r.stderr.decode(errors="replace").strip()
    r = run([RINGSIDE, "report", "-q", job, "-o", out])
    if r.returncode != 0:
        return None, None, "report: %s" % r.stderr.decode(errors="replace").strip()
    with open(os.path.join(out, "report.json")) as f:
        return job, out, json.load(f)


def hta_problems(rep, want_ranks, label):
    problems = []
    by_rank = {p["rank"]: p for p in rep["processes"]}
    for rank, want in want_ranks.items():
        p = by_rank.get(int(rank))
        if not p:
            problems.append("%s: no rank %s in the report" % (label, rank))
            continue
        g = p["gpu"]
        for key in ("idle_pct", "compute_pct", "non_compute_pct", "comm_comp_overlap_pct"):
            if abs(g[key] - want[key]) > 0.5:
                problems.append("%s rank %s: %s %.2f, HTA %.2f" % (label, rank, key, g[key], want[key]))
        if abs(g["span_us"] - want["kernel_time_us"]) > 1:
            problems.append("%s rank %s: span %s us, HTA %s" % (label, rank, g["span_us"], want["kernel_time_us"]))
        # HTA's idle split, summed over the streams.
        for ours, theirs in (("host_wait_us", "host_wait"), ("kernel_wait_us", "kernel_wait"),
                             ("other_us", "other")):
            hta = sum(s.get(theirs, 0) for s in want["idle_by_stream"].values())
            summed = g["idle_summed_over_streams"][ours]
            if abs(summed - hta) > 0.01 * hta + 1:
                problems.append("%s rank %s: idle %s %s, HTA %s" % (label, rank, ours, summed, hta))
    return problems


def step_problems(files, rep):
    """The steps of an imported job against the traces' own ProfilerStep#N
    annotations, as HTA keeps them (all but the last, where there are two or
    more): the count, and each step from the first rank's start to the last
    rank's end. Fewer than 3 kept: no steps from them."""
    kept = {}
    for path in files:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        steps = sorted((e["ts"], e["dur"], e["name"]) for e in events
                       if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X")
        if len(steps) >= 2:
            steps = steps[:-1]
        for ts, dur, name in steps:
            lo, hi = kept.get(name, (ts, ts + dur))
            kept[name] = (min(lo, ts), max(hi, ts + dur))
    got = rep.get("steps")
    if len(kept) < 3:
        return [] if not got or got.get("source") != "kineto" else ["steps from %d kept annotations" % len(kept)]
    if not got or got.get("source") != "kineto":
        return ["no steps from kineto: %r" % (got or {}).get("source")]
    problems = []
    if got["count"] != len(kept):
        problems.append("%d steps, the traces keep %d ProfilerStep annotations" % (got["count"], len(kept)))
    want = sorted((hi - lo) / 1e3 for lo, hi in kept.values())
    have = sorted(x["dur_ms"] for x in got.get("series", []))
    for w, h in zip(want, have):
        if abs(w - h) > 0.01:
            problems.append("a step of %.3f ms, the annotation's %.3f ms" % (h, w))
    return problems


# The figures from launch geometry, which trace.json does not carry: the
# report's loader keeps what it works out of each kernel's launch, not the
# launch (grid, block, registers, shared memory, the GPU's limits), so the
# import of trace.json has none (test_kineto_geometry.py checks them).
GEOMETRY = re.compile(r"/processes\[\d+\]/(gpu/(sm_activity_pct|sm_activity_geometry_pct|sm_occupancy_pct|"
                      r"no_geometry_pct)|kernels\[\d+\]/(blocks|threads_per_block|waves|sm_coverage_pct|"
                      r"occupancy_pct))$|/timeline/ranks\[\d+\]/sm_active_pct$")


def differences(a, b, path=""):
    """Where two reports differ, leaving out what names the files read (the
    export command names the trace folder) and the clock offsets: trace.json
    is on the job's time line already, so the files imported from it need no
    offset to be put there; how each report was made (its wall time); and
    the launch geometry's figures (GEOMETRY)."""
    if path.endswith("/trace") or path.endswith("/clock") or path in ("/job", "/lanes/export", "/reporter"):
        return []
    if GEOMETRY.search(path):
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if GEOMETRY.search(path + "/" + k):
                continue
            if k not in a or k not in b:
                out.append("%s/%s: only in one" % (path, k))
            else:
                out += differences(a[k], b[k], path + "/" + k)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return ["%s: %d items, then %d" % (path, len(a), len(b))]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, "%s[%d]" % (path, i))
        return out
    return [] if a == b else ["%s: %r, then %r" % (path, a, b)]


def main():
    if not os.path.isfile(os.path.join(DATA, "expected-hta.json")):
        skip("kineto_import", "no " + DATA)
        finish()
    with open(os.path.join(DATA, "expected-hta.json")) as f:
        expected = json.load(f)
    work = tempdir("kineto")
    for n, (entry, want) in enumerate(sorted(expected.items())):
        files = entry_files(entry)
        label = entry.replace(" (both files)", "")
        job, out, rep = import_and_report(files, work, "job%d" % n)
        if not check("kineto_import_report %s" % label, job is not None, rep):
            continue
        report_problems("kineto_import_hta %s" % label, hta_problems(rep, want["ranks"], label))
        report_problems("kineto_steps %s" % label, step_problems(files, rep))

        # The round trip: the report's trace.json, imported, reported.
        trace = os.path.join(out, "trace.json")
        if not check("kineto_perfetto_written %s" % label, os.path.isfile(trace), "no trace.json"):
            continue
        job2, _, rep2 = import_and_report([trace], work, "again%d" % n)
        if not check("kineto_perfetto_import %s" % label, job2 is not None, rep2):
            continue
        check("kineto_perfetto_files %s" % label,
              len(os.listdir(job2)) == len(os.listdir(job)),
              "%d files from trace.json, %d from the traces" % (len(os.listdir(job2)), len(os.listdir(job))))
        report_problems("kineto_perfetto_same_report %s" % label, differences(rep, rep2))
        report_problems("kineto_perfetto_hta %s" % label, hta_problems(rep2, want["ranks"], label))

    # Names as the agent's, modes, and no file overwritten.
    src = os.path.join(DATA, "sampled-2rank", "sampled_rank-1.json.gz")
    job = os.path.join(work, "names", "job")
    problems = []
    for _ in range(2):
        r = run([RINGSIDE, "import-kineto", src, "-o", job])
        if r.returncode != 0:
            problems.append("exit %d: %s" % (r.returncode, r.stderr.decode(errors="replace")))
    names = sorted(os.listdir(job)) if os.path.isdir(job) else []
    with gzip.open(src, "rt") as f:
        pid = next(e["pid"] for e in json.load(f)["traceEvents"] if e.get("cat") == "cuda_runtime")
    want = ["rank-1.unknown.%d.1.trace.lz4" % pid, "rank-1.unknown.%d.trace.lz4" % pid]
    if names != want:
        problems.append("files %s, want %s" % (names, want))
    if os.path.isdir(job) and stat.S_IMODE(os.stat(job).st_mode) != 0o700:
        problems.append("folder mode %o" % stat.S_IMODE(os.stat(job).st_mode))
    for n in names:
        mode = stat.S_IMODE(os.stat(os.path.join(job, n)).st_mode)
        if mode != 0o600:
            problems.append("%s: mode %o" % (n, mode))
    report_problems("kineto_import_names", problems)

    # Bad input: one line naming the file, exit 1; usage: exit 2.
    cut = os.path.join(work, "cut.json.gz")
    with open(src, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:50000])
    r = run([RINGSIDE, "import-kineto", cut, "-o", os.path.join(work, "cut")])
    err = r.stderr.decode(errors="replace").strip().splitlines()
    check("kineto_import_cut_short", r.returncode == 1 and len(err) == 1 and cut in err[0]
          and "cut short" in err[0], "exit %d, stderr %r" % (r.returncode, err))
    r = run([RINGSIDE, "import-kineto", src])
    check("kineto_import_usage", r.returncode == 2, "exit %d without -o" % r.returncode)
    cleanup(work)
    finish()


main()
