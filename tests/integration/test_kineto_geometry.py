#!/usr/bin/env python3
"""Launch geometry from PyTorch profiler (Kineto) traces: `import-kineto`
writes each kernel's grid, block, registers and shared memory, and the GPUs'
deviceProperties, and the report works out blocks, threads per block, SM
coverage and theoretical occupancy from them (occupancy.h).

The truth is Kineto's own, read here with gzip and json: every kernel event
of the real A100 traces carries CUPTI's "blocks per SM" (grid size / SMs)
and "est. achieved occupancy %", which is min(resident blocks per SM, blocks
per SM) x block size / the SM's threads, from NVIDIA's occupancy calculator.
Where the grid holds more blocks per SM than can be resident, that estimate
is the theoretical occupancy, which the report's occupancy_pct must equal
within 1 point (Kineto rounds it to a whole percent). Which kernels qualify
is decided from Kineto's figures alone: a blocks-per-SM product at least a
point above the estimate means the calculator's resident limit chose it.
The calculator counts whole warps, CUPTI threads: kernels whose blocks are
not a whole number of warps are left out of that comparison; and so are
kernels with more shared memory than a block gets without opting in
(sharedMemPerBlock, 48 KiB): Kineto calls the calculator with no opt-in
(maxDynamicSharedSizeBytes 0), which then finds no block resident and
gives 0%, for kernels that ran.

report.json lists a process's 30 longest kernels by name, and one name may
run with several geometries, so each distinct (kernel, device, grid, block,
registers, shared memory) of the traces becomes one kernel of its own name
in small generated traces (30 to a trace, one rank each), keeping its args
as Kineto wrote them, under the source's deviceProperties. Then: a trace
without deviceProperties (PyTorch before 1.x wrote none; the sampled pair
here) gives no geometry and no crash, and odd geometry args none either."""
import glob
import gzip
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import RINGSIDE, ROOT, check, cleanup, finish, report_problems, run, skip, tempdir

DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "kineto")
if not os.path.isdir(DATA):
    DATA = "/work/shared/data/kineto"
TRACES = ["a100-8rank-r3-control.json.gz", "a100-r1-test.json.gz", "a100-2rank-r0-nccl.json.gz"]
PER_TRACE = 30      # report.json's kernel table: a process's 30 longest
GEOM_ARGS = ("device", "stream", "grid", "block", "registers per thread", "shared memory")


def load(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def configs(trace):
    """The distinct launches of a trace's kernels: key -> (Kineto's blocks
    per SM, its occupancy estimate, the args to write)."""
    out = {}
    for e in trace["traceEvents"]:
        if e.get("cat") != "kernel" or "grid" not in e.get("args", {}):
            continue
        a = e["args"]
        key = (e["name"], a["device"], tuple(a["grid"]), tuple(a["block"]), a["registers per thread"],
               a["shared memory"])
        out.setdefault(key, (float(a["blocks per SM"]), a["est. achieved occupancy %"],
                             {k: a[k] for k in GEOM_ARGS}))
    return out


def write_trace(path, rank, devices, kernels):
    """A Kineto trace of one rank holding kernels [(name, args)], one after
    another, under devices (None: no deviceProperties)."""
    events = [{"ph": "X", "cat": "kernel", "name": name, "pid": 1, "tid": 7, "ts": 1000 + 100 * i, "dur": 50,
               "args": dict(args, correlation=i + 1)} for i, (name, args) in enumerate(kernels)]
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 1000}, "traceEvents": events}
    if devices is not None:
        doc["deviceProperties"] = devices
    with open(path, "w") as f:
        json.dump(doc, f)


def import_report(files, work, name):
    """Imports and reports files; (report.json, None) or (None, why)."""
    job, out = os.path.join(work, name), os.path.join(work, name + "-report")
    for cmd in ([RINGSIDE, "import-kineto", "-q", *files, "-o", job], [RINGSIDE, "report", "-q", job, "-o", out]):
        r = run(cmd)
        if r.returncode != 0:
            return None, "%s: exit %d: %s" % (cmd[1], r.returncode, r.stderr.decode(errors="replace").strip())
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f), None


def main():
    if not all(os.path.isfile(os.path.join(DATA, t)) for t in TRACES):
        skip("kineto_geometry", "no " + DATA)
        finish()
    work = tempdir("kineto-geom")

    # The generated traces: each source's launches, 30 to a rank.
    want, files = {}, []
    for source in TRACES:
        trace = load(os.path.join(DATA, source))
        cfgs = sorted(configs(trace).items(), key=lambda kv: repr(kv[0]))
        for at in range(0, len(cfgs), PER_TRACE):
            rank = len(files)
            kernels = []
            for j, (key, (bpsm, est, args)) in enumerate(cfgs[at:at + PER_TRACE]):
                name = "g%d.%d %s" % (rank, j, key[0])
                dev = next(d for d in trace["deviceProperties"] if d["id"] == key[1])
                want[(rank, name)] = (source, key, bpsm, est, dev)
                kernels.append((name, args))
            path = os.path.join(work, "geom-%d.json" % rank)
            write_trace(path, rank, trace["deviceProperties"], kernels)
            files.append(path)
    rep, why = import_report(files, work, "geom")
    if not check("kineto_geometry_report", rep is not None, why):
        cleanup(work)
        finish()
    got = {(p["rank"], k["name"]): k for p in rep["processes"] for k in p["kernels"]}

    shape, coverage, occupancy, bound = [], [], [], []
    compared = {s: 0 for s in TRACES}
    worst = 0.0
    for (rank, name), (source, key, bpsm, est, dev) in sorted(want.items()):
        k = got.get((rank, name))
        label = "%s %s grid %s block %s" % (source, key[0][:60], key[2], key[3])
        if k is None or "occupancy_pct" not in k:
            shape.append("%s: no geometry in the report" % label)
            continue
        blocks, threads = math.prod(key[2]), math.prod(key[3])
        if k["blocks"] != blocks or k["threads_per_block"] != threads:
            shape.append("%s: %s blocks of %s threads" % (label, k["blocks"], k["threads_per_block"]))
        # One wave that holds fewer blocks than SMs: each block an SM of its own.
        if bpsm <= 1 and abs(k["sm_coverage_pct"] - 100 * bpsm) > 0.01:
            coverage.append("%s: SM coverage %.4f%%, Kineto's blocks per SM %.6f" % (label, k["sm_coverage_pct"], bpsm))
        if threads % dev["warpSize"] or key[5] > dev["sharedMemPerBlock"]:
            continue
        # Kineto's estimate is never above the theoretical occupancy.
        if k["occupancy_pct"] < est - 1:
            bound.append("%s: occupancy %.2f%%, below Kineto's estimate %d%%" % (label, k["occupancy_pct"], est))
        if 100 * bpsm * threads / dev["maxThreadsPerMultiprocessor"] < est + 1:
            continue    # the grid, not the SM, limits Kineto's figure
        compared[source] += 1
        diff = abs(k["occupancy_pct"] - est)
        worst = max(worst, diff)
        if diff > 1:
            occupancy.append("%s: occupancy %.2f%%, Kineto %d%%" % (label, k["occupancy_pct"], est))
    report_problems("kineto_geometry_blocks_threads", shape)
    report_problems("kineto_geometry_sm_coverage", coverage)
    report_problems("kineto_geometry_occupancy_bound", bound)
    report_problems("kineto_geometry_occupancy", occupancy)
    # So that the comparison cannot pass by comparing nothing: each trace
    # has 50 or more kernels whose grid fills the GPU.
    check("kineto_geometry_compared", all(n >= 50 for n in compared.values()), compared)
    print("    %d launches; occupancy compared for %d (%s), worst difference %.2f points"
          % (len(want), sum(compared.values()), ", ".join("%s %d" % kv for kv in compared.items()), worst))

    # No deviceProperties: the geometry is there, the limits are not.
    sampled = sorted(glob.glob(os.path.join(DATA, "sampled-2rank", "*.json*")))
    rep, why = import_report(sampled, work, "sampled")
    if check("kineto_geometry_no_devices_report", rep is not None, why):
        problems = []
        for p in rep["processes"]:
            g = p["gpu"]
            if g["sm_activity_source"] != "geometry" or g["no_geometry_pct"] != 100 or g["sm_activity_pct"] != 0:
                problems.append("rank %s: %s" % (p["rank"], {k: g[k] for k in (
                    "sm_activity_source", "no_geometry_pct", "sm_activity_pct")}))
            problems += ["rank %s: %s has geometry" % (p["rank"], k["name"]) for k in p["kernels"]
                         if "occupancy_pct" in k]
        report_problems("kineto_geometry_no_devices", problems)

    # What deviceProperties lack, from NVIDIA's tables (CUDA C++ Programming
    # Guide, "Technical Specifications per Compute Capability"): resident
    # blocks per SM, which bind 1-warp blocks, and the 1 KiB of shared memory
    # the driver keeps per block from 8.0 on, which leaves room for one block
    # of half an A100 SM's shared memory, not two. Devices: (compute
    # capability, threads per SM, shared memory per SM, resident blocks).
    gpus = [((7, 0), 2048, 98304, 32), ((7, 5), 1024, 65536, 16), ((8, 0), 2048, 167936, 32),
            ((8, 6), 1536, 102400, 16), ((8, 9), 1536, 102400, 24), ((9, 0), 2048, 233472, 32)]
    devices, kernels, expect = [], [], {}
    for i, ((major, minor), threads, smem, blocks) in enumerate(gpus):
        devices.append({"id": i, "name": "cc %d.%d" % (major, minor), "computeMajor": major, "computeMinor": minor,
                        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": threads, "regsPerBlock": 65536,
                        "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 100, "regsPerMultiprocessor": 65536,
                        "sharedMemPerBlockOptin": smem - 1024, "sharedMemPerMultiprocessor": smem})
        args = {"device": i, "stream": 7, "grid": [100000, 1, 1], "block": [32, 1, 1], "registers per thread": 16,
                "shared memory": 0}
        kernels.append(("warp-blocks cc %d.%d" % (major, minor), args))
        expect[kernels[-1][0]] = 100.0 * min(blocks, threads // 32) / (threads // 32)
    half = dict(kernels[2][1], block=[128, 1, 1], **{"shared memory": 167936 // 2})
    kernels.append(("half-smem cc 8.0", half))
    expect["half-smem cc 8.0"] = 100.0 * 4 / 64
    path = os.path.join(work, "cc.json")
    write_trace(path, 0, devices, kernels)
    rep, why = import_report([path], work, "cc")
    if check("kineto_geometry_cc_report", rep is not None, why):
        got = {k["name"]: k.get("occupancy_pct") for p in rep["processes"] for k in p["kernels"]}
        report_problems("kineto_geometry_cc_limits", [
            "%s: occupancy %s%%, want %.2f%%" % (n, got.get(n), w) for n, w in sorted(expect.items())
            if got.get(n) is None or abs(got[n] - w) > 0.01])

    # Odd args: no geometry for those kernels, and no crash. The last is
    # well formed but runs on a device the trace does not list.
    trace = load(os.path.join(DATA, TRACES[0]))
    base = {"device": 0, "stream": 7, "grid": [4, 1, 1], "block": [128, 1, 1], "registers per thread": 32,
            "shared memory": 0}
    odd = [dict(base, grid=[4, 1]), dict(base, block=[128, 1, 1, 1]), dict(base, block=["128", 1, 1]),
           dict(base, grid=[[4], 1, 1]), dict(base, block=[70000, 1, 1]), dict(base, grid=[-4, 1, 1]),
           dict(base, **{"registers per thread": -1}), dict(base, **{"shared memory": 1 << 40}),
           dict(base, grid=[[4], 1, 1, 1]), dict(base, grid=None), dict(base, block={"x": 128}),
           dict(base, device=9)]
    path = os.path.join(work, "odd.json")
    write_trace(path, 0, trace["deviceProperties"], [("odd%d" % i, a) for i, a in enumerate(odd)]
                + [("good", base)])
    rep, why = import_report([path], work, "odd")
    if check("kineto_geometry_odd_report", rep is not None, why):
        kernels = {k["name"]: k for p in rep["processes"] for k in p["kernels"]}
        problems = ["%s: %s" % (n, odd[int(n[3:])]) for n, k in kernels.items()
                    if n.startswith("odd") and "occupancy_pct" in k]
        if len(kernels) != len(odd) + 1:
            problems.append("%d kernels in the report, %d in the trace" % (len(kernels), len(odd) + 1))
        if "occupancy_pct" not in kernels.get("good", {}):
            problems.append("the well-formed kernel has no geometry")
        report_problems("kineto_geometry_odd_args", problems)
    cleanup(work)
    finish()


main()
