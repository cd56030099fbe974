#!/usr/bin/env python3
"""The checks of `make gpu-check` (docs/testing.md; tests/gpu/gpu-check.sh builds and calls this):
runs the real-GPU workload (tests/gpu/workload.cu) under the agent, then `ringside dump`
on its trace and `ringside report` on the job, and holds both against the truth file the
workload wrote (its launches' geometry and cudaEvent times, its copies, its all-reduce):
every launch recorded, GPU times, copies, the all-reduce, and each kernel's geometry
figures and the process's SM activity in report.json. Prints "ok - ..." / "not ok - ..."
per check and a summary line; exit status 1 on any failure. Standard library only.

    check.py --build BUILD --workload EXE --run DIR [--nccl-build-failed]
    check.py --build BUILD --run DIR

DIR (emptied first) keeps the truth, the trace, the dumps and the report for a look after.
Without --workload, the truth and trace already in DIR are checked (a run made on a GPU
machine, checked where the reporter is built), the dumps and report going to a new
temporary folder.
Whether the workload has NCCL, it says itself (its device line); --nccl-build-failed:
NCCL was found but the workload would not build with it, which counts as a failure."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

TIME_REL, TIME_ABS_US = 0.05, 20.0      # GPU times: within 5%, or 20 us for short ones
PCT_POINTS = 1.0                        # geometry figures: within 1 percentage point
ACTIVITY_POINTS = {"geometry": 3.0, "nvml-gpm": 10.0}
GPU_KEYS = ("busy_pct", "sm_activity_pct", "sm_activity_source", "no_geometry_pct")
KERNEL_KEYS = ("blocks", "threads_per_block", "waves", "sm_coverage_pct", "occupancy_pct")

results = {"ok": 0, "not ok": 0, "skip": 0}


def check(cond, what, why=""):
    """One result line; True when cond holds."""
    word = "ok" if cond else "not ok"
    results[word] += 1
    print("%s - %s%s" % (word, what, "" if cond or not why else ": " + why), flush=True)
    return bool(cond)


def skip(what, why):
    results["skip"] += 1
    print("skip - %s: %s" % (what, why), flush=True)


def note(text):
    print("# " + text, flush=True)


def finish():
    print("gpu-check: %d ok, %d not ok, %d skipped" % (results["ok"], results["not ok"], results["skip"]),
          flush=True)
    sys.exit(1 if results["not ok"] else 0)


def close(got, want, rel=TIME_REL, abs_=TIME_ABS_US):
    return abs(got - want) <= max(rel * abs(want), abs_)


def run(cmd, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, timeout=kw.pop("timeout", 300), **kw)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(cmd, -1, b"", str(e).encode())


def tail(b, n=5):
    return " | ".join(b.decode(errors="replace").strip().splitlines()[-n:])


def read_truth(path):
    truth = {"device": None, "kernels": [], "copies": [], "allreduce": None, "end": None}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            t = r.get("type")
            if t == "kernel":
                truth["kernels"].append(r)
            elif t == "copy":
                truth["copies"].append(r)
            elif t in truth:
                truth[t] = r
    return truth


def run_workload(args, run_dir, truth_path):
    """Runs the workload under the agent into run_dir; the truth, or None when it failed."""
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "SLURM_PROCID", "SLURM_JOB_ID",
              "OMPI_COMM_WORLD_RANK", "PMI_RANK", "RINGSIDE_RANK", "RINGSIDE_JOB", "RINGSIDE_DISABLE"):
        env.pop(k, None)
    env["LD_PRELOAD"] = os.path.abspath(os.path.join(args.build, "libagent.so"))
    env["RINGSIDE_OUT"] = os.path.join(run_dir, "trace")
    p = run([os.path.abspath(args.workload), truth_path], env=env, timeout=120)
    for line in (p.stdout + p.stderr).decode(errors="replace").splitlines():
        note(line)
    if not check(p.returncode == 0, "the workload ran under the agent",
                 "exit status %d: %s" % (p.returncode, tail(p.stderr))):
        if b"InsufficientDriver" in p.stderr:
            note("the driver is older than the CUDA runtime the workload was built with: build it with "
                 "a toolkit no newer than nvidia-smi's \"CUDA Version\" (CUDA_HOME=...)")
        return None
    return load_truth(truth_path)


def load_truth(truth_path):
    """The workload's truth file, checked whole; None when it is not."""
    try:
        truth = read_truth(truth_path)
    except (OSError, ValueError) as e:
        check(False, "the workload's truth file reads", str(e))
        return None
    if not check(truth["device"] and truth["end"], "the workload's truth file is whole",
                 "no device or end line in %s" % truth_path):
        return None
    d = truth["device"]
    note("device: %s (compute capability %s), %d SMs, %d MHz peak, %d threads per SM; runtime %d, "
         "driver %d" % (d["name"], d["cc"], d["sms"], d["clock_khz"] // 1000, d["max_threads_per_sm"],
                        d["runtime_version"], d["driver_version"]))
    return truth


def dump_records(args, trace_dir, out_dir):
    """Every record of every trace file under trace_dir, or None; each file's dump is
    kept in out_dir."""
    files = sorted(os.path.join(b, f) for b, _, fs in os.walk(trace_dir) for f in fs
                   if f.endswith(".trace.lz4"))
    if not check(files, "the agent wrote a trace file", "none under %s" % trace_dir):
        return None
    recs = []
    for path in files:
        p = run([os.path.join(args.build, "ringside"), "dump", path])
        with open(os.path.join(out_dir, os.path.basename(path)[:-len(".trace.lz4")] + ".dump.jsonl"), "wb") as f:
            f.write(p.stdout)
        check(p.returncode == 0, "ringside dump %s" % os.path.basename(path),
              "exit status %d: %s" % (p.returncode, tail(p.stderr)))
        for line in p.stdout.decode(errors="replace").splitlines():
            try:
                recs.append(json.loads(line))
            except ValueError:
                check(False, "ringside dump writes JSON lines", line[:200])
                break
    return recs


def by_name(items, key):
    out = {}
    for it in items:
        out.setdefault(it.get(key), []).append(it)
    return out


def gpu_ns(r):
    """A dump record's GPU time in ns, or None when it was not timed."""
    s, e = r.get("gpu_start_ns") or 0, r.get("gpu_end_ns") or 0
    return e - s if s and e >= s else None


def check_times(what, recs, truths):
    """The i-th record against the i-th truth (both in launch order): GPU time against
    the cudaEvent time, and start against the workload's event start (their offsets
    must agree within TIME_ABS_US of their median: the agent's host-clock mapping).
    The workload's events are recorded around its launch: on an idle stream they hold
    the launch call's own time too, which the agent takes out (preload/writer.c), so
    the agent's time may be shorter, and its start later, by up to that call.
    Returns [(offset us, the call's us)]."""
    bad, untimed, offsets = [], 0, []
    for r, t in zip(recs, truths):
        if t["event_ms"] is None:
            continue
        got = gpu_ns(r)
        if got is None:
            untimed += 1
            continue
        want_us, got_us, call_us = t["event_ms"] * 1e3, got / 1e3, r.get("call_ns", 0) / 1e3
        if not (close(got_us, want_us) or close(got_us + max(0.0, min(call_us, want_us - got_us)), want_us)):
            bad.append("%.1f us recorded, %.1f us by cudaEvents (the call %.1f us)" % (got_us, want_us, call_us))
        offsets.append((r["gpu_start_ns"] / 1e3 - t["start_ms"] * 1e3, call_us))
    timed = sum(t["event_ms"] is not None for t in truths)
    check(not untimed, "%s: each one the workload timed has a GPU time" % what,
          "%d of %d without" % (untimed, timed))
    check(not bad, "%s: GPU times within %d%% or %d us of the workload's cudaEvents"
          % (what, TIME_REL * 100, TIME_ABS_US), "%d of %d off, e.g. %s" % (len(bad), timed, bad[:3]))
    return offsets


def check_trace(truth, recs, nccl_build_failed):
    gpu = [r for r in recs if r.get("type") == "gpu"]
    kernels = by_name(sorted((r for r in gpu if r.get("kind") == "kernel"), key=lambda r: r["launch_ns"]),
                      "name_text")
    offsets = []
    for name, want in sorted(by_name(truth["kernels"], "name").items()):
        got = kernels.get(name, [])
        if check(len(got) == len(want), "%s: all %d launches recorded" % (name, len(want)),
                 "%d kernel records" % len(got)):
            offsets += check_times(name, got, want)
    others = sorted(set(kernels) - set(k["name"] for k in truth["kernels"]))
    if others:
        note("other kernels in the trace: %s" % ", ".join("%s x%d" % (n, len(kernels[n])) for n in others))

    copies = sorted((r for r in gpu if r.get("kind") == "memcpy"), key=lambda r: r["launch_ns"])
    for t in truth["copies"]:
        got = [r for r in copies if r.get("dir") == t["dir"] and r.get("bytes") == t["bytes"]]
        what = "copy %s of %d bytes" % (t["dir"], t["bytes"])
        if check(len(got) == 1, what + ": recorded once", "%d records (copies recorded: %s)" % (
                 len(got), sorted(set((r.get("dir"), r.get("bytes")) for r in copies))[:8])):
            offsets += check_times(what, got, [t])

    if offsets:
        mid = sorted(o for o, _ in offsets)[len(offsets) // 2]
        off = [o - mid for o, c in offsets if not -TIME_ABS_US <= o - mid <= c + TIME_ABS_US]
        check(not off, "GPU start times keep the workload's spacing (within %d us, and later by at most "
              "the launch call)" % TIME_ABS_US, "%d of %d starts off by up to %.1f us" % (
                  len(off), len(offsets), max((abs(o) for o in off), default=0)))

    side = set(r["stream"] for r in kernels.get("spin_side", []))
    main = set(r["stream"] for r in kernels.get("spin_quarter", []))
    check(side and main and not side & main, "the second stream's kernels are on a stream of their own",
          "spin_side on %s, spin_quarter on %s" % (sorted(side), sorted(main)))

    if nccl_build_failed:
        check(False, "the workload made a one-rank all-reduce",
              "NCCL was found but the workload did not build with it (see the nvcc output above)")
        return
    if not truth["device"]["nccl"]:
        skip("one-rank all-reduce", "the workload was built without NCCL (not found)")
        return
    if not check(truth["allreduce"], "the workload made a one-rank all-reduce",
                 "no allreduce line in the truth file"):
        return
    a = truth["allreduce"]
    colls = [r for r in recs if r.get("type") == "coll" and r.get("op") == "allreduce"]
    check(len(colls) == 1 and colls[0].get("bytes") == a["bytes"] and colls[0].get("count") == a["count"],
          "all-reduce recorded once with %d bytes (%d floats)" % (a["bytes"], a["count"]),
          "allreduce records: %s" % [(r.get("count"), r.get("bytes")) for r in colls])
    inits = [r for r in recs if r.get("type") == "comm" and r.get("kind") == "init_all"]
    check(len(inits) == 1 and inits[0].get("nranks") == 1, "ncclCommInitAll recorded (1 rank)",
          "init_all records: %s" % [(r.get("nranks"), r.get("rank")) for r in inits])


def expected_geometry(t):
    """What the report must say of a kernel, from the workload's own figures: blocks and
    threads per launch, waves (blocks over what the SMs hold at once, as a fraction or
    whole waves), SM coverage (SMs holding a block, averaged over the waves, blocks
    spread over the SMs before any SM takes a second) and theoretical occupancy (the
    runtime's occupancy calculator's blocks per SM, in warps of the SM's maximum)."""
    blocks = t["grid"][0] * t["grid"][1] * t["grid"][2]
    threads = t["block"][0] * t["block"][1] * t["block"][2]
    sms, bps = t["sms"], t["blocks_per_sm"]
    per_wave = bps * sms
    full, rest = divmod(blocks, per_wave)
    waves = full + (1 if rest else 0)
    coverage = (full * 100.0 + (100.0 * min(rest, sms) / sms if rest else 0)) / waves
    occupancy = 100.0 * bps * math.ceil(threads / 32) * 32 / t["max_threads_per_sm"]
    return {"blocks": blocks, "threads_per_block": threads, "waves": (blocks / per_wave, waves),
            "sm_coverage_pct": coverage, "occupancy_pct": occupancy}


def expected_activity(truth):
    """SM activity over busy time, in percent, from the workload's own event times and
    geometry: at each moment the running kernels' SM coverage summed and capped at 100,
    integrated, over the time any of them runs."""
    edges = []
    for t in truth["kernels"]:
        if t["start_ms"] is not None:
            cov = expected_geometry(t)["sm_coverage_pct"]
            edges += [(t["start_ms"], cov), (t["end_ms"], -cov)]
    edges.sort()
    busy = active = level = 0.0
    running, prev = 0, None
    for at, delta in edges:
        if prev is not None and running:
            busy += at - prev
            active += (at - prev) * min(100.0, level)
        level += delta
        running += 1 if delta > 0 else -1
        prev = at
    return (active / busy if busy else None), busy


def kernel_union_us(recs):
    """The time any kernel of the trace runs, in us."""
    spans = sorted((r["gpu_start_ns"], r["gpu_end_ns"]) for r in recs
                   if r.get("type") == "gpu" and r.get("kind") == "kernel" and gpu_ns(r))
    total, end = 0, None
    for s, e in spans:
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total / 1e3


def load_report(args, trace_dir, out_dir):
    """`ringside report` of the job into out_dir/report; report.json as a dict, or None."""
    out = os.path.join(out_dir, "report")
    p = run([os.path.join(args.build, "ringside"), "report", trace_dir, "-o", out])
    if not check(p.returncode == 0, "ringside report", "exit status %d: %s" % (p.returncode, tail(p.stderr))):
        return None
    try:
        with open(os.path.join(out, "report.json")) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        check(False, "report.json reads", str(e))
        return None


def check_report(rep, truth, recs):
    pid = truth["device"]["pid"]
    procs = [q for q in rep.get("processes", []) if q.get("pid") == pid]
    if not check(len(procs) == 1, "report.json has the workload's process (pid %d)" % pid,
                 "pids in the report: %s" % [q.get("pid") for q in rep.get("processes", [])]):
        return
    proc = procs[0]
    kernels = {k.get("name"): k for k in proc.get("kernels", [])}

    for name, want in sorted(by_name(truth["kernels"], "name").items()):
        k = kernels.get(name)
        if not check(k, "report: kernel %s listed" % name, "kernels listed: %s" % sorted(kernels)[:10]):
            continue
        event_us = sum(t["event_ms"] for t in want if t["event_ms"] is not None) * 1e3
        check(k.get("count") == len(want) and close(k.get("total_us", -1), event_us, abs_=TIME_ABS_US * len(want)),
              "report: %s count %d, total %.0f us (cudaEvents)" % (name, len(want), event_us),
              "count %s, total_us %s" % (k.get("count"), k.get("total_us")))
        missing = [key for key in KERNEL_KEYS if key not in k]
        if not check(not missing, "report: %s has launch geometry (%s)" % (name, ", ".join(KERNEL_KEYS)),
                     "report.json lacks %s (launch geometry: docs/agent.md)" % ", ".join(missing)):
            continue
        geo = expected_geometry(want[-1])
        probs = []
        for key in ("blocks", "threads_per_block"):
            if k[key] != geo[key]:
                probs.append("%s %s, not %s" % (key, k[key], geo[key]))
        frac, whole = geo["waves"]
        if not any(abs(k["waves"] - w) <= 0.01 * max(1, w) for w in (frac, whole)):
            probs.append("waves %s, not %.3f (or %d whole)" % (k["waves"], frac, whole))
        for key in ("sm_coverage_pct", "occupancy_pct"):
            if abs(k[key] - geo[key]) > PCT_POINTS:
                probs.append("%s %.2f, not %.2f" % (key, k[key], geo[key]))
        t = want[-1]
        check(not probs, "report: %s geometry: %d blocks of %d threads, %d per SM on %d SMs: coverage %.1f%%, "
              "occupancy %.1f%%" % (name, geo["blocks"], geo["threads_per_block"], t["blocks_per_sm"],
                                    t["sms"], geo["sm_coverage_pct"], geo["occupancy_pct"]), "; ".join(probs))

    a = truth["allreduce"]
    if a:
        colls = [c for c in rep.get("collectives", []) if c.get("op") == "AllReduce"]
        check(len(colls) == 1 and colls[0].get("bytes") == a["bytes"] and colls[0].get("count") == 1,
              "report: one AllReduce of %d bytes" % a["bytes"],
              "collectives: %s" % [(c.get("op"), c.get("bytes"), c.get("count")) for c in colls])

    gpu = proc.get("gpu", {})
    missing = [key for key in GPU_KEYS if key not in gpu]
    if not check(not missing, "report: processes[].gpu has %s" % ", ".join(GPU_KEYS),
                 "report.json lacks %s (launch geometry: docs/agent.md)" % ", ".join(missing)):
        return
    source = gpu["sm_activity_source"]
    note("report: busy %.1f%%, SM activity %.1f%% (%s), no geometry %.1f%% of busy time"
         % (gpu["busy_pct"], gpu["sm_activity_pct"], source, gpu["no_geometry_pct"]))
    if not check(source in ACTIVITY_POINTS, "report: sm_activity_source is geometry or nvml-gpm",
                 "it is %r" % source):
        return
    span = gpu.get("span_us")
    if span:
        busy = 100.0 * kernel_union_us(recs) / span
        check(abs(gpu["busy_pct"] - busy) <= 2.0,
              "report: busy_pct is the time any kernel runs (trace: %.1f%% of span_us)" % busy,
              "busy_pct %.2f" % gpu["busy_pct"])
    # Measured figures come with the geometry estimate beside them.
    figures = [("sm_activity_pct", source)]
    if source != "geometry" and "sm_activity_geometry_pct" in gpu:
        figures.append(("sm_activity_geometry_pct", "geometry"))
    want, busy_ms = expected_activity(truth)
    for key, src in figures:
        if want is None or gpu["busy_pct"] <= 0:
            break
        got = 100.0 * gpu[key] / gpu["busy_pct"]
        check(abs(got - want) <= ACTIVITY_POINTS[src],
              "report: %s / busy_pct within %g points of %.1f%% (%s; from the workload's events and "
              "geometry, %.1f ms of kernels)" % (key, ACTIVITY_POINTS[src], want, src, busy_ms),
              "%s / busy_pct = %.2f%%" % (key, got))
    check(gpu["no_geometry_pct"] <= 1.0, "report: every kernel has geometry (no_geometry_pct <= 1)",
          "no_geometry_pct %.2f" % gpu["no_geometry_pct"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--workload", help="run it under the agent (else: check the run in --run)")
    ap.add_argument("--nccl-build-failed", action="store_true")
    ap.add_argument("--run", required=True, help="folder of the truth, trace, dumps and report")
    args = ap.parse_args()
    truth_path, trace_dir = os.path.join(args.run, "truth.jsonl"), os.path.join(args.run, "trace")
    if args.workload:
        shutil.rmtree(args.run, ignore_errors=True)
        os.makedirs(args.run)
        out_dir = args.run
        truth = run_workload(args, args.run, truth_path)
    else:
        out_dir = tempfile.mkdtemp(prefix="gpu-check-")
        note("the run in %s; its dumps and report go to %s" % (args.run, out_dir))
        truth = load_truth(truth_path)
    if truth is None:
        finish()
    recs = dump_records(args, trace_dir, out_dir)
    if recs is not None:
        check_trace(truth, recs, args.nccl_build_failed)
        rep = load_report(args, trace_dir, out_dir)
        if rep is not None:
            check_report(rep, truth, recs)
    finish()


if __name__ == "__main__":
    main()
