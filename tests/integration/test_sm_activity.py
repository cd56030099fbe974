#!/usr/bin/env python3
"""Is the GPU really working? SM activity from launch geometry, held against
the simulated GPU's own model of blocks on SMs (its truth file: per kernel,
blocks, blocks per SM, waves, SM coverage and occupancy, and the times), and
against first principles where the geometry makes them plain:

- one rank of simtrain on the simulated 132-SM GPU with --kernel-blocks 33:
  busy as the truth's union within 2 points (and most of the GPU span); SM activity a quarter of the compute share
  within 3 points and within 1 point of the truth file's own SM-time
  integral; low_sm_activity fires and names the kernels with their
  geometry; the kernel table's blocks, threads per block and SM coverage as
  the truth has them;
- --kernel-blocks 528: SM activity equals the compute share within 3
  points, and the finding does not fire;
- 128 registers per thread (SIMGPU_REGS): 2 blocks of 256 threads fit on
  an SM, theoretical occupancy 25%, as the truth's blocks_per_sm says; 1,000
  blocks then run in 3.8 waves (1,000 / 264);
- the stand-in NVML (build/sim/libnvidia-ml.so.1) sampled by the agent:
  sm_activity_source "nvml-gpm", and the same answers within 3 points;
- per-rank SM activity in the timeline (sm_active_pct) and the page's SM
  activity card."""
import json
import os

from rstest import AGENT, BUILD, RINGSIDE, check, cleanup, finish, run, skip, tempdir
from simtruth import length, union

TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
NVML = os.path.join(SIM, "libnvidia-ml.so.1")
SMS = 132


def job(d, name, args, env_extra=None, nvml=False):
    """One rank of simtrain under the agent: (report.json, truth lines) or None."""
    base = os.path.join(d, name)
    os.makedirs(base)
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "LD_PRELOAD"):
        env.pop(k, None)
    lib = SIM
    if not nvml:
        # the simulator's libraries without its stand-in NVML beside them
        lib = os.path.join(base, "lib")
        os.makedirs(lib)
        for so in ("libcuda.so.1", "libnccl.so.2"):
            os.symlink(os.path.join(SIM, so), os.path.join(lib, so))
    env.update(LD_LIBRARY_PATH=lib, SIMGPU_TRUTH=os.path.join(base, "truth"),
               RINGSIDE_OUT=os.path.join(base, "trace"), LD_PRELOAD=AGENT, RINGSIDE_METRICS_HZ="20")
    env.update(env_extra or {})
    p = run([TRAIN, "--ckpt-dir", base] + args, env=env, cwd=base, timeout=120)
    if not check(name + ": simtrain runs", p.returncode == 0, p.stderr.decode()[-300:]):
        return None
    out = os.path.join(base, "report")
    p = run([RINGSIDE, "report", os.path.join(base, "trace"), "-o", out, "-q"])
    if not check(name + ": ringside report", p.returncode == 0, p.stderr.decode()[-300:]):
        return None
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    with open(os.path.join(base, "truth")) as f:
        truth = [json.loads(x) for x in f if x.strip()]
    return rep, [t for t in truth if t.get("kind") != "step"], out


def truth_sm(truth):
    """(compute %, SM activity %) of the GPU span from the simulator's own
    model: the union of compute kernels, and the integral of the SM coverage
    of everything running (summed, capped at 1), both over first start to
    last end of the GPU work."""
    ops = [t for t in truth if t["end_ns"] > t["start_ns"]]
    lo, hi = min(t["start_ns"] for t in ops), max(t["end_ns"] for t in ops)
    compute = union((t["start_ns"], t["end_ns"]) for t in ops
                    if t["kind"] == "kernel" and not t["name"].startswith("nccl"))
    edges = []
    for t in ops:
        cov = t.get("sm_coverage", 0)
        if cov:
            edges += [(t["start_ns"], cov), (t["end_ns"], -cov)]
    edges.sort()
    active, cov, prev = 0.0, 0.0, None
    for at, d in edges:
        if prev is not None and at > prev:
            active += (at - prev) * min(1.0, cov)
        cov += d
        prev = at
    return 100.0 * length(compute) / (hi - lo), 100.0 * active / (hi - lo)


def truth_busy(truth):
    """The GPU's busy share of its span in the simulator's truth: the union
    of everything it ran, first start to last end."""
    ops = [t for t in truth if t["end_ns"] > t["start_ns"]]
    lo, hi = min(t["start_ns"] for t in ops), max(t["end_ns"] for t in ops)
    return 100.0 * length(union((t["start_ns"], t["end_ns"]) for t in ops)) / (hi - lo)


def proc(rep):
    return [p for p in rep["processes"] if p.get("gpu", {}).get("span_us")][0]


def finding(rep, fid):
    return [f for f in rep["findings"] if f["id"] == fid]


def main():
    d = tempdir("sm")
    small = job(d, "blocks33", ["--steps", "30", "--kernel-blocks", "33"])
    if small:
        rep, truth, out = small
        g, p = proc(rep)["gpu"], proc(rep)
        comp_t, sm_t = truth_sm(truth)
        # how busy the GPU is depends on how fast the host launches (a busy
        # machine leaves gaps): held against the simulator's own union
        busy_t = truth_busy(truth)
        check("33 blocks: busy %.1f%% of the GPU span, the simulator's %.1f%% within 2 points, most of it"
              % (g["busy_pct"], busy_t), abs(g["busy_pct"] - busy_t) <= 2 and busy_t > 50)
        check("33 blocks: SM activity %.2f%% a quarter of compute %.2f%% (%.2f) within 3 points"
              % (g["sm_activity_pct"], g["compute_pct"], g["compute_pct"] / 4),
              abs(g["sm_activity_pct"] - g["compute_pct"] / 4) <= 3)
        check("33 blocks: SM activity %.2f%% against the simulator's own %.2f%% (within 1 point)"
              % (g["sm_activity_pct"], sm_t), abs(g["sm_activity_pct"] - sm_t) <= 1)
        check("33 blocks: compute %.2f%% against the simulator's %.2f%% (within 1 point)"
              % (g["compute_pct"], comp_t), abs(g["compute_pct"] - comp_t) <= 1)
        check("33 blocks: source geometry, no busy time without it",
              g["sm_activity_source"] == "geometry" and g["no_geometry_pct"] < 0.5, json.dumps(g)[:300])
        f = finding(rep, "low_sm_activity")
        check("33 blocks: low_sm_activity fires", len(f) == 1, [x["id"] for x in rep["findings"]])
        if f:
            ev = f[0]["evidence"]
            check("33 blocks: the finding names the kernels and their geometry",
                  "bwd_gemm" in ev and "33 blocks of 256 threads" in ev and "25% of SMs" in ev, ev)
        tk = {t["name"]: t for t in truth if t["kind"] == "kernel"}
        ks = [k for k in p["kernels"] if k["name"] in tk and not k["name"].startswith("nccl")]
        bad = [k["name"] for k in ks
               if k.get("blocks") != tk[k["name"]]["blocks"]
               or k.get("threads_per_block") != tk[k["name"]]["threads_per_block"]
               or abs(k.get("sm_coverage_pct", -1) - 100 * tk[k["name"]]["sm_coverage"]) > 0.01]
        check("33 blocks: %d kernels' blocks, threads and SM coverage as the truth has them" % len(ks),
              ks and not bad, bad)
        nccl = [k for k in p["kernels"] if k["name"].startswith("nccl")]
        check("33 blocks: the NCCL kernel's 16 channels hold 16 of 132 SMs",
              nccl and abs(nccl[0].get("sm_coverage_pct", 0) - 100 * 16 / SMS) < 0.01,
              nccl[:1])
        tl = rep["timeline"]["ranks"][0]
        check("33 blocks: the timeline has SM activity per bin, at most 25% beside compute",
              "sm_active_pct" in tl and 0 < max(tl["sm_active_pct"]) <= 25.0 + 100 * 16 / SMS,
              sorted(tl)[:8])
        with open(os.path.join(out, "index.html")) as fh:
            page = fh.read()
        check("33 blocks: the page's first screen says busy and SM activity",
              ">SM activity</div>" in page and "busy %.0f%%, SM activity %.0f%% (launch geometry)" % (g["busy_pct"], g["sm_activity_pct"])
              in page)

    full = job(d, "blocks528", ["--steps", "30", "--kernel-blocks", "528"])
    if full:
        rep, truth, _ = full
        g = proc(rep)["gpu"]
        _, sm_t = truth_sm(truth)
        check("528 blocks: SM activity %.2f%% equals compute %.2f%% within 3 points"
              % (g["sm_activity_pct"], g["compute_pct"]), abs(g["sm_activity_pct"] - g["compute_pct"]) <= 3)
        check("528 blocks: SM activity %.2f%% against the simulator's %.2f%% (within 1 point)"
              % (g["sm_activity_pct"], sm_t), abs(g["sm_activity_pct"] - sm_t) <= 1)
        check("528 blocks: low_sm_activity does not fire", not finding(rep, "low_sm_activity"),
              [x["id"] for x in rep["findings"]])

    regs = job(d, "regs128", ["--steps", "5", "--kernel-blocks", "1000"], {"SIMGPU_REGS": "128"})
    if regs:
        rep, truth, _ = regs
        k = [k for k in proc(rep)["kernels"] if k["name"].startswith("bwd_gemm")][0]
        t = [t for t in truth if t["name"] == k["name"]][0]
        want_occ = 100.0 * t["blocks_per_sm"] * 8 / 64
        check("128 registers: occupancy %.1f%% against the truth's %d blocks per SM (%.1f%%), 25%%"
              % (k["occupancy_pct"], t["blocks_per_sm"], want_occ),
              abs(k["occupancy_pct"] - want_occ) < 0.01 and t["blocks_per_sm"] == 2)
        check("128 registers: %.3f waves, 1000 / (132 x 2); the truth's %d"
              % (k["waves"], t["waves"]), abs(k["waves"] - 1000 / 264) < 0.001 and t["waves"] == 4)
        # 3 full waves hold every SM, the last 208 blocks all 132 too
        check("128 registers: SM coverage %.1f%%, as the truth's %.1f%%"
              % (k["sm_coverage_pct"], 100 * t["sm_coverage"]),
              abs(k["sm_coverage_pct"] - 100 * t["sm_coverage"]) < 0.01)

    if not os.path.exists(NVML):
        skip("stand-in NVML", "build/sim/libnvidia-ml.so.1 not built")
    else:
        for blocks, ratio in ((33, 0.25), (528, 1.0)):
            # about a second of GPU work: 20 samples at 20 Hz
            r = job(d, "nvml%d" % blocks, ["--steps", "40", "--fwd-us", "2000", "--bwd-us", "4000",
                                           "--kernel-blocks", str(blocks)], nvml=True)
            if not r:
                continue
            rep, truth, _ = r
            g = proc(rep)["gpu"]
            check("%d blocks, NVML: source nvml-gpm" % blocks, g["sm_activity_source"] == "nvml-gpm",
                  json.dumps(g)[:300])
            check("%d blocks, NVML: SM activity %.2f%% against compute %.2f%% x %.2f within 3 points"
                  % (blocks, g["sm_activity_pct"], g["compute_pct"], ratio),
                  abs(g["sm_activity_pct"] - g["compute_pct"] * ratio) <= 3)
            check("%d blocks, NVML: measured %.2f%% and geometry %.2f%% within 3 points"
                  % (blocks, g["sm_activity_pct"], g["sm_activity_geometry_pct"]),
                  abs(g["sm_activity_pct"] - g["sm_activity_geometry_pct"]) <= 3)
            fired = bool(finding(rep, "low_sm_activity"))
            check("%d blocks, NVML: low_sm_activity %s" % (blocks, "fires" if ratio < 1 else "does not fire"),
                  fired == (ratio < 1), [x["id"] for x in rep["findings"]])
    cleanup(d)
    finish()


if __name__ == "__main__":
    main()
