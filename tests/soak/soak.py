#!/usr/bin/env python3
"""`make soak` (docs/testing.md, long runs): the agent under long jobs, SOAK_MIN minutes (default 30), two at once:

  simtrain   one simulated rank (build/simtrain --seconds, NCCL's stand-in, data loading and a
             checkpoint every 500 steps), steps counted by the program (--progress)
  ddp        a two-rank DistributedDataParallel job on the real PyTorch (tests/soak/ddp_soak.py:
             gloo, a file read each step, torch.save every 200 steps), steps counted by the ranks

Every 10 s it samples each traced process: its resident memory (VmRSS), its trace file's size,
how long ago the writer last wrote it (the file's mtime: the writer's lag), and the steps done.
At a third of the time it copies the trace folders as they are (files cut short, as a killed job
leaves them). At the end: the drops each process counted (report.json's processes[].dropped),
and `ringside report` of the whole soaked job and of the copy at a third, with each report's
peak memory.

Passes when, for each process, memory after warm-up (the first fifth) stays within 5% of its
level then (the median of the samples in the second fifth, against every later sample); nothing
is dropped; bytes per step, per minute after warm-up, stay within 25% of their median; the
writer's lag is under 5 s at every sample; and the report of the whole job takes at most 1.25
times the memory of the report of its first third. Prints one "ok"/"not ok" line per check, the
figures as "# " lines (for the README) and ends "N passed, N failed"; status 1 on any failure.

    soak.py [--minutes M] [--out DIR] [--keep]"""
import argparse
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
AGENT = os.path.join(BUILD, "libagent.so")
RINGSIDE = os.path.join(BUILD, "ringside")
SIMTRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
DDP = os.path.join(ROOT, "tests", "soak", "ddp_soak.py")
PYTHON = os.environ.get("SOAK_PYTHON", "/usr/bin/python3")

SAMPLE_S = 10
MEM_TOL = 0.05
BYTES_TOL = 0.25
LAG_MAX_S = 5.0
REPORT_RATIO_MAX = 1.25

results = {"passed": 0, "failed": 0}


def check(ok, what, why=""):
    results["passed" if ok else "failed"] += 1
    print("%s %s%s" % ("ok" if ok else "not ok", what, "" if ok or not why else ": " + why), flush=True)
    return ok


def note(text):
    print("# " + text, flush=True)


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def children(pid):
    """Every descendant of pid (by /proc/*/stat's parent)."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def trace_of(out, pid):
    files = [f for f in glob.glob(os.path.join(out, "**", "*.trace.lz4"), recursive=True)
             if (".%d." % pid) in os.path.basename(f)]
    return files[0] if files else None


def read_ints(path):
    """The whole numbers on the first line of path; [] when there is none yet."""
    try:
        with open(path) as f:
            return [int(w) for w in f.readline().split()]
    except (OSError, ValueError):
        return []


def read_int(path):
    v = read_ints(path)
    return v[0] if v else None


def agent_env(out, **extra):
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
              "RINGSIDE_JOB", "RINGSIDE_RANK_PID", "LD_PRELOAD"):
        env.pop(k, None)
    env.update(LD_PRELOAD=AGENT, RINGSIDE_OUT=out, **extra)
    return env


# Runs a command and says, last on stderr, its peak resident memory in KiB (its own
# children's: the reporter alone, not this script's jobs).
PEAK = ("import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:])\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(r.returncode)\n")


def report(trace_dir, out_dir):
    """(exit status, report.json or None, peak RSS of the reporter in MiB, seconds)."""
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-c", PEAK, RINGSIDE, "report", trace_dir, "-o", out_dir, "-q"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1800)
    secs = time.monotonic() - t
    lines = p.stderr.decode(errors="replace").strip().splitlines()
    try:
        peak_kb = int(lines[-1])
    except (IndexError, ValueError):
        peak_kb = 0
    rep = None
    if p.returncode == 0:
        with open(os.path.join(out_dir, "report.json")) as f:
            rep = json.load(f)
    return p.returncode, rep, peak_kb / 1024.0, secs


def window_rates(samples, start_s):
    """Bytes per step in each minute after start_s: [(bytes, steps)] per minute."""
    out, last = [], None
    for s in samples:
        if s["t"] < start_s or s["bytes"] is None or s["steps"] is None:
            continue
        if last is None:
            last = s
            continue
        if s["t"] - last["t"] >= 60:
            out.append((s["bytes"] - last["bytes"], s["steps"] - last["steps"]))
            last = s
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MIN", "30")))
    ap.add_argument("--out", default=os.path.join(BUILD, "soak"))
    ap.add_argument("--keep", action="store_true", help="keep the traces and reports")
    args = ap.parse_args()
    for path in (AGENT, RINGSIDE, SIMTRAIN):
        if not os.path.exists(path):
            print("soak: %s is not built (make test-build)" % path, file=sys.stderr)
            return 2
    seconds = args.minutes * 60
    shutil.rmtree(args.out, ignore_errors=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work)
    trace = {"simtrain": os.path.join(args.out, "trace-simtrain"), "ddp": os.path.join(args.out, "trace-ddp")}
    note("soak: %g minutes, samples every %d s, in %s" % (args.minutes, SAMPLE_S, args.out))

    sim_progress = os.path.join(work, "simtrain-progress.txt")
    sim = subprocess.Popen([SIMTRAIN, "--seconds", str(seconds), "--progress", sim_progress, "--data-us", "300",
                            "--ckpt-every", "500", "--ckpt-mb", "4", "--ckpt-dir", work],
                           env=agent_env(trace["simtrain"], LD_LIBRARY_PATH=SIM),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ddp_out = os.path.join(work, "ddp")
    ddp = subprocess.Popen([PYTHON, DDP, ddp_out, "--seconds", str(seconds)], env=agent_env(trace["ddp"]),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    samples = {}                        # name -> [sample]
    third_done = False
    try:
        while sim.poll() is None or ddp.poll() is None:
            time.sleep(SAMPLE_S)
            now = time.monotonic() - t0
            procs = []
            if sim.poll() is None:
                procs.append(("simtrain", sim.pid, trace["simtrain"], lambda: read_int(sim_progress)))
            if ddp.poll() is None:
                for r in range(2):
                    # each rank's progress file names its pid
                    path = os.path.join(ddp_out, "progress-rank%d.txt" % r)
                    v = read_ints(path)
                    if len(v) == 2 and rss_kb(v[1]):
                        procs.append(("ddp-rank%d" % r, v[1], trace["ddp"], lambda p=path: read_int(p)))
            for name, pid, tdir, steps in procs:
                f = trace_of(tdir, pid)
                try:
                    st = os.stat(f) if f else None
                except OSError:
                    st = None
                samples.setdefault(name, []).append({
                    "t": now, "rss_kb": rss_kb(pid), "bytes": st.st_size if st else None,
                    "lag_s": time.time() - st.st_mtime if st else None, "steps": steps()})
            if not third_done and now >= seconds / 3:
                for k, d in trace.items():
                    shutil.copytree(d, os.path.join(args.out, "third-" + k), dirs_exist_ok=True)
                third_done = True
                note("copied the traces at %.0f s" % now)
            if now > seconds + 300:
                break
    finally:
        for p in (sim, ddp):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
    check(sim.returncode == 0, "simtrain ran %g minutes under the agent" % args.minutes,
          "status %s: %s" % (sim.returncode, sim.stderr.read().decode(errors="replace")[-300:]))
    check(ddp.returncode == 0, "the DDP job ran %g minutes under the agent" % args.minutes,
          "status %s: %s" % (ddp.returncode, ddp.stderr.read().decode(errors="replace")[-300:]))

    # ddp's samples: only the two ranks (the processes that wrote progress)
    names = [n for n in samples if n == "simtrain" or any(s["steps"] for s in samples[n])]
    warm = seconds / 5
    for name in sorted(names):
        ss = samples[name]
        level = [s["rss_kb"] for s in ss if warm <= s["t"] < 2 * warm and s["rss_kb"]]
        later = [s["rss_kb"] for s in ss if s["t"] >= 2 * warm and s["rss_kb"]]
        if not level or not later:
            check(False, "%s: memory sampled after warm-up" % name, "%d and %d samples" % (len(level), len(later)))
            continue
        base = statistics.median(level)
        worst = max(later, key=lambda v: abs(v - base))
        note("%s: RSS %.1f MiB after warm-up, %.1f MiB at the end, farthest %+.2f%%; %d samples"
             % (name, base / 1024, later[-1] / 1024, 100 * (worst - base) / base, len(ss)))
        check(abs(worst - base) <= MEM_TOL * base, "%s: memory flat after warm-up (within %d%%)"
              % (name, MEM_TOL * 100), "%.1f MiB, then %.1f MiB" % (base / 1024, worst / 1024))
        rates = [b / n for b, n in window_rates(ss, warm) if n > 0]
        if rates:
            med = statistics.median(rates)
            far = max(rates, key=lambda r: abs(r - med))
            last = ss[-1]
            note("%s: %d steps, trace %.1f MiB, %.0f bytes per step (per minute: %.0f to %.0f)"
                 % (name, last["steps"] or 0, (last["bytes"] or 0) / 2**20, med, min(rates), max(rates)))
            check(abs(far - med) <= BYTES_TOL * med, "%s: bytes per step steady (each minute within %d%% "
                  "of the median)" % (name, BYTES_TOL * 100), "median %.0f, one minute %.0f" % (med, far))
        else:
            check(False, "%s: bytes per step measured" % name, "no minute with steps")
        lags = [s["lag_s"] for s in ss if s["lag_s"] is not None]
        note("%s: the writer's lag (time since the trace was last written) median %.2f s, max %.2f s"
             % (name, statistics.median(lags) if lags else -1, max(lags) if lags else -1))
        check(lags and max(lags) < LAG_MAX_S, "%s: the writer keeps up (lag under %g s)" % (name, LAG_MAX_S),
              "max %.2f s" % (max(lags) if lags else -1))

    peaks = {}
    for k in ("simtrain", "ddp"):
        rc, rep, peak, secs = report(trace[k], os.path.join(args.out, "report-" + k))
        if not check(rc == 0 and rep, "%s: ringside report of the soaked job" % k, "status %d" % rc):
            continue
        dropped = {p["pid"]: p.get("dropped") for p in rep.get("processes", [])}
        check(all(v == 0 for v in dropped.values()), "%s: nothing dropped at the defaults" % k, str(dropped))
        size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(trace[k], "**", "*.lz4"), recursive=True))
        rc3, rep3, peak3, secs3 = report(os.path.join(args.out, "third-" + k),
                                         os.path.join(args.out, "report-third-" + k))
        size3 = sum(os.path.getsize(f) for f in glob.glob(os.path.join(args.out, "third-" + k, "**", "*.lz4"),
                                                          recursive=True))
        note("%s: report of %.1f MiB of traces: %.0f MiB peak, %.1f s; of the first third (%.1f MiB): "
             "%.0f MiB, %.1f s" % (k, size / 2**20, peak, secs, size3 / 2**20, peak3, secs3))
        peaks[k] = (peak, peak3)
        check(rc3 == 0 and peak <= REPORT_RATIO_MAX * peak3, "%s: the report's memory flat in the job's "
              "length (whole job at most %.2fx its first third's)" % (k, REPORT_RATIO_MAX),
              "%.0f MiB against %.0f MiB (status %d)" % (peak, peak3, rc3))
    if not args.keep and not results["failed"]:
        shutil.rmtree(args.out, ignore_errors=True)
    print("%d passed, %d failed" % (results["passed"], results["failed"]), flush=True)
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
