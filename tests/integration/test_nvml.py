#!/usr/bin/env python3
"""GPU counters from NVML (preload/nvml.c), with the stand-in
libnvidia-ml.so.1 (tools/sim/simnvml.c) that answers from the simulated GPU's
model: one-rank simtrain with compute kernels of 33 blocks of 256 threads on
the simulated 132-SM GPU, under the agent at RINGSIDE_METRICS_HZ=20. The
gpu_util points are held against the busy time of the simulator's truth file
(some kernel or collective running) over the same windows, gpu_sm_active and
gpu_sm_occupancy against the truth's per-kernel SM coverage and occupancy,
and SM activity against what the geometry gives (33 of 132 SMs: a quarter
of the compute time). Then what is missing or refused: no libnvidia-ml.so.1
on the path, SIMNVML_FAIL_INIT=1, SIMNVML_GPM=0 and SIMNVML_DENY=1 each give
one notice and what is still measured; RINGSIDE_METRICS_HZ=0 loads nothing.
The program's output and exit status are those of a run without the agent
in every case."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import check, report_problems  # noqa: E402

TRAIN = os.path.join(rstest.BUILD, "simtrain")
NVML = os.path.join(capture.SIM, "libnvidia-ml.so.1")
if not os.path.exists(NVML) or not os.path.exists(TRAIN):
    rstest.skip("nvml", "build/sim/libnvidia-ml.so.1 or build/simtrain is not built")
    rstest.finish()

tmp = rstest.tempdir("nvml")
BLOCKS, SMS = 33, 132          # kernels of 33 blocks on a simulated GPU of 132 SMs
HZ = 20
STEPS = 60
ARGS = ["--steps", str(STEPS), "--layers", "4", "--fwd-us", "1000", "--bwd-us", "2000", "--data-us", "3000",
        "--kernel-blocks", str(BLOCKS)]
BUSY_KINDS = ("kernel", "collective", "p2p")   # NVML: "one or more kernels was executing"
# Points are stamped just after the NVML call that measured up to the call:
# the windows agree to within the time between the two, 0.5 ms allowed
# (1% of a 50 ms window while the GPU turns busy or idle), and NVML's
# utilisation is in whole percent.
TOL_PCT = 1.5
# The same 0.5 ms in a 100 ms GPM window, where a quarter of the SMs come and
# go: 0.125 points, doubled.
TOL_GPM_PCT = 0.25

# The simulated libcuda and libnccl without the stand-in NVML beside them.
BARE_SIM = os.path.join(tmp, "sim-without-nvml")
os.makedirs(BARE_SIM)
for f in os.listdir(capture.SIM):
    if not f.startswith("libnvidia-ml"):
        os.symlink(os.path.join(capture.SIM, f), os.path.join(BARE_SIM, f))


def masked(text):
    """Program output with its figures masked (simtrain prints its own timing)."""
    return re.sub(r"[0-9]+(\.[0-9]+)?", "N", text)


def program_lines(err):
    return [l for l in err.splitlines() if not l.startswith("ringside:")]


bare = rstest.run([TRAIN] + ARGS, env=dict(os.environ, LD_LIBRARY_PATH=capture.SIM, SIMGPU_SMS=str(SMS)))
check("simtrain runs without the agent", bare.returncode == 0, bare.stderr.decode(errors="replace")[-300:])


def one_run(name, sim=capture.SIM, **settings):
    """Runs simtrain under the agent: (records by type, truth lines, notices)
    or None; checks the program's output and status against the bare run."""
    out, tdir = os.path.join(tmp, name), os.path.join(tmp, name + "-truth")
    os.makedirs(out)
    os.makedirs(tdir)
    settings.setdefault("RINGSIDE_METRICS_HZ", HZ)
    settings["SIMGPU_SMS"] = SMS
    env = capture.sim_env(out, tdir, **settings)
    env["LD_LIBRARY_PATH"] = sim
    p = rstest.run([TRAIN] + ARGS, env=env)
    err = p.stderr.decode(errors="replace")
    check(name + ": output and exit status as without the agent",
          p.returncode == bare.returncode and masked(p.stdout.decode()) == masked(bare.stdout.decode())
          and masked("\n".join(program_lines(err))) == masked("\n".join(program_lines(bare.stderr.decode()))),
          "status %d (bare %d), stdout %r, stderr %r" % (p.returncode, bare.returncode, p.stdout[-200:], err[-300:]))
    traces = rstest.trace_files(out)
    if not check(name + ": one trace", len(traces) == 1, "%d traces" % len(traces)):
        return None
    by, rc = capture.records(traces[0])
    if not check(name + ": dump reads it", rc == 0, "status %d" % rc):
        return None
    pid = by["meta"][0]["pid"]
    notices = [l for l in err.splitlines() if l.startswith("ringside:")]
    return by, capture.truth(tdir, pid), notices


def step_lines(truth_dir):
    """simtrain's own step lines (kind "step") of the truth files."""
    lines = []
    for name in sorted(os.listdir(truth_dir)):
        with open(os.path.join(truth_dir, name)) as f:
            lines += [json.loads(l) for l in f if '"kind":"step"' in l]
    return lines


# the driver's memory figures (cuMemGetInfo, from the CUDA hooks), not NVML's
DRIVER_SERIES = ("gpu_mem_used", "gpu_mem_total")


def gpu_series(by):
    """{kind: (series record, [points by time])} of NVML's gpu_* series."""
    found = {}
    for s in by.get("series", []):
        if s["kind"].startswith("gpu_") and s["kind"] not in DRIVER_SERIES:
            found[s["kind"]] = (s, [])
    ids = {s["id"]: k for k, (s, _) in found.items()}
    for p in by.get("point", []):
        if p["series"] in ids:
            found[ids[p["series"]]][1].append(p)
    for _, pts in found.values():
        pts.sort(key=lambda p: p["ts_ns"])
    return found


def overlap(a0, a1, b0, b1):
    return max(0, min(a1, b1) - max(a0, b0))


def busy_ns(tl, t0, t1):
    """Time in [t0, t1) that some kernel or collective ran (their union)."""
    spans = sorted((max(t["start_ns"], t0), min(t["end_ns"], t1)) for t in tl
                   if t["kind"] in BUSY_KINDS and not t.get("failed") and t["end_ns"] > t0 and t["start_ns"] < t1)
    total, end = 0, t0
    for s, e in spans:
        s = max(s, end)
        if e > s:
            total += e - s
            end = e
    return total


def share_bounds(tl, key, t0, t1):
    """The truth's time integral over [t0, t1) of the share `key` (sm_coverage,
    occupancy) summed over running operations and capped at 1, divided by the
    window: (low, high), the two ends for operations whose truth line has no
    such share (collectives: 0 to 1)."""
    edges = []
    for t in tl:
        if t["kind"] not in BUSY_KINDS or t.get("failed"):
            continue
        s, e = max(t["start_ns"], t0), min(t["end_ns"], t1)
        if e <= s:
            continue
        lo = hi = t.get(key)
        if lo is None:
            lo, hi = 0.0, 1.0
        edges += [(s, lo, hi), (e, -lo, -hi)]
    edges.sort()
    lo_int = hi_int = 0.0
    lo = hi = 0.0
    for i, (t, dlo, dhi) in enumerate(edges):
        if i:
            dt = t - edges[i - 1][0]
            lo_int += dt * min(1.0, max(0.0, lo))
            hi_int += dt * min(1.0, max(0.0, hi))
        lo += dlo
        hi += dhi
    return lo_int / (t1 - t0), hi_int / (t1 - t0)


# ---- the stand-in on the path: utilisation and GPM ----
r = one_run("nvml")
if r:
    by, tl, notices = r
    series = gpu_series(by)
    check("nvml: no notice", not notices, "\n".join(notices))
    check("nvml: gpu_util and gpu_sm_active series of gpu0",
          all(k in series and series[k][0]["name_text"] == "gpu0" and series[k][0]["device"] == 0
              for k in ("gpu_util", "gpu_sm_active", "gpu_sm_occupancy")),
          "series: %r" % [s for s, _ in series.values()])
    steps = [t for t in step_lines(os.path.join(tmp, "nvml-truth")) if t["pid"] == by["meta"][0]["pid"]]
    run_ns = max(t["end_ns"] for t in steps) - min(t["start_ns"] for t in steps) if steps else 0
    check("nvml: simtrain's steps in the truth", len(steps) == STEPS, "%d step lines" % len(steps))
    util = series.get("gpu_util", (None, []))[1]
    # a point a tick (1/HZ s) while the steps ran, give or take the first and last
    check("nvml: a gpu_util point every tick", len(util) >= run_ns * HZ / 1e9 - 3,
          "%d points over %.3f s of steps" % (len(util), run_ns / 1e9))
    probs, n = [], 0
    for a, b in zip(util, util[1:]):
        want = 100.0 * busy_ns(tl, a["ts_ns"], b["ts_ns"]) / (b["ts_ns"] - a["ts_ns"])
        got = b["value"] / 100.0
        n += want > 0
        if abs(got - want) > TOL_PCT:
            probs.append("window %d..%d: gpu_util %.2f%%, truth busy %.2f%%" % (a["ts_ns"], b["ts_ns"], got, want))
    check("nvml: gpu_util windows with the GPU busy", n >= 10, "%d windows" % n)
    report_problems("nvml: gpu_util against the truth's busy time, within %.1f%%" % TOL_PCT, probs)
    for kind, key in (("gpu_sm_active", "sm_coverage"), ("gpu_sm_occupancy", "occupancy")):
        pts, probs = series.get(kind, (None, []))[1], []
        for a, b in zip(pts, pts[1:]):
            lo, hi = share_bounds(tl, key, a["ts_ns"], b["ts_ns"])
            got = b["value"] / 100.0
            if not 100.0 * lo - TOL_GPM_PCT <= got <= 100.0 * hi + TOL_GPM_PCT:
                probs.append("window %d..%d: %s %.2f%%, truth %.2f..%.2f%%" %
                             (a["ts_ns"], b["ts_ns"], kind, got, 100 * lo, 100 * hi))
        check("nvml: %s points" % kind, len(pts) >= 5, "%d points" % len(pts))
        report_problems("nvml: %s against the truth's %s" % (kind, key), probs)
    # NVML asks for GPM samples 100 ms apart: at 20 Hz, every other tick
    sm = series.get("gpu_sm_active", (None, []))[1]
    gaps = [b["ts_ns"] - a["ts_ns"] for a, b in zip(sm, sm[1:])]
    check("nvml: GPM samples at least 95 ms apart", gaps and min(gaps) >= 95e6,
          "gaps %r" % sorted(gaps)[:5])
    # The geometry: a quarter of the SMs while compute kernels ran.
    compute = [t for t in tl if t["kind"] == "kernel"]
    if sm:
        t0, t1 = sm[0]["ts_ns"], sm[-1]["ts_ns"]
        active = sum(b["value"] / 1e4 * (b["ts_ns"] - a["ts_ns"]) for a, b in zip(sm, sm[1:]))
        kernel_ns = sum(overlap(t["start_ns"], t["end_ns"], t0, t1) for t in compute)
        share = active / kernel_ns if kernel_ns else 0
        check("nvml: SM activity is %d/%d of the compute time" % (BLOCKS, SMS),
              abs(share - BLOCKS / SMS) <= 0.01,
              "SM activity %.4f of %.3f s of kernels, want %.4f" % (share, kernel_ns / 1e9, BLOCKS / SMS))
    for kind in ("gpu_tensor_active", "gpu_dram_active", "gpu_pcie_tx", "gpu_pcie_rx"):
        pts = series.get(kind, (None, []))[1]
        check("nvml: %s recorded, 0 as the stand-in says" % kind, pts and all(p["value"] == 0 for p in pts),
              "%d points, values %r" % (len(pts), sorted({p["value"] for p in pts})[:5]))


def no_gpu_series(name, by):
    kinds = sorted(gpu_series(by))
    check(name + ": no GPU series", not kinds, "series %r" % kinds)


def one_notice(name, notices, words):
    check(name + ": one notice, naming " + words[0],
          len(notices) == 1 and all(w in notices[0] for w in words), "\n".join(notices) or "none")


# ---- no libnvidia-ml.so.1 to load ----
r = one_run("no library", sim=BARE_SIM)
if r:
    by, _, notices = r
    one_notice("no library", notices, ["libnvidia-ml.so.1"])
    no_gpu_series("no library", by)

# ---- nvmlInit_v2 fails ----
r = one_run("init fails", SIMNVML_FAIL_INIT=1)
if r:
    by, _, notices = r
    one_notice("init fails", notices, ["nvmlInit_v2", "Driver Not Loaded"])
    no_gpu_series("init fails", by)

# ---- utilisation without GPM: unsupported, or refused ----
for name, knob, words in (("no GPM", {"SIMNVML_GPM": 0}, ["GPM", "Not Supported"]),
                          ("GPM refused", {"SIMNVML_DENY": 1}, ["GPM", "Insufficient Permissions"])):
    r = one_run(name, **knob)
    if r:
        by, _, notices = r
        series = gpu_series(by)
        one_notice(name, notices, words)
        check(name + ": gpu_util still measured, no GPM series",
              len(series.get("gpu_util", (None, []))[1]) >= 10 and sorted(series) == ["gpu_util"],
              "series %r" % {k: len(v[1]) for k, v in series.items()})

# ---- sampling off ----
r = one_run("metrics off", RINGSIDE_METRICS_HZ=0)
if r:
    by, _, notices = r
    check("metrics off: no notice", not notices, "\n".join(notices))
    no_gpu_series("metrics off", by)

rstest.cleanup(tmp)
rstest.finish()
