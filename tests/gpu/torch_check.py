#!/usr/bin/env python3
"""The PyTorch checks of `make gpu-check` (docs/testing.md; tests/gpu/gpu-check.sh calls this after
tests/gpu/check.py): real PyTorch jobs on a real GPU under the agent, each figure held against a
truth ringside did not compute: Kineto's (CUPTI's) kernel records, the job's own losses and
clocks, the collectives the job itself issued. Parts (PARTS below; `--list` prints them):

  kineto    a bf16 training loop under the agent and torch.profiler at once: per kernel,
            ringside's GPU start and duration against Kineto's for the same launches
  losses    the same loop with and without the agent: losses bit-identical
  graph     the loop captured with torch.cuda.graph and replayed (under the profiler too):
            report.json's kernel table has the graph's kernels by name, with Kineto's counts
  overhead  a launch-bound loop and a GPU-bound one: wall-time ratios agent/none, profiler/none
  nccl      torchrun, one rank per GPU, NCCL collectives; again with non-blocking communicators
  memory    a loop keeping LEAK_MB a step (a leak) until PyTorch's OutOfMemoryError: the report's
            out-of-memory against the exception and torch.cuda's own figures

    torch_check.py --list
    torch_check.py --build BUILD --out DIR [--json FILE] [--parts a,b] [--budget S]
    torch_check.py --worker NAME ...       (run by the checks themselves)

Prints "ok - ..." / "not ok - ..." per check, "# NAME: ..." lines with each part's figures
(one line each, to copy into a note) and its duration, and a summary line; exit status 1 on
any failure. The figures also go to --json. The loading and matching code (kineto_kernels,
ringside_kernels, match_kernels) is standard library only, and so is everything that runs
before a worker starts: the workers alone import torch (guarded, so that Debian's CPU torch
loads this file for the tests, tests/integration/test_gpu_check.py)."""
import argparse
import collections
import ctypes
import ctypes.util
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

PARTS = (
    ("kineto", "PyTorch bf16 training loop (%d steps) under the agent and torch.profiler at once: "
               "per kernel, ringside's GPU start and duration against Kineto's for the same launches "
               "(counts equal; durations within 5%% or 5 us for 95%% of them, 2 us at the median)"),
    ("losses", "the same loop with and without the agent: losses bit-identical"),
    ("graph", "the loop captured with torch.cuda.graph and replayed: report.json's kernel table "
              "names the graph's kernels with Kineto's counts"),
    ("overhead", "a launch-bound loop (many tiny kernels) and a GPU-bound one: wall-time ratios "
                 "agent/none and torch.profiler/none, one run after the other"),
    ("memory", "a loop keeping %d MiB a step in leak_step until PyTorch raises OutOfMemoryError, under the "
               "agent: report.json's out-of-memory (bytes asked, the device's memory from torch.cuda.mem_get_info) "
               "and peak (torch.cuda.max_memory_reserved, within 1%%), the leak found, leak_step the heaviest "
               "stack of the memory flame graph"),
    ("nccl", "torchrun with NCCL, one rank per GPU: every collective the ranks issued with its "
             "bytes and a GPU time, communicators with their ranks; again with non-blocking "
             "communicators (TORCH_NCCL_USE_COMM_NONBLOCKING=1)"),
)

STEPS = 50                      # training steps of the kineto and losses parts
LEAK_MB = 2048                  # what the memory part's loop keeps a step
DUR_REL, DUR_ABS_US = 0.05, 5.0  # a kernel's duration: within 5%, or 5 us for short ones,
DUR_SHARE = 0.95                # for 95% of the kernels (event timing places a start from its
DUR_MEDIAN_US = 2.0             # start event: preload/writer.c), and within 2 us at the median
START_US = 20.0                 # a kernel's start, after the clocks are mapped (p99)
GPU_BOUND_MAX = 1.05            # the agent on a GPU-bound loop: at most 5% more wall time
NB_REL, NB_ABS_US = 0.25, 20.0  # non-blocking against blocking: a collective's median GPU time
REPORT_KERNELS = 30             # report.json lists a process's 30 heaviest kernel names
KINETO_MAX_SYMBOL = 8192        # Kineto leaves longer names mangled (libkineto Demangle.cpp)
BUDGET_S = 330                  # all the parts together (gpu-check.sh's whole run: 8 minutes)
WORKER_TIMEOUT_S = 120          # one worker process; torchrun's job:
NCCL_TIMEOUT_S = 90
deadline = 0.0                  # time.monotonic() when the budget is spent

results = {"ok": 0, "not ok": 0, "skip": 0}
figures = {}


def check(cond, what, why=""):
    word = "ok" if cond else "not ok"
    results[word] += 1
    print("%s - %s%s" % (word, what, "" if cond or not why else ": " + why), flush=True)
    return bool(cond)


def note(text):
    print("# " + text, flush=True)


def figure(part, line, **data):
    """A part's figures: one "# part: ..." line, and data into the JSON file."""
    note("%s: %s" % (part, line))
    figures.setdefault(part, {}).update(data, line=line)


# ---- names -------------------------------------------------------------------------------

_demangler = None


def demangle(name):
    """name as Kineto writes it: the C++ runtime's demangling (abi::__cxa_demangle, as
    libkineto's Demangle.cpp does), or name itself where it is not a mangled name."""
    global _demangler
    if not name.startswith("_Z") or len(name) > KINETO_MAX_SYMBOL:
        return name
    if _demangler is None:
        try:
            cxx = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
            libc = ctypes.CDLL(None)
            fn = cxx.__cxa_demangle
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            libc.free.argtypes = [ctypes.c_void_p]
            _demangler = (fn, libc.free)
        except (OSError, AttributeError):
            _demangler = False
    if not _demangler:
        return name
    fn, free = _demangler
    status = ctypes.c_int(0)
    p = fn(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not p:
        return name
    try:
        return ctypes.string_at(p).decode(errors="replace")
    finally:
        free(p)


def norm_name(name):
    """One spelling for a kernel name, whichever tool wrote it."""
    return demangle(name or "").strip()


# ---- loading -----------------------------------------------------------------------------

def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def kineto_kernels(trace):
    """The kernels of a Kineto (torch.profiler) trace, a path or its parsed JSON: dicts of
    name, device, stream, start_ns, dur_ns (ts and dur are microseconds, with three
    decimals), graph (CUPTI's graph id; -1 in a graph of a trace without them; 0 outside a
    graph) and correlation."""
    doc = load_json(trace) if isinstance(trace, str) else trace
    out = []
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    # CUPTI gives a graph's kernels the correlation id of the cudaGraphLaunch that ran them;
    # "graph id" is in Kineto's JSON only from 2026 on
    launches = set(e.get("args", {}).get("correlation") for e in events if isinstance(e, dict)
                   and e.get("cat") in ("cuda_runtime", "cuda_driver") and "GraphLaunch" in str(e.get("name")))
    for e in events:
        if not isinstance(e, dict) or e.get("cat") != "kernel" or e.get("ph") != "X":
            continue
        a = e.get("args") or {}
        out.append({"name": norm_name(e.get("name")), "device": a.get("device", e.get("pid")),
                    "stream": (a.get("device", e.get("pid")), a.get("stream", e.get("tid"))),
                    "start_ns": round(float(e["ts"]) * 1000), "dur_ns": round(float(e.get("dur", 0)) * 1000),
                    "graph": a.get("graph id", 0) or (-1 if a.get("correlation") in launches else 0),
                    "correlation": a.get("correlation")})
    return out


def ringside_kernels(records, pid=None, launched=None):
    """The kernel records of `ringside dump` lines (dicts) of one process (pid, where the
    dump holds several), launched within launched = (from_ns, to_ns) where given: dicts of
    name, device, stream, start_ns, dur_ns (None when not timed), launch_ns."""
    if pid is not None:
        metas = [r for r in records if r.get("type") == "meta"]
        if metas and all(m.get("pid") != pid for m in metas):
            return []
    out = []
    for r in records:
        if r.get("type") != "gpu" or r.get("kind") != "kernel":
            continue
        if launched and not launched[0] <= r.get("launch_ns", 0) <= launched[1]:
            continue
        s, e = r.get("gpu_start_ns") or 0, r.get("gpu_end_ns") or 0
        out.append({"name": norm_name(r.get("name_text")), "device": r.get("device"),
                    "stream": (r.get("device"), r.get("stream")), "start_ns": s if s else None,
                    "dur_ns": e - s if s and e >= s else None, "launch_ns": r.get("launch_ns", 0)})
    return out


def by_stream(kernels, key):
    out = {}
    for k in kernels:
        out.setdefault(k["stream"], []).append(k)
    for lst in out.values():
        lst.sort(key=lambda k: (k[key] is None, k[key] or 0))
    return out


def pair_streams(rs, kin):
    """[(ringside stream, Kineto stream)]: the two tools number streams differently, so each
    ringside stream goes with the Kineto stream that shares the most kernels by name."""
    left = dict(kin)
    pairs = []
    for s, lst in sorted(rs.items(), key=lambda x: -len(x[1])):
        names = collections.Counter(k["name"] for k in lst)
        best, score = None, -1
        for t, other in left.items():
            sc = sum((names & collections.Counter(k["name"] for k in other)).values())
            sc = (sc, -abs(len(other) - len(lst)))
            if best is None or sc > score:
                best, score = t, sc
        if best is not None and score[0] > 0:
            pairs.append((s, best))
            del left[best]
    return pairs


def align(a, b, window=64, run=3):
    """Index pairs (i, j) of equal names in two name sequences, in order. Where they part
    (a kernel one tool has and the other has not), the side that skips fewer names to agree
    again for `run` names running is skipped; with no such skip within `window`, one name
    of each."""
    pairs, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
            continue
        step = None
        for k in range(1, window + 1):
            if a[i + k:i + k + run] == b[j:j + run] and i + k < len(a):
                step = (k, 0)
            elif b[j + k:j + k + run] == a[i:i + run] and j + k < len(b):
                step = (0, k)
            if step:
                break
        i, j = (i + step[0], j + step[1]) if step else (i + 1, j + 1)
    return pairs


def percentile(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def match_kernels(rs, kin, rel=DUR_REL, abs_us=DUR_ABS_US):
    """Holds ringside's kernels (ringside_kernels) against Kineto's (kineto_kernels) of the
    same launches: streams paired by their kernels' names, kernels in order on each stream
    (a stream runs its kernels in launch order) matched by name; the clocks mapped by the
    median offset of the matched ends and the drift fitted over them (Kineto's clock less
    ringside's, in ppm). Returns a dict:
    counts (ringside, kineto), count_diff {name: (ringside, kineto)}, streams (pairs),
    pairs (matched), unmatched (ringside, kineto), untimed, dur_bad [(name, rs_us, kin_us)],
    dur_diff_us (median, p99, max |difference|), offset_ns, drift_ppm, start_us (p99, max
    |residual|)."""
    res = {"counts": (len(rs), len(kin)), "untimed": sum(k["dur_ns"] is None for k in rs)}
    cr = collections.Counter(k["name"] for k in rs)
    ck = collections.Counter(k["name"] for k in kin)
    res["count_diff"] = {n: (cr[n], ck[n]) for n in set(cr) | set(ck) if cr[n] != ck[n]}
    rss, kss = by_stream(rs, "start_ns"), by_stream(kin, "start_ns")
    streams = pair_streams(rss, kss)
    res["streams"] = [(str(a), str(b), len(rss[a]), len(kss[b])) for a, b in streams]
    pairs = []
    for a, b in streams:
        x, y = rss[a], kss[b]
        pairs += [(x[i], y[j]) for i, j in align([k["name"] for k in x], [k["name"] for k in y])]
    res["pairs"] = len(pairs)
    res["unmatched"] = (len(rs) - len(pairs), len(kin) - len(pairs))
    timed = [(r, k) for r, k in pairs if r["dur_ns"] is not None]
    bad, diffs = [], []
    for r, k in timed:
        d = abs(r["dur_ns"] - k["dur_ns"]) / 1e3
        diffs.append(d)
        if d > max(rel * k["dur_ns"] / 1e3, abs_us):
            bad.append((r["name"], r["dur_ns"] / 1e3, k["dur_ns"] / 1e3))
    res["dur_bad"] = bad
    res["dur_diff_us"] = (statistics.median(diffs) if diffs else 0.0, percentile(diffs, 99),
                          max(diffs) if diffs else 0.0)
    # The clocks are mapped by the kernels' ends: an end event runs as the kernel ends, while
    # a start is an estimate on an idle stream (the kernel is handed over after the start
    # event was recorded), which would bias the mapping.
    ends = [(r["start_ns"] + r["dur_ns"], k["start_ns"] + k["dur_ns"]) for r, k in timed]
    res["offset_ns"], res["drift_ppm"], res["start_us"] = 0, 0.0, (0.0, 0.0)
    if ends:
        offs = [(a, b - a) for a, b in ends]
        med = statistics.median(o for _, o in offs)
        t0 = offs[0][0]
        # least squares of the offsets on time, about the median: the two clocks' drift
        ts = [(t - t0) / 1e9 for t, _ in offs]
        ys = [o - med for _, o in offs]
        mt = sum(ts) / len(ts)
        var = sum((t - mt) ** 2 for t in ts)
        slope = sum((t - mt) * y for t, y in zip(ts, ys)) / var if var > 0 else 0.0
        my = sum(ys) / len(ys)
        resid = [abs(k["start_ns"] - r["start_ns"] - med - my - slope * (t - mt)) / 1e3
                 for (r, k), t in zip(timed, ts)]
        res["offset_ns"], res["drift_ppm"] = med, slope / 1e3
        res["start_us"] = (percentile(resid, 99), max(resid))
    return res


def match_line(m):
    """A match_kernels result in one line."""
    return ("%d kernels by ringside, %d by Kineto, %d matched on %d stream(s), %d untimed; durations: "
            "%d off by more than %g%% or %g us, |difference| median %.2f us, p99 %.2f us, max %.2f us; "
            "starts: clock offset %.3f ms, drift %.2f ppm, |residual| p99 %.2f us, max %.2f us"
            % (m["counts"][0], m["counts"][1], m["pairs"], len(m["streams"]), m["untimed"], len(m["dur_bad"]),
               DUR_REL * 100, DUR_ABS_US, m["dur_diff_us"][0], m["dur_diff_us"][1], m["dur_diff_us"][2],
               m["offset_ns"] / 1e6, m["drift_ppm"], m["start_us"][0], m["start_us"][1]))


def check_match(what, m):
    """The checks of one match_kernels result: counts equal (by name), every launch matched and
    timed, durations within DUR_REL or DUR_ABS_US for DUR_SHARE of them and within DUR_MEDIAN_US
    at the median, starts within START_US at the 99th percentile."""
    diff = sorted(m["count_diff"].items(), key=lambda x: -abs(x[1][0] - x[1][1]))
    ok = check(m["counts"][1] > 0 and m["counts"][0] == m["counts"][1] and not diff,
               "%s: kernel counts equal, name by name (%d)" % (what, m["counts"][1]), "ringside %d, Kineto %d; (ringside, Kineto) by name: %s"
               % (m["counts"][0], m["counts"][1], "; ".join("%s: %s" % (n[:80], c) for n, c in diff[:4])))
    ok &= check(m["unmatched"] == (0, 0), "%s: every kernel matched in stream order" % what,
                "%d of ringside's and %d of Kineto's left unmatched" % m["unmatched"])
    ok &= check(m["untimed"] == 0, "%s: every kernel has a GPU time" % what, "%d without" % m["untimed"])
    ok &= check(m["pairs"] and len(m["dur_bad"]) <= (1 - DUR_SHARE) * m["pairs"],
                "%s: GPU durations within %g%% or %g us of Kineto's for %g%% of the kernels"
                % (what, DUR_REL * 100, DUR_ABS_US, DUR_SHARE * 100), "%d of %d off, e.g. %s" % (
                    len(m["dur_bad"]), m["pairs"], "; ".join("%s %.2f us against %.2f us" % (n[:60], a, b)
                                                             for n, a, b in m["dur_bad"][:3])))
    ok &= check(m["pairs"] and m["dur_diff_us"][0] <= DUR_MEDIAN_US, "%s: GPU durations within %g us of "
                "Kineto's at the median" % (what, DUR_MEDIAN_US), "median |difference| %.2f us" % m["dur_diff_us"][0])
    ok &= check(m["pairs"] and m["start_us"][0] <= START_US, "%s: GPU starts within %g us of Kineto's for "
                "99%% of the kernels (clocks mapped by the kernels' ends and the drift)" % (what, START_US),
                "p99 residual %.2f us (largest %.2f us)" % m["start_us"])
    return ok


# ---- running things ----------------------------------------------------------------------

def run(cmd, env=None, timeout=120, cwd=None):
    """(exit status, stdout + stderr text); -1 when it could not run or ran out of time."""
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        return p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        out = e.output.decode(errors="replace") if e.output else ""
        return -1, out + "\n(killed after %d s)" % timeout
    except OSError as e:
        return -1, str(e)


def tail(text, n=6):
    """The last n lines of a program's output, in one line, led by the first Python error
    in it (a rank's own error comes before its launcher's)."""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip() and not set(l.strip()) <= set("=-")]
    err = next((l for l in lines if re.match(r"^[\w.]*(Error|Exception)\b.*:", l)), None)
    return " | ".join(([err, "..."] if err and err not in lines[-n:] else []) + lines[-n:])


def base_env(agent, out, **extra):
    """The environment of a worker: no launcher variables of our own caller, the agent
    preloaded when agent is set, its traces into out."""
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
              "TORCHELASTIC_RUN_ID", "SLURM_PROCID", "SLURM_JOB_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
              "RINGSIDE_RANK", "RINGSIDE_JOB", "RINGSIDE_DISABLE", "LD_PRELOAD"):
        env.pop(k, None)
    if agent:
        env["LD_PRELOAD"] = agent
        env["RINGSIDE_OUT"] = out
    # cuBLAS picks the same algorithms run after run (losses part)
    env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    env.update(extra)
    return env


def sizes(args):
    """The workers' arguments that come from ours."""
    return ["--device", args.device, "--steps", str(args.steps), "--tokens", str(args.tokens),
            "--replays", str(args.replays)]


def budget(timeout):
    """timeout, or what is left of the whole budget where that is less (at least 1 s)."""
    return max(1, min(timeout, int(deadline - time.monotonic())))


def worker(args, name, out_json, agent=None, trace=None, extra=(), timeout=120, env_extra=None):
    """Runs `--worker name` in a new interpreter; its result JSON as a dict, or None (a failed
    check saying why)."""
    cmd = [args.python, os.path.abspath(__file__), "--worker", name, "--result", out_json] + sizes(args)
    cmd += list(extra)
    rc, text = run(cmd, env=base_env(agent, trace, **(env_extra or {})), timeout=budget(timeout))
    label = "%s worker%s" % (name, " under the agent" if agent else "")
    if not check(rc == 0 and os.path.exists(out_json), "%s ran (%s)" % (label, " ".join(extra) or "defaults"),
                 "exit status %d: %s" % (rc, tail(text))):
        return None
    with open(out_json) as f:
        return json.load(f)


def dump_records(args, trace_dir, pid=None):
    """`ringside dump` records of the trace files under trace_dir (of process pid where
    given); None when there are none (a failed check)."""
    files = sorted(os.path.join(b, f) for b, _, fs in os.walk(trace_dir) for f in fs if f.endswith(".trace.lz4"))
    if pid is not None:
        files = [f for f in files if (".%d." % pid) in os.path.basename(f)] or files
    if not check(files, "the agent wrote a trace in %s" % trace_dir, "no .trace.lz4 file"):
        return None
    recs = []
    for path in files:
        p = subprocess.run([os.path.join(args.build, "ringside"), "dump", path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        if not check(p.returncode == 0, "ringside dump %s" % os.path.basename(path),
                     tail(p.stderr.decode(errors="replace"))):
            return None
        one = [json.loads(l) for l in p.stdout.decode(errors="replace").splitlines() if l.strip()]
        metas = [r for r in one if r.get("type") == "meta"]
        if pid is None or any(m.get("pid") == pid for m in metas):
            recs += one
    return recs


def report_json(args, trace_dir, out_dir):
    rc, text = run([os.path.join(args.build, "ringside"), "report", trace_dir, "-o", out_dir, "-q"],
                   timeout=WORKER_TIMEOUT_S)
    if not check(rc == 0, "ringside report %s" % trace_dir, "exit status %d: %s" % (rc, tail(text))):
        return None
    with open(os.path.join(out_dir, "report.json")) as f:
        return json.load(f)


# ---- the parts ---------------------------------------------------------------------------

def part_kineto_losses(args, parts):
    """Three runs of the training loop: no tool (losses; the overhead loops bare and under
    the profiler), the agent (losses; the overhead loops), the agent with the profiler
    (Kineto's trace against ringside's)."""
    d = os.path.join(args.out, "train")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    over = "overhead" in parts
    bare = worker(args, "train", os.path.join(d, "none.json"), extra=["--overhead", "none"] if over else [],
                  timeout=WORKER_TIMEOUT_S)
    agent = worker(args, "train", os.path.join(d, "agent.json"), agent=args.agent,
                   trace=os.path.join(d, "trace-agent"), extra=["--overhead", "agent"] if over else [],
                   timeout=WORKER_TIMEOUT_S)
    if "losses" in parts and bare and agent:
        a, b = bare["losses"], agent["losses"]
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
        figure("losses", "%d steps, last loss %s without the agent and %s with it" % (len(a), a[-1], b[-1]),
               none=a, agent=b)
        check(len(a) == len(b) == args.steps and first is None, "losses: bit-identical with and without the "
              "agent (%d steps, float.hex)" % args.steps, "step %s: %s against %s" % (
                  first, a[first] if first is not None else "-", b[first] if first is not None else "-"))
    if "overhead" in parts and bare and agent:
        check_overhead(bare["overhead"], agent["overhead"])
    if "kineto" not in parts:
        return
    kin_json = os.path.join(d, "kineto.json")
    prof = worker(args, "train", os.path.join(d, "agent-profiler.json"), agent=args.agent,
                  trace=os.path.join(d, "trace-profiler"), extra=["--kineto", kin_json], timeout=WORKER_TIMEOUT_S)
    if not prof:
        return
    if bare:
        note("kineto: losses under the agent and the profiler %s those without either tool"
             % ("equal" if prof["losses"] == bare["losses"] else "differ from"))
    recs = dump_records(args, os.path.join(d, "trace-profiler"), prof["pid"])
    if recs is None:
        return
    rs = ringside_kernels(recs, prof["pid"], (prof["profile_ns"][0], prof["profile_ns"][1]))
    kin = kineto_kernels(kin_json)
    m = match_kernels(rs, kin)
    figure("kineto", match_line(m), counts=m["counts"], dur_diff_us=m["dur_diff_us"],
           start_us=m["start_us"], drift_ppm=m["drift_ppm"], bad=len(m["dur_bad"]), device=prof.get("gpu"))
    check_match("kineto", m)


def check_overhead(bare, agent):
    line, data = [], {}
    for loop in ("launch_bound", "gpu_bound"):
        none, prof, ag = bare[loop]["none"], bare[loop]["profiler"], agent[loop]["none"]
        ra, rp = ag / none, prof / none
        data[loop] = {"none_s": none, "agent_s": ag, "profiler_s": prof, "agent_ratio": ra, "profiler_ratio": rp,
                      "kernels": bare[loop]["kernels"]}
        line.append("%s (%d kernels): none %.4f s, agent %.4f s (%.3fx), torch.profiler %.4f s (%.3fx)"
                    % (loop.replace("_", "-"), bare[loop]["kernels"], none, ag, ra, prof, rp))
    figure("overhead", "; ".join(line) + " (medians of %d runs each)" % bare["launch_bound"]["runs"], **data)
    check(data["gpu_bound"]["agent_ratio"] <= GPU_BOUND_MAX, "overhead: the agent costs a GPU-bound loop at most "
          "%d%% wall time" % round((GPU_BOUND_MAX - 1) * 100), "%.3fx" % data["gpu_bound"]["agent_ratio"])


def part_graph(args):
    d = os.path.join(args.out, "graph")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    kin_json = os.path.join(d, "kineto.json")
    g = worker(args, "graph", os.path.join(d, "graph.json"), agent=args.agent, trace=os.path.join(d, "trace"),
               extra=["--kineto", kin_json], timeout=WORKER_TIMEOUT_S)
    if not g:
        return
    rep = report_json(args, os.path.join(d, "trace"), os.path.join(d, "report"))
    if rep is None:
        return
    procs = [p for p in rep.get("processes", []) if p.get("pid") == g["pid"]]
    if not check(len(procs) == 1, "graph: report.json has the process (pid %d)" % g["pid"],
                 "pids: %s" % [p.get("pid") for p in rep.get("processes", [])]):
        return
    table = [k for k in procs[0].get("kernels", []) if k.get("class") in ("compute", "communication")]
    got = {}
    for k in table:
        n = norm_name(k.get("name"))
        got[n] = got.get(n, 0) + k.get("count", 0)
    kin = kineto_kernels(kin_json)
    want = collections.Counter(k["name"] for k in kin)
    in_graph = collections.Counter(k["name"] for k in kin if k["graph"])
    per_replay = sum(in_graph.values()) / g["replays"] if g["replays"] else 0
    opaque = got.get("CUDA graph", 0)
    figure("graph", "%d replays of a graph of %g kernels (%d names) by Kineto; report.json: %d kernel rows, "
           "%d 'CUDA graph' launches unexpanded; graph kernels listed %d of %d names"
           % (g["replays"], per_replay, len(in_graph), len(table), opaque,
              sum(1 for n in in_graph if n in got), len(in_graph)),
           replays=g["replays"], kernels_per_replay=per_replay, graph_names=len(in_graph), opaque=opaque)
    check(in_graph and g["replays"] > 0, "graph: Kineto saw the graph's kernels (a graph id, or a "
          "cudaGraphLaunch's correlation)", "none among %d kernels" % len(kin))
    check(not opaque, "graph: no graph launch left unexpanded ('CUDA graph' rows)",
          "report.json lists 'CUDA graph' x%d: the report does not expand graphs into their kernels" % opaque)
    full = len(table) >= REPORT_KERNELS
    missing = [n for n in in_graph if n not in got]
    check(not missing or full, "graph: every graph kernel named in report.json's kernel table",
          "%d of %d missing, e.g. %s" % (len(missing), len(in_graph), "; ".join(n[:70] for n in missing[:3])))
    wrong = [(n, c, want.get(n, 0)) for n, c in got.items() if n != "CUDA graph" and c != want.get(n, 0)]
    check(not wrong and got, "graph: report.json's kernel counts are Kineto's (eager steps and replays)",
          "%d names off, (report, Kineto): %s" % (len(wrong), "; ".join("%s: %d, %d" % (n[:60], a, b)
                                                                        for n, a, b in wrong[:4])))


def part_memory(args):
    d = os.path.join(args.out, "memory")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    m = worker(args, "memory", os.path.join(d, "memory.json"), agent=args.agent, trace=os.path.join(d, "trace"),
               timeout=WORKER_TIMEOUT_S)
    if not m or not check(m.get("oom"), "memory: PyTorch raised OutOfMemoryError after %s steps" % m.get("steps"),
                          json.dumps(m)[:300]):
        return
    rep = report_json(args, os.path.join(d, "trace"), os.path.join(d, "report"))
    if rep is None:
        return
    jm = rep.get("memory") or {}
    oom = jm.get("oom") or {}
    procs = [p for p in rep.get("processes", []) if p.get("pid") == m["pid"]]
    pm = procs[0].get("memory", {}) if procs else {}
    figure("memory", "%d steps of %d MiB, then OutOfMemoryError (%s); torch: max reserved %d, device %d bytes; "
           "report: peak %s at step %s, out-of-memory at step %s asking %s with %s free of %s, %s failed calls, "
           "%s retried, leak %s B/step (r2 %s), full at step %s"
           % (m["steps"], LEAK_MB, m["oom"][:120], m["max_reserved"], m["total"], pm.get("peak_bytes"),
              pm.get("peak_step"), oom.get("step"), oom.get("asked_bytes"), oom.get("free_bytes"),
              oom.get("total_bytes"), pm.get("failed"), (pm.get("retries") or {}).get("count"),
              (pm.get("growth") or {}).get("bytes_per_step"), (pm.get("growth") or {}).get("r2"),
              (pm.get("growth") or {}).get("full_at_step")),
           worker=m, report=jm, process=pm)
    check(oom.get("pid") == m["pid"] and rep.get("findings") and rep["findings"][0]["id"] == "out_of_memory",
          "memory: the first finding is the out-of-memory, of the worker's process",
          "%s; findings %s" % (oom, [f["id"] for f in rep.get("findings", [])]))
    asked = oom.get("asked_bytes") or 0
    check(LEAK_MB << 20 <= asked <= (LEAK_MB << 20) + (20 << 20),
          "memory: the failed call asked for the step's %d MiB (PyTorch rounds up to 2 MiB)" % LEAK_MB, str(asked))
    check(oom.get("total_bytes") == m["total"], "memory: the driver's total at the failure is "
          "torch.cuda.mem_get_info's (%d)" % m["total"], str(oom.get("total_bytes")))
    peak = pm.get("peak_bytes") or 0
    check(abs(peak - m["max_reserved"]) <= 0.01 * m["max_reserved"],
          "memory: the peak within 1%% of torch.cuda.max_memory_reserved (%d)" % m["max_reserved"], str(peak))
    check(any(f["id"] == "memory_grows" for f in rep.get("findings", [])), "memory: the leak found",
          str([f["id"] for f in rep.get("findings", [])]))
    folded = os.path.join(d, "flame-mem.folded")
    rc, text = run([os.path.join(args.build, "ringside"), "flame", os.path.join(d, "trace"), "--kind", "mem",
                    "-o", folded], timeout=WORKER_TIMEOUT_S)
    with open(folded) if rc == 0 and os.path.exists(folded) else open(os.devnull) as f:
        lines = sorted((l.rsplit(" ", 1) for l in f.read().splitlines() if " " in l),
                       key=lambda x: -int(x[1]) if x[1].isdigit() else 0)
    check(rc == 0 and lines and "leak_step" in lines[0][0],
          "memory: the memory flame graph's heaviest stack names leak_step", (lines[0][0][-300:] if lines else text[-300:]))


NCCL_OPS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
            "broadcast": "broadcast"}
REPORT_OPS = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter",
              "broadcast": "Broadcast"}


def part_nccl(args):
    means = {}
    for mode in ("blocking", "nonblocking"):
        means[mode] = nccl_run(args, mode)
    b, n = means["blocking"], means["nonblocking"]
    if not b or not n:
        return
    far, compared = [], 0
    for key in sorted(set(b) & set(n)):
        if key[0] not in ("allgather", "reducescatter"):
            continue  # one rank's in-place ops do nothing on the GPU; these copy
        compared += 1
        if abs(n[key] - b[key]) > max(NB_REL * b[key], NB_ABS_US):
            far.append("%s %d B: %.1f us against %.1f us" % (key[0], key[1], n[key], b[key]))
    line = "; ".join("%s %d B %.1f / %.1f us" % (k[0], k[1], b[k], n.get(k, -1)) for k in sorted(b))
    figure("nccl", "median GPU time per call, blocking / non-blocking: " + line)
    check(compared and not far, "nccl: non-blocking AllGather's and ReduceScatter's GPU times within %d%% or "
          "%g us of the blocking run's" % (NB_REL * 100, NB_ABS_US), "; ".join(far) or "none to compare")


NCCL_LOG_OPS = {"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter",
                "Broadcast": "broadcast", "Reduce": "reduce", "AllToAll": "alltoall", "Send": "send",
                "Recv": "recv", "Gather": "gather", "Scatter": "scatter"}


def nccl_logged(d, pid):
    """{op: calls} of NCCL's COLL log lines ("NCCL INFO AllReduce: opCount ...") of process pid
    under d; {} when there is no such log."""
    out = collections.Counter()
    for name in os.listdir(d):
        if not (name.startswith("nccl.") and name.endswith(".%d.log" % pid)):
            continue
        with open(os.path.join(d, name), errors="replace") as f:
            for line in f:
                m = re.search(r"NCCL INFO (\w+): opCount", line)
                if m:
                    out[NCCL_LOG_OPS.get(m.group(1), m.group(1).lower())] += 1
    return dict(out)


def nccl_run(args, mode):
    """One torchrun job; {(op, bytes): median GPU time in us} from the dump, or None (the
    median: a first call's warm-up moved a mean of 10 by 30% on an H200)."""
    d = os.path.join(args.out, "nccl-" + mode)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    trace = os.path.join(d, "trace")
    # -r 1 -t 1: each rank's stdout into a log under d/logs and on to ours (and Debian's
    # torchrun 1.13, the CPU path's, fails without them)
    cmd = [args.python, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(args.gpus),
           "-r", "1", "-t", "1", "--log_dir", os.path.join(d, "logs"), os.path.abspath(__file__),
           "--worker", "nccl", "--result", os.path.join(d, "rank-%r.json")] + sizes(args)
    # NCCL's own log of every collective it was called for: the truth of what reached NCCL
    # (PyTorch may leave out a call a rank alone need not make)
    env = base_env(args.agent, trace, TORCH_NCCL_USE_COMM_NONBLOCKING="1" if mode == "nonblocking" else "0",
                   NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="COLL", NCCL_DEBUG_FILE=os.path.join(d, "nccl.%h.%p.log"))
    rc, text = run(cmd, env=env, timeout=budget(NCCL_TIMEOUT_S))
    what = "nccl (%s): torchrun, %d rank(s)" % (mode, args.gpus)
    if not check(rc == 0, what + " ran under the agent", "exit status %d: %s" % (rc, tail(text, 10))):
        return None
    ranks = []
    for r in range(args.gpus):
        with open(os.path.join(d, "rank-%d.json" % r)) as f:
            ranks.append(json.load(f))
    note("nccl (%s): torch %s, NCCL %s from %s" % (mode, ranks[0]["torch"], ranks[0]["nccl_version"],
                                                  ranks[0]["libnccl"] or "no libnccl.so mapped (linked in?)"))
    times = {}
    for info in ranks:
        recs = dump_records(args, trace, info["pid"])
        if recs is None:
            return None
        colls = [r for r in recs if r.get("type") == "coll"]
        want = collections.Counter((NCCL_OPS[o], b) for o, b in info["ops"])
        have = collections.Counter((r.get("op"), r.get("bytes")) for r in colls)
        logged = nccl_logged(d, info["pid"])
        if logged:
            got = collections.Counter(r.get("op") for r in colls)
            note("nccl (%s): rank %d: torch issued %s; NCCL's log has %s; ringside recorded %s"
                 % (mode, info["rank"], sorted(collections.Counter(k[0] for k in info["ops"]).items()),
                    sorted(logged.items()), sorted(got.items())))
            check(got == logged, "nccl (%s): rank %d: every collective NCCL logged (NCCL_DEBUG=INFO, COLL) "
                  "recorded once (%d)" % (mode, info["rank"], sum(logged.values())),
                  "by op: NCCL %s, recorded %s" % (sorted(logged.items()), sorted(got.items())))
            want = collections.Counter({k: c for k, c in want.items() if logged.get(k[0])})
        check(all(have[k] == c for k, c in want.items()), "nccl (%s): rank %d: every collective it issued "
              "that reached NCCL recorded with its bytes (%d)" % (mode, info["rank"], sum(want.values())),
              "(op, bytes): issued %s, recorded %s" % (sorted(want.items()), sorted(have.items())))
        untimed = [r for r in colls if not r.get("gpu_start_ns") or (r.get("gpu_end_ns") or 0) < r["gpu_start_ns"]]
        check(colls and not untimed, "nccl (%s): rank %d: every collective has a GPU time" % (mode, info["rank"]),
              "%d of %d without" % (len(untimed), len(colls)))
        comms = [r for r in recs if r.get("type") == "comm" and r.get("kind") not in ("destroy", "abort")]
        check(comms and all(r.get("nranks") == info["world"] and r.get("rank") == info["rank"] for r in comms),
              "nccl (%s): rank %d: its communicator recorded with rank %d of %d"
              % (mode, info["rank"], info["rank"], info["world"]),
              "comm records (kind, rank, nranks): %s" % [(r.get("kind"), r.get("rank"), r.get("nranks"))
                                                         for r in comms][:6])
        if info["rank"] == 0:
            for (op, nbytes) in want:
                ts = [(r["gpu_end_ns"] - r["gpu_start_ns"]) / 1e3 for r in colls
                      if (r.get("op"), r.get("bytes")) == (op, nbytes) and r not in untimed]
                times[(op, nbytes)] = statistics.median(ts) if ts else -1.0
    rep = report_json(args, trace, os.path.join(d, "report"))
    if rep is not None:
        logged = nccl_logged(d, ranks[0]["pid"])
        want = collections.Counter((REPORT_OPS[NCCL_OPS[o]], b) for o, b in ranks[0]["ops"]
                                   if not logged or logged.get(NCCL_OPS[o]))
        rows = collections.Counter()
        for c in rep.get("collectives", []):
            rows[(c.get("op"), c.get("bytes"))] += c.get("count", 0)
        seen = set(c.get("ranks") for c in rep.get("collectives", []))
        check(all(rows[k] == c for k, c in want.items()) and seen == {args.gpus},
              "nccl (%s): report.json's collectives: each (op, bytes) with the calls issued, on %d rank(s)"
              % (mode, args.gpus), "issued %s; report %s, ranks %s" % (sorted(want.items()), sorted(rows.items()),
                                                                       sorted(seen, key=str)))
    return times


# ---- workers (these import torch) --------------------------------------------------------

def torch_setup(device):
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch %s: CUDA is not available (torch.version.cuda %s)"
                         % (torch.__version__, torch.version.cuda))
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    return torch


def sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def make_model(torch, device, dtype, d=1024, layers=4):
    """A transformer-ish MLP: pre-norm residual blocks of LayerNorm, Linear(d, 4d), GELU,
    Linear(4d, d), then a head."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.up, self.down = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.down(nn.functional.gelu(self.up(self.norm(x))))

    return nn.Sequential(*[Block() for _ in range(layers)], nn.Linear(d, d)).to(device=device, dtype=dtype)


def make_batch(torch, device, dtype, tokens, d=1024):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(tokens, d, generator=g).to(device=device, dtype=dtype)
    y = torch.randn(tokens, d, generator=g).to(device=device, dtype=dtype)
    return x, y


def train_step(torch, model, params, x, y, lr):
    """One step: forward, MSE loss in float32, backward, SGD as one foreach update (as
    torch.optim.SGD's foreach path does); grads set to None first."""
    for p in params:
        p.grad = None
    loss = torch.nn.functional.mse_loss(model(x).float(), y.float())
    loss.backward()
    with torch.no_grad():
        torch._foreach_add_(params, [p.grad for p in params], alpha=-lr)
    return loss


def profiler(torch, device):
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    return torch.profiler.profile(activities=acts)


def worker_train(a):
    torch = torch_setup(a.device)
    prof = profiler(torch, a.device) if a.kineto else None
    span = [0, 0]
    if prof:
        span[0] = time.monotonic_ns()   # CLOCK_MONOTONIC, the agent's clock
        prof.__enter__()
    dtype = torch.bfloat16
    model = make_model(torch, a.device, dtype)
    params = list(model.parameters())
    x, y = make_batch(torch, a.device, dtype, a.tokens)
    losses = torch.zeros(a.steps, device=a.device)
    for i in range(a.steps):
        losses[i] = train_step(torch, model, params, x, y, 1e-3).detach()
    sync(torch, a.device)
    if prof:
        span[1] = time.monotonic_ns()
        prof.__exit__(None, None, None)
        prof.export_chrome_trace(a.kineto)
    out = {"pid": os.getpid(), "torch": torch.__version__,
           "losses": [float(v).hex() for v in losses.cpu().tolist()], "profile_ns": span, "gpu": torch.cuda.get_device_name() if a.device == "cuda" else "cpu"}
    if a.overhead:
        out["overhead"] = overhead_loops(torch, a.device, with_profiler=a.overhead == "none")
    return out


def timed(torch, device, fn, runs):
    ts = []
    for _ in range(runs):
        sync(torch, device)
        t = time.perf_counter()
        fn()
        sync(torch, device)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def overhead_loops(torch, device, with_profiler, runs=3):
    """Median wall times of a launch-bound loop (tiny in-place adds) and a GPU-bound one
    (large bf16 matrix products), bare and (without the agent) under torch.profiler."""
    n_tiny, n_mm, size = 5000, 40, 8192 if device == "cuda" else 256
    x = torch.zeros(256, device=device)
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b, c = torch.randn_like(a), torch.empty_like(a)

    def tiny():
        for _ in range(n_tiny):
            x.add_(1.0)

    def mm():
        for _ in range(n_mm):
            torch.mm(a, b, out=c)

    out = {}
    for name, fn, n in (("launch_bound", tiny, n_tiny), ("gpu_bound", mm, n_mm)):
        fn()    # warm-up: the library's first calls, the allocator
        r = {"none": timed(torch, device, fn, runs), "kernels": n, "runs": runs}
        if with_profiler:
            with profiler(torch, device):
                r["profiler"] = timed(torch, device, fn, runs)
        out[name] = r
    return out


def worker_graph(a):
    """Eager warm-up steps on a side stream, one step captured with torch.cuda.graph, replayed
    a.replays times: the whole network capture of PyTorch's CUDA graphs notes, the update
    inside the graph. Under torch.profiler from before the first CUDA call to the end."""
    torch = torch_setup(a.device)
    if a.device != "cuda":
        raise SystemExit("the graph worker needs CUDA")
    prof = profiler(torch, a.device)
    prof.__enter__()
    dtype = torch.bfloat16
    model = make_model(torch, a.device, dtype)
    params = list(model.parameters())
    x, y = make_batch(torch, a.device, dtype, a.tokens)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            train_step(torch, model, params, x, y, 1e-3)
    torch.cuda.current_stream().wait_stream(side)
    for p in params:
        p.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        loss = train_step(torch, model, params, x, y, 1e-3)
    for _ in range(a.replays):
        graph.replay()
    torch.cuda.synchronize()
    prof.__exit__(None, None, None)
    prof.export_chrome_trace(a.kineto)
    return {"pid": os.getpid(), "replays": a.replays, "loss": float(loss).hex()}


def worker_nccl(a):
    """One torchrun rank: NCCL collectives of known sizes; what it issued, as (op, bytes as
    nccl-tests counts them: AllGather's output, ReduceScatter's input)."""
    torch = torch_setup(a.device)
    import torch.distributed as dist
    rank, local, world = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), int(os.environ["WORLD_SIZE"])
    if a.device == "cuda":
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    small = torch.ones(256 * 1024, device=dev)
    big = torch.ones(16 * 1024 * 1024, device=dev)
    gathered = torch.empty(world * big.numel(), device=dev)
    scattered = torch.empty(big.numel() // world, device=dev)
    ops = []

    def nbytes(t):
        return t.numel() * t.element_size()

    for _ in range(10):
        dist.all_reduce(small)
        dist.all_reduce(big)
        ops += [("all_reduce", nbytes(small)), ("all_reduce", nbytes(big))]
    for _ in range(10 if a.device == "cuda" else 0):    # gloo (the CPU path) has neither
        dist.all_gather_into_tensor(gathered, big)
        dist.reduce_scatter_tensor(scattered, big)
        ops += [("all_gather", nbytes(gathered)), ("reduce_scatter", nbytes(big))]
    for _ in range(5):
        dist.broadcast(small, src=0)
        ops.append(("broadcast", nbytes(small)))
    sync(torch, a.device)
    dist.destroy_process_group()
    libnccl = None
    with open("/proc/self/maps") as f:
        for line in f:
            if "libnccl" in line:
                libnccl = line.split()[-1]
                break
    nccl = torch.cuda.nccl.version() if a.device == "cuda" else None
    return {"pid": os.getpid(), "rank": rank, "world": world, "ops": ops, "torch": torch.__version__,
            "nccl_version": ".".join(map(str, nccl)) if isinstance(nccl, tuple) else nccl, "libnccl": libnccl}


def leak_step(torch, keep, nbytes):
    """What the memory worker keeps each step: the function the memory flame graph names."""
    keep.append(torch.empty(nbytes, dtype=torch.uint8, device="cuda"))


def worker_memory(a):
    """A few matrix products a step, then LEAK_MB kept (leak_step), until the device is full
    and PyTorch raises OutOfMemoryError; its own figures of the device and of its reserve."""
    torch = torch_setup(a.device)
    if a.device != "cuda":
        raise SystemExit("the memory worker needs CUDA")
    free0, total = torch.cuda.mem_get_info()
    x = torch.randn(2048, 2048, device="cuda")
    keep, steps, oom = [], 0, None
    try:
        while steps < 10000:
            for _ in range(10):
                x = (x @ x).clamp_(-1, 1)
            leak_step(torch, keep, LEAK_MB << 20)
            torch.cuda.synchronize()
            steps += 1
    except torch.cuda.OutOfMemoryError as e:
        oom = str(e)
    out = {"pid": os.getpid(), "steps": steps, "oom": oom, "free0": free0, "total": total,
           "max_reserved": torch.cuda.max_memory_reserved(), "reserved": torch.cuda.memory_reserved()}
    del keep
    return out


WORKERS = {"train": worker_train, "graph": worker_graph, "nccl": worker_nccl, "memory": worker_memory}


def worker_main(a):
    out = WORKERS[a.worker](a)
    path = a.result.replace("%r", os.environ.get("RANK", "0"))
    with open(path + ".tmp", "w") as f:
        json.dump(out, f)
    os.rename(path + ".tmp", path)


# ---- main --------------------------------------------------------------------------------

def list_parts():
    for name, what in PARTS:
        print("  - %s: %s" % (name, what % (LEAK_MB if name == "memory" else STEPS) if "%d" in what else what))


def probe(args):
    """torch, its CUDA, the GPUs: a failed check (and False) where the interpreter has no
    torch with CUDA."""
    code = ("import json, torch; c = torch.cuda.is_available(); print(json.dumps({'torch': torch.__version__, "
            "'cuda': torch.version.cuda, 'available': c, 'gpus': torch.cuda.device_count() if c else 0, "
            "'name': torch.cuda.get_device_name(0) if c else None, "
            "'nccl': torch.distributed.is_nccl_available() if torch.distributed.is_available() else False}))")
    rc, text = run([args.python, "-c", code], env=base_env(None, None), timeout=120)
    info = None
    if rc == 0:
        try:
            info = json.loads(text.strip().splitlines()[-1])
        except (ValueError, IndexError):
            info = None
    if not check(info is not None, "PyTorch loads (%s)" % args.python, "exit status %d: %s" % (rc, tail(text))):
        return False
    note("PyTorch %s, CUDA %s, %d GPU(s): %s; NCCL backend %s" % (info["torch"], info["cuda"], info["gpus"],
                                                                  info["name"], info["nccl"]))
    figures["torch"] = info
    if args.device == "cuda" and not check(info["available"], "PyTorch sees a CUDA GPU",
                                           "torch.cuda.is_available() is False (torch %s, CUDA %s)"
                                           % (info["torch"], info["cuda"])):
        return False
    args.gpus = args.gpus or max(1, info["gpus"])
    if args.device == "cuda" and not check(info["nccl"], "PyTorch has the NCCL backend",
                                           "torch.distributed.is_nccl_available() is False"):
        args.no_nccl = True
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the parts and exit")
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", help="folder of every run's traces, Kineto files and reports")
    ap.add_argument("--json", help="the figures, as JSON (default OUT/torch-check.json)")
    ap.add_argument("--parts", default=",".join(p for p, _ in PARTS))
    ap.add_argument("--python", default=sys.executable, help="the interpreter with torch")
    ap.add_argument("--budget", type=int, default=BUDGET_S,
                    help="seconds for all the parts (default %d)" % BUDGET_S)
    ap.add_argument("--gpus", type=int, default=0, help="ranks of the NCCL part (default: every GPU)")
    ap.add_argument("--device", default="cuda", help=argparse.SUPPRESS)   # cpu: the workers' code on CPU torch
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--kineto", help=argparse.SUPPRESS)
    ap.add_argument("--overhead", choices=("none", "agent"), help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=STEPS, help=argparse.SUPPRESS)
    ap.add_argument("--tokens", type=int, default=8192, help=argparse.SUPPRESS)
    ap.add_argument("--replays", type=int, default=30, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.list:
        list_parts()
        return 0
    if args.worker:
        worker_main(args)
        return 0
    if not args.out:
        ap.error("--out is needed")
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(p for p, _ in PARTS)
    if unknown:
        ap.error("unknown parts: %s" % ", ".join(sorted(unknown)))
    args.out = os.path.abspath(args.out)
    args.build = os.path.abspath(args.build)
    args.agent = os.path.join(args.build, "libagent.so")
    args.no_nccl = False
    os.makedirs(args.out, exist_ok=True)
    global deadline
    t_all = time.monotonic()
    deadline = t_all + args.budget
    if probe(args):
        steps = [("train", lambda: part_kineto_losses(args, parts),
                  any(p in parts for p in ("kineto", "losses", "overhead"))),
                 ("graph", lambda: part_graph(args), "graph" in parts),
                 ("memory", lambda: part_memory(args), "memory" in parts),
                 ("nccl", lambda: part_nccl(args), "nccl" in parts and not args.no_nccl)]
        for name, fn, wanted in steps:
            if not wanted:
                continue
            if not check(time.monotonic() < deadline - 10, "%s part started within the budget" % name,
                         "the budget of %d s (--budget) is spent" % args.budget):
                continue
            t = time.monotonic()
            try:
                fn()
            except (OSError, ValueError, KeyError, TypeError, IndexError, subprocess.SubprocessError) as e:
                check(False, "%s part ran to its end" % name, "%s: %s" % (type(e).__name__, e))
            note("%s part took %.1f s" % (name, time.monotonic() - t))
            figures.setdefault("seconds", {})[name] = round(time.monotonic() - t, 1)
    figures["results"] = dict(results)
    path = args.json or os.path.join(args.out, "torch-check.json")
    with open(path, "w") as f:
        json.dump(figures, f, indent=1)
    print("torch-check: %d ok, %d not ok in %.1f s; figures in %s"
          % (results["ok"], results["not ok"], time.monotonic() - t_all, path), flush=True)
    return 1 if results["not ok"] else 0


if __name__ == "__main__":
    sys.exit(main())
