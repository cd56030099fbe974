#!/usr/bin/env python3
"""`ringside export perfetto` and the lanes of `ringside report` (the
processes its trace.json holds in full, report.json "lanes") on gen_job
jobs, against what the trace files hold as `ringside dump` prints them,
filtered by time here. gen_job writes every rank on one clock (its ranks
leave each collective at the same instant), so the job's time line is the
files' own: an exported event's ts is its record's time to the ns.

Checks: the processes and every GPU op, launch call and host wait of the
export, whole and over --from/--to, for every process and for --ranks;
usage errors exit 2 with their message and write nothing; a rank that is
not in the job exits 1; more than 64 processes need --ranks (64 do not);
report's lanes: every process of a small job ("all"), --ranks ("chosen"),
at most 8 of a larger job, trace.json holding exactly the lanes, and the
lanes' event counts; past 250k events a stretch of the job, no more, in
trace.json and in the report's Perfetto trace, trace.pftrace."""
import json
import math
import os
import shutil
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_export_pftrace as pftrace  # noqa: E402
from rstest import (BUILD, RINGSIDE, check, cleanup, dump, finish, report_problems, run, skip,  # noqa: E402
                    tempdir, trace_files)

GEN_JOB = os.path.join(BUILD, "gen_job")
LANES_MAX = 8              # reporter/job/report.h RSR_LANES_MAX
LANES_EVENTS = 250000      # RSR_LANES_EVENTS
EXPORT_MAX = 64            # RSR_EXPORT_MAX
SYNC_CALLS = {"cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize", "cudaMemcpy",
              "cudaStreamWaitEvent", "cudaStreamQuery"}
OP_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def gen(work, name, ranks, events):
    """A gen_job job in work/name; its folder, or None."""
    d = os.path.join(work, name)
    p = run([GEN_JOB, "-n", str(ranks), "-e", str(events), "-o", d])
    if not check("export gen_job %s runs" % name, p.returncode == 0, p.stderr.decode()[-300:]):
        return None
    return d


class Proc:
    """One trace file's records, from ringside dump."""

    def __init__(self, path):
        recs, rc, err = dump(path)
        if rc != 0:
            raise RuntimeError("ringside dump %s: %s" % (path, err))
        meta = [r for r in recs if r["type"] == "meta"][0]
        self.rank = meta["rank"]
        self.gpu = [r for r in recs if r["type"] == "gpu"]
        self.syncs = [r for r in recs if r["type"] == "sync"]
        self.colls = [r for r in recs if r["type"] == "coll"]
        times = [meta["start"]["mono_ns"]] + [r["mono_ns"] for r in recs if r["type"] == "clock"]
        ends = list(times)
        for g in self.gpu:
            times += [g["launch_ns"], g["gpu_start_ns"]]
            ends += [g["launch_ns"] + g["call_ns"], g["gpu_end_ns"]]
        for s in self.syncs:
            times.append(s["start_ns"])
            ends.append(s["start_ns"] + s["dur_ns"])
        for c in self.colls:
            times += [c["launch_ns"], c["gpu_start_ns"]]
            ends += [c["launch_ns"] + c["call_ns"], c["gpu_end_ns"]]
        # the first and last time the file shows (0: not known)
        self.first = min(t for t in times if t)
        self.last = max(ends)

    def expected(self, lo=None, hi=None):
        """(ops, launches, syncs) overlapping [lo, hi]: a GPU record from
        its launch to the later of its GPU end and its call's end, a wait
        from its start to its end; as sorted lists of (ts_ns, dur_ns[, name])."""
        lo = -1 if lo is None else lo
        hi = 1 << 62 if hi is None else hi
        ops, launches, syncs = [], [], []
        for g in self.gpu:
            last = max(g["gpu_end_ns"], g["launch_ns"] + g["call_ns"])
            if g["launch_ns"] > hi or last < lo:
                continue
            launches.append((g["launch_ns"], g["call_ns"]))
            if g["gpu_start_ns"]:
                ops.append((g["gpu_start_ns"], g["gpu_end_ns"] - g["gpu_start_ns"], g["name_text"]))
        for s in self.syncs:
            if s["start_ns"] <= hi and s["start_ns"] + s["dur_ns"] >= lo:
                syncs.append((s["start_ns"], s["dur_ns"]))
        return sorted(ops), sorted(launches), sorted(syncs)

    def n_events(self):
        """GPU ops and host waits in the whole file (what the lanes count)."""
        return sum(1 for g in self.gpu if g["gpu_start_ns"]) + len(self.syncs)


def load_job(d):
    """{rank: Proc}, the job's first and last time."""
    procs = {}
    for f in trace_files(d):
        p = Proc(f)
        procs[p.rank] = p
    return procs, min(p.first for p in procs.values()), max(p.last for p in procs.values())


def ns(v):
    return int(Decimal(v) * 1000)


def g6(v):
    """How far a number report.json prints (printf's %.6g) may be from its value."""
    return 0.0 if v == 0 else 0.5 * 10 ** (math.floor(math.log10(abs(v))) - 5) * 1.0001


def read_trace(path):
    """{pid: (ops, launches, syncs)} of a Perfetto export, as in Proc.expected,
    the process list of its "ringside" header and its process names."""
    with open(path) as f:
        d = json.load(f, parse_float=Decimal)
    out, names = {}, {}
    for e in d["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            names[e["pid"]] = e["args"]["name"]
        if e.get("ph") != "X":
            continue
        ops, launches, syncs = out.setdefault(e["pid"], ([], [], []))
        if e["cat"] in OP_CATS:
            ops.append((ns(e["ts"]), ns(e["dur"]), e["name"]))
        elif e["cat"] == "cuda_runtime" and e["name"] in SYNC_CALLS:
            syncs.append((ns(e["ts"]), ns(e["dur"])))
        elif e["cat"] == "cuda_runtime":
            launches.append((ns(e["ts"]), ns(e["dur"])))
    for v in out.values():
        for x in v:
            x.sort()
    return out, [p["pid"] for p in d["ringside"]["processes"]], names


def compare(name, got, procs, ranks, lo=None, hi=None):
    """The export's events of each rank against its file's in [lo, hi]."""
    problems = []
    for r in ranks:
        want = procs[r].expected(lo, hi)
        have = got.get(r, ([], [], []))
        for what, w, h in zip(("GPU ops", "launch calls", "host waits"), want, have):
            if w != h:
                diff = sorted(set(w) ^ set(h))[:2]
                problems.append("rank %d: %d %s, the file has %d in the window (first differences %r)" %
                                (r, len(h), what, len(w), diff))
    extra = sorted(set(got) - set(ranks))
    if extra:
        problems.append("processes not asked for: %r" % extra)
    return report_problems(name, problems)


def export(d, out, *args):
    p = run([RINGSIDE, "export", "perfetto", d, "-o", out] + list(args))
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def export_checks(work, d, procs, start, end):
    out = os.path.join(work, "out.json")
    # the whole job, every process
    rc, so, se = export(d, out)
    if check("export whole job exits 0", rc == 0, se[-300:]):
        got, pids, names = read_trace(out)
        check("export whole job: its processes, by rank", pids == sorted(procs), "%r" % pids)
        check("export whole job: process names", names == {r: "rank %d" % r for r in procs}, "%r" % names)
        compare("export whole job: every op, launch and wait of every file", got, procs, sorted(procs))
        n = sum(p.n_events() for p in procs.values())
        want = "ringside: %s: %d processes, %d GPU ops and syncs, 0.000 s to %.3f s of the job" % (
            out, len(procs), n, (end - start) / 1e9)
        check("export whole job: its summary line", so.strip() == want, "%r, want %r" % (so.strip(), want))
    if os.path.exists(out):
        os.unlink(out)
    # --ranks
    for arg, ranks in (("1", [1]), ("0,2", [0, 2]), ("2-2,0", [0, 2]), ("0-2", [0, 1, 2])):
        rc, so, se = export(d, out, "--ranks", arg, "-q")
        if check("export --ranks %s exits 0" % arg, rc == 0 and so == "", se[-300:] + so[-300:]):
            got, pids, _ = read_trace(out)
            check("export --ranks %s: those processes" % arg, pids == ranks, "%r" % pids)
            compare("export --ranks %s: their events" % arg, got, procs, ranks)
    # --from / --to: seconds from the job's first time, as the reporter
    # computes them (a double times 1e9, truncated)
    for args, f, t in ((["--from", "0.05", "--to", "0.15"], 0.05, 0.15), (["--from", "0.2"], 0.2, None),
                       (["--to", "0.0313"], None, 0.0313), (["--ranks", "1", "--from", "0.1", "--to", "0.1012"],
                                                            0.1, 0.1012)):
        label = " ".join(args)
        lo = start + int(f * 1e9) if f is not None else start
        hi = start + int(t * 1e9) if t is not None else end
        ranks = [1] if "--ranks" in args else sorted(procs)
        rc, so, se = export(d, out, *args)
        if not check("export %s exits 0" % label, rc == 0, se[-300:]):
            continue
        got, pids, _ = read_trace(out)
        check("export %s: its processes" % label, pids == ranks, "%r" % pids)
        kept = sum(len(procs[r].expected(lo, hi)[0]) for r in ranks)
        every = sum(len(procs[r].expected()[0]) for r in ranks)
        if check("export %s: a window that leaves some out" % label, 0 < kept < every, "%d of %d" % (kept, every)):
            compare("export %s: the events in the window" % label, got, procs, ranks, lo, hi)
        n = sum(len(procs[r].expected(lo, hi)[0]) + len(procs[r].expected(lo, hi)[2]) for r in ranks)
        want = "ringside: %s: %d process%s, %d GPU ops and syncs, %.3f s to %.3f s of the job" % (
            out, len(ranks), "" if len(ranks) == 1 else "es", n, (lo - start) / 1e9, (hi - start) / 1e9)
        check("export %s: its summary line" % label, so.strip() == want, "%r, want %r" % (so.strip(), want))
    if os.path.exists(out):
        os.unlink(out)


def usage_checks(work, d):
    out = os.path.join(work, "usage.json")
    cases = [
        (["export"], "export knows one format"),
        (["export", "json", d, "-o", out], "export knows one format"),
        (["export", "perfetto", "-o", out], "export perfetto needs a trace folder"),
        (["export", "perfetto", d], "export perfetto needs -o FILE"),
        (["export", "perfetto", d, "-o"], "unknown option or missing value: -o"),
        (["export", "perfetto", d, "-o", out, "--bogus"], "unknown option or missing value: --bogus"),
        (["export", "perfetto", d, "-o", out, "--from", "0.2", "--to", "0.1"], "--to must come after --from"),
        (["export", "perfetto", d, "-o", out, "--from", "0.1", "--to", "0.1"], "--to must come after --from"),
        (["export", "perfetto", d, "-o", out, "--from", "-1"], "--from and --to take seconds from the job's start"),
        (["export", "perfetto", d, "-o", out, "--to", "1s"], "--from and --to take seconds from the job's start"),
        (["export", "perfetto", d, "-o", out, "--ranks", "x"], "--ranks needs a list of ranks such as 0,3,8-9"),
        (["export", "perfetto", d, "-o", out, "--ranks", "3-1"], "--ranks needs a list of ranks such as 0,3,8-9"),
        (["export", "perfetto", d, "-o", out, "--ranks", "0-64"], "(at most 64)"),
        (["report", d, "-o", os.path.join(work, "usage-report"), "--ranks", "0-8"], "(at most 8)"),
        (["report", d, "-o", os.path.join(work, "usage-report"), "--ranks", "1,,x"],
         "--ranks needs a list of ranks such as 0,3,8-9"),
    ]
    problems = []
    for args, msg in cases:
        p = run([RINGSIDE] + args)
        err = p.stderr.decode(errors="replace")
        if p.returncode != 2 or ("ringside: " not in err or msg not in err):
            problems.append("%s: exit %d, stderr %r (want 2 and %r)" % (" ".join(args), p.returncode, err[:200], msg))
        if os.path.exists(out) or os.path.exists(os.path.join(work, "usage-report")):
            problems.append("%s: wrote its output anyway" % " ".join(args))
            cleanup(os.path.join(work, "usage-report"))
            if os.path.exists(out):
                os.unlink(out)
    report_problems("export usage errors exit 2 with their message and write nothing", problems)
    helps = []
    for args in (["report", d, "--help"], ["export", "perfetto", "--help"], ["flame", "--help"],
                 ["import-kineto", "--help"], ["--help"]):
        p = run([RINGSIDE] + args)
        if p.returncode != 0 or not p.stdout.startswith(b"usage: ringside") or p.stderr:
            helps.append("%s: exit %d, stdout %r, stderr %r" % (" ".join(args), p.returncode, p.stdout[:40],
                                                               p.stderr[:100]))
    report_problems("--help after any command prints the usage on stdout, exit 0", helps)
    rc, so, se = export(d, out, "--ranks", "7")
    check("export --ranks of a rank not in the job exits 1",
          rc == 1 and "ringside: export: none of the ranks asked for is in " + d in se and not os.path.exists(out),
          "exit %d, stderr %r, output written: %s" % (rc, se[:300], os.path.exists(out)))


def limit_checks(work):
    d = gen(work, "job65", EXPORT_MAX + 1, 40)
    if not d:
        return
    out = os.path.join(work, "limit.json")
    rc, so, se = export(d, out)
    check("export of 65 processes without --ranks exits 2, names the limit and writes nothing",
          rc == 2 and "ringside: export: more than 64 processes: choose ranks with --ranks" in se and
          not os.path.exists(out), "exit %d, stderr %r" % (rc, se[:300]))
    procs, start, end = load_job(d)
    rc, so, se = export(d, out, "--ranks", "1-64", "-q")
    if check("export --ranks 1-64 of 65 processes exits 0", rc == 0, se[-300:]):
        got, pids, _ = read_trace(out)
        check("export --ranks 1-64: 64 processes, ranks 1 to 64", pids == list(range(1, 65)), "%r" % pids)
        compare("export --ranks 1-64: their events", got, procs, list(range(1, 65)))


def lanes_of(rep):
    return [(x["rank"], x["why"]) for x in rep["lanes"]["ranks"]]


def report_dir(work, name, d, *args):
    """ringside report -o into work/name: (report.json, trace path) or None."""
    out = os.path.join(work, name)
    p = run([RINGSIDE, "report", d, "-o", out, "-q"] + list(args), timeout=300)
    if not check("lanes %s: report exits 0" % name, p.returncode == 0, p.stderr.decode()[-300:]):
        return None
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f), os.path.join(out, "trace.json")


def lanes_whole_checks(name, rep, trace, procs, start, end):
    """A whole-job lanes key and trace.json against the files."""
    lanes = rep["lanes"]
    ranks = [r for r, _ in lanes_of(rep)]
    got, pids, _ = read_trace(trace)
    check("lanes %s: trace.json holds exactly the lanes' processes" % name, sorted(pids) == sorted(ranks),
          "trace.json %r, lanes %r" % (pids, ranks))
    compare("lanes %s: trace.json holds every op, launch and wait of the lanes" % name, got, procs, sorted(ranks))
    n = sum(procs[r].n_events() for r in ranks)
    check("lanes %s: the whole job, its events counted" % name,
          lanes["whole_job"] is True and lanes["events_in_job"] == n and lanes["events_in_window"] == n and
          lanes["from_s"] == 0 and abs(lanes["to_s"] - (end - start) / 1e9) <= g6((end - start) / 1e9),
          "%r; the files: %d events over %.7f s" % ({k: v for k, v in lanes.items() if k != "ranks"}, n,
                                                    (end - start) / 1e9))
    check("lanes %s: the files and the export command for the rest" % name,
          lanes["perfetto"] == "trace.pftrace" and lanes["kineto"] == "trace.json" and
          lanes["export"].startswith("ringside export perfetto "), "%r" % lanes)


def lanes_checks(work, d3, procs3, start3, end3):
    # a small job: every process, "all"
    r = report_dir(work, "small", d3)
    if r:
        rep, trace = r
        check("lanes small: every process, why all", lanes_of(rep) == [(k, "all") for k in sorted(procs3)],
              "%r" % lanes_of(rep))
        lanes_whole_checks("small", rep, trace, procs3, start3, end3)
    r = report_dir(work, "small-chosen", d3, "--ranks", "1")
    if r:
        rep, trace = r
        lanes = lanes_of(rep)
        check("lanes small --ranks 1: rank 1 first, why chosen, no process twice",
              lanes[:1] == [(1, "chosen")] and len(set(x for x, _ in lanes)) == len(lanes) and
              all(w != "chosen" for _, w in lanes[1:]), "%r" % lanes)
        lanes_whole_checks("small --ranks 1", rep, trace, procs3, start3, end3)
    # ten processes: at most 8
    d = gen(work, "job10", 10, 2000)
    if not d:
        return
    procs, start, end = load_job(d)
    r = report_dir(work, "ten", d)
    if r:
        rep, trace = r
        lanes = lanes_of(rep)
        whys = {"straggler", "slowest", "fastest", "first"}
        check("lanes ten: at most 8, each once, each with its reason, rank 0 (the first) among them",
              1 <= len(lanes) <= LANES_MAX and len(set(x for x, _ in lanes)) == len(lanes) and
              all(w in whys for _, w in lanes) and 0 in [x for x, _ in lanes] and
              [x for x, w in lanes if w == "first"] in ([0], []), "%r" % lanes)
        lanes_whole_checks("ten", rep, trace, procs, start, end)
    for arg, want in (("5", [5]), ("3,7,9", [3, 7, 9]), ("0-7", list(range(8)))):
        r = report_dir(work, "ten-" + arg, d, "--ranks", arg)
        if not r:
            continue
        rep, trace = r
        lanes = lanes_of(rep)
        check("lanes ten --ranks %s: those first, why chosen; at most 8" % arg,
              lanes[:len(want)] == [(x, "chosen") for x in want] and len(lanes) <= LANES_MAX and
              len(set(x for x, _ in lanes)) == len(lanes), "%r" % lanes)
        if len(want) == LANES_MAX:
            check("lanes ten --ranks %s: only those" % arg, len(lanes) == LANES_MAX, "%r" % lanes)
        lanes_whole_checks("ten --ranks " + arg, rep, trace, procs, start, end)


def lanes_window_checks(work):
    """Two ranks of 140,000 records: more GPU ops and waits than the lanes
    hold, so a stretch in the middle of the job, with no more than that."""
    d = gen(work, "big", 2, 140000)
    if not d:
        return
    procs, start, end = load_job(d)
    r = report_dir(work, "big", d)
    if not r:
        return
    rep, trace = r
    lanes = rep["lanes"]
    n = sum(p.n_events() for p in procs.values())
    wall = (end - start) / 1e9
    check("lanes big: both processes, a stretch of the job", lanes_of(rep) == [(0, "all"), (1, "all")] and
          lanes["whole_job"] is False and lanes["events_in_job"] == n,
          "%r; the files hold %d events" % ({k: v for k, v in lanes.items() if k != "export"}, n))
    f, t = lanes["from_s"], lanes["to_s"]
    # as long as fits: the budget's share of the job, shrunk where the
    # records that straddle its ends would take it over the budget
    share = wall * LANES_EVENTS / n
    check("lanes big: the stretch is in the middle, 80-100% of the budget's share of the job",
          0 < f < t < wall and abs((f + t) / 2 - wall / 2) <= g6(f) + g6(t) + 1e-9 and
          0.8 * share <= (t - f) <= share + g6(f) + g6(t) + 1e-9, "from %r to %r of %.6f s (share %.6f s)" %
          (f, t, wall, share))
    check("lanes big: no more events than the lanes hold (%d)" % LANES_EVENTS,
          lanes["events_in_window"] <= LANES_EVENTS, "events_in_window %d" % lanes["events_in_window"])
    # from_s and to_s are printed to 6 digits: records that near either
    # end may fall either way
    lo, hi = start + int(f * 1e9), start + int(t * 1e9)
    ef, et = int(g6(f) * 1e9) + 1, int(g6(t) * 1e9) + 1
    sure = sum(len(e[0]) + len(e[2]) for e in (p.expected(lo + ef, hi - et) for p in procs.values()))
    maybe = sum(len(e[0]) + len(e[2]) for e in (p.expected(lo - ef, hi + et) for p in procs.values()))
    check("lanes big: events_in_window counts the files' records in the stretch",
          sure <= lanes["events_in_window"] <= maybe,
          "%d; the files hold %d to %d" % (lanes["events_in_window"], sure, maybe))
    got, pids, _ = read_trace(trace)
    held = sum(len(v[0]) + len(v[2]) for v in got.values())
    check("lanes big: trace.json holds the lanes' processes and the window's events",
          sorted(pids) == [0, 1] and held == lanes["events_in_window"],
          "pids %r, %d ops and waits, events_in_window %d" % (pids, held, lanes["events_in_window"]))
    # the report's Perfetto trace: the same processes and stretch (its GPU
    # work, decoded by protoc against Perfetto's schema)
    if not shutil.which("protoc") or not os.path.exists(os.path.join(pftrace.SCHEMA, pftrace.PROTO)):
        skip("lanes big: trace.pftrace", "protoc or Perfetto's schema is missing")
        return
    packets, rc, err = pftrace.decode(os.path.join(os.path.dirname(trace), "trace.pftrace"))
    if not check("lanes big: trace.pftrace decodes", rc == 0, err[-300:]):
        return
    tr = pftrace.Trace(packets)
    ranks = sorted(pftrace.rank_of(pftrace.one(d["process"][0], "process_name")) for d in tr.tracks.values()
                   if "process" in d)
    ops = [x for x in tr.slices if x["cat"] in ("kernel", "gpu_memcpy", "gpu_memset")]
    # a GPU slice where its time on the GPU overlaps the stretch
    def gpu_in(a, b):
        return sum(1 for p in procs.values() for g in p.gpu
                   if g["gpu_start_ns"] and g["gpu_start_ns"] <= b and g["gpu_end_ns"] >= a)
    sure_ops, maybe_ops = gpu_in(lo + ef, hi - et), gpu_in(lo - ef, hi + et)
    check("lanes big: trace.pftrace holds the lanes' processes and the stretch's GPU work, no more",
          ranks == [0, 1] and sure_ops <= len(ops) <= maybe_ops,
          "ranks %r, %d GPU ops; the files hold %d to %d in the stretch" % (ranks, len(ops), sure_ops, maybe_ops))


def main():
    if not os.path.exists(GEN_JOB) or not os.path.exists(RINGSIDE):
        skip("export perfetto", GEN_JOB + " or ringside is missing (make test-build)")
        finish()
    work = tempdir("export")
    try:
        d3 = gen(work, "job3", 3, 3000)
        if d3:
            procs, start, end = load_job(d3)
            export_checks(work, d3, procs, start, end)
            usage_checks(work, d3)
            lanes_checks(work, d3, procs, start, end)
        limit_checks(work)
        lanes_window_checks(work)
    finally:
        cleanup(work)
    finish()


if __name__ == "__main__":
    main()
