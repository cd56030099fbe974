#!/usr/bin/env python3
"""CUDA driver capture along every path a program reaches the driver by
(tests/programs/cuda_paths.c): the exported symbols, dlsym on a dlopen'ed
libcuda.so.1 (Triton), cuGetProcAddress_v2 and cuGetProcAddress with and
without the per-thread default stream flag (the CUDA runtime, hence PyTorch
and cudaGetDriverEntryPoint). Held against the simulator's truth file and the
program's own counts: kernels, copies and sets with bytes and direction, GPU
times, the per-thread flag, graph capture (flagged, untimed) and graph
launches, blocking waits at least as long as the work they waited for."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import check, report_problems  # noqa: E402

PROGRAM = os.path.join(rstest.PROG, "cuda_paths")
if not os.path.exists(os.path.join(capture.SIM, "libcuda.so.1")) or not os.path.exists(PROGRAM):
    rstest.skip("driver capture", "build/sim or build/tests/prog/cuda_paths is not built")
    rstest.finish()

tmp = rstest.tempdir("capture-driver")
MODES = [("exported", None), ("triton", None), ("procaddr", "legacy"), ("procaddr", "ptsz"),
         ("procaddr1", "legacy"), ("procaddr1", "ptsz")]

for mode, flag in MODES:
    name = mode + (" " + flag if flag else "")
    out = os.path.join(tmp, name.replace(" ", "-"))
    tdir = out + "-truth"
    os.makedirs(out)
    os.makedirs(tdir)
    p = rstest.run([PROGRAM, mode] + ([flag] if flag else []), env=capture.sim_env(out, tdir))
    traces = rstest.trace_files(out)
    if not check(name + ": program runs, one trace", p.returncode == 0 and len(traces) == 1,
                 "status %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-300:])):
        continue
    did = dict(kv.split("=") for kv in p.stdout.decode().split())
    did = {k: int(v) for k, v in did.items()}
    by, rc = capture.records(traces[0])
    tl = capture.truth(tdir, by["meta"][0]["pid"])
    gpu = by.get("gpu", [])
    report_problems(name + ": kernels, copies and sets against the truth", capture.gpu_problems(tl, gpu))

    def count(kind, captured=False):
        return sum(1 for g in gpu if g["kind"] == kind and bool(g["flags"] & capture.FLAG_CAPTURED) == captured)
    check(name + ": every launch, copy, set and graph launch recorded (the program's counts)",
          count("kernel") == did["kernels"] and count("kernel", True) == did["captured"]
          and count("memcpy") == did["copies"] and count("memset") == did["sets"]
          and count("graph") == did["graphs"],
          "agent kernels %d captured %d copies %d sets %d graphs %d, program %r" % (
              count("kernel"), count("kernel", True), count("memcpy"), count("memset"), count("graph"), did))
    ptsz = flag == "ptsz"
    wrong = [g for g in gpu if bool(g["flags"] & capture.FLAG_PTSZ) != ptsz]
    check(name + ": per-thread stream flag %s on every event" % ("set" if ptsz else "clear"), not wrong,
          "%d events wrong, e.g. %r" % (len(wrong), wrong[:1]))
    cap = [g for g in gpu if g["flags"] & capture.FLAG_CAPTURED]
    check(name + ": captured launches flagged, untimed, named",
          cap and all(g["gpu_start_ns"] == 0 and g["gpu_end_ns"] == 0 and g["kind"] == "kernel"
                      and g.get("name_text") == "paths_kernel_b" for g in cap), "%r" % cap[:1])
    # A graph launch spans the replayed work of that launch (truth graph lines).
    replay = sorted((t for t in tl if t.get("graph")), key=lambda t: t["start_ns"])
    graphs = sorted((g for g in gpu if g["kind"] == "graph"), key=lambda g: g["launch_ns"])
    probs = []
    per = did["captured"]
    if len(replay) != per * len(graphs):
        probs.append("%d replayed operations for %d graph launches" % (len(replay), len(graphs)))
    else:
        for i, g in enumerate(graphs):
            ops = replay[i * per:(i + 1) * per]
            # as any launch (capture.start_window, capture.end_ok): the end
            # event completes at the work's end or, when the call outlasted
            # it, at the call's
            t = {"launch_ns": ops[0]["launch_ns"], "start_ns": ops[0]["start_ns"], "end_ns": ops[-1]["end_ns"]}
            early, late = capture.start_window(g, t)
            start_ok = early <= g["gpu_start_ns"] <= late
            if not start_ok or not capture.end_ok(g, t):
                probs.append("graph launch %d: GPU %d..%d, replayed work %d..%d, call %d..%d" % (
                    i, g["gpu_start_ns"], g["gpu_end_ns"], ops[0]["start_ns"], ops[-1]["end_ns"],
                    g["launch_ns"], g["launch_ns"] + g["call_ns"]))
    report_problems(name + ": graph launches timed as their replayed work", probs)
    syncs = by.get("sync", [])
    kinds = sorted(s["kind"] for s in syncs)
    check(name + ": waits recorded (2 stream, 1 event, 2 context, 8 synchronous copies and sets, "
          "1 stream waiting for an event)",
          kinds == sorted(["stream"] * 2 + ["event", "context", "context", "stream_wait_event"] + ["memcpy"] * 8),
          "kinds %r" % kinds)
    # The stream wait: on the stream of the next launch after it (truth), and it
    # did not block the host until the event's 5 ms kernel ended.
    swe = [s for s in syncs if s["kind"] == "stream_wait_event"]
    if swe:
        w = swe[0]
        after = sorted((t for t in tl if t["launch_ns"] > w["start_ns"] and not t.get("graph")),
                       key=lambda t: t["launch_ns"])
        waited = [t for t in tl if t["launch_ns"] < w["start_ns"] and t.get("name") == "paths_kernel_b"
                  and t["end_ns"] - t["start_ns"] == 5000000]
        check(name + ": stream wait on the waiting stream, not blocking the host",
              after and waited and w["target"] == after[0]["stream"]
              and w["start_ns"] + w["dur_ns"] < waited[-1]["end_ns"],
              "wait %r, next launch %r, event's kernel %r" % (w, after[:1], waited[-1:]))
    # Each wait lasts at least until the work it waited for ended (truth):
    # the stream's or, for the context, every stream's last work before it.
    probs = []
    for s in syncs:
        if s["kind"] in ("memcpy", "stream_wait_event"):
            continue
        before = [t["end_ns"] for t in tl if t["launch_ns"] < s["start_ns"] and
                  (s["kind"] == "context" or s["kind"] == "event" or t["stream"] == s["target"])]
        need = max(before) - s["start_ns"]
        if s["dur_ns"] + capture.TOL_NS < need:
            probs.append("%s wait at %d blocked %d ns, the work needed %d ns" % (s["kind"], s["start_ns"],
                                                                                s["dur_ns"], need))
    long_wait = [s for s in syncs if s["kind"] == "stream" and s["dur_ns"] >= 49000000]
    if not long_wait:
        probs.append("no stream wait of at least 49 ms behind the 50 ms kernel")
    report_problems(name + ": waits blocked as long as the GPU work", probs)
    mems = by.get("mem", [])
    check(name + ": memory calls (2 device, 1 host allocation, each freed)",
          sorted(m["kind"] for m in mems) == ["alloc", "alloc", "alloc_host", "free", "free", "free_host"]
          and all(m["bytes"] == 1 << 20 for m in mems if m["kind"].startswith("alloc")),
          "%r" % [(m["kind"], m["bytes"]) for m in mems])

# Exit with work in flight: the agent waits a bounded time (2 s) for GPU
# times, writes what it knows, and never holds the program's exit for long.
out = os.path.join(tmp, "pending")
tdir = out + "-truth"
os.makedirs(out)
os.makedirs(tdir)
t0 = time.monotonic()
p = rstest.run([PROGRAM, "procaddr", "legacy", "pending"], env=capture.sim_env(out, tdir))
took = time.monotonic() - t0
traces = rstest.trace_files(out)
if check("pending: program exits with a 10 s kernel in flight, in less than 5 s",
         p.returncode == 0 and len(traces) == 1 and took < 5, "status %d, %.1f s, %d traces" %
         (p.returncode, took, len(traces))):
    by, rc = capture.records(traces[0])
    tl = capture.truth(tdir, by["meta"][0]["pid"])
    gpu = sorted(by.get("gpu", []), key=lambda g: g["launch_ns"])
    short = [t for t in tl if t["end_ns"] - t["start_ns"] == 100000000]
    ok = len(gpu) == 2 and by["chunk"][-1]["end"] and gpu[1]["gpu_end_ns"] == 0 and short and \
        abs(gpu[0]["gpu_end_ns"] - short[0]["end_ns"]) <= capture.TOL_NS
    check("pending: the 100 ms kernel timed, the 10 s one recorded untimed, end chunk written", ok,
          "%r" % [(g["name_text"], g["gpu_start_ns"], g["gpu_end_ns"]) for g in gpu])

# Without a driver or NCCL loaded, the agent's wrappers do not make the
# symbols appear (a program probing with dlsym sees what it would see without
# the agent); with them loaded, they do.
PROBE = r"""
import ctypes, os, sys
here = ctypes.CDLL(None)
names = ["cuLaunchKernel", "cuInit", "cuGetProcAddress_v2", "ncclAllReduce", "ncclCommInitRank"]
before = [hasattr(here, n) for n in names]
ctypes.CDLL(os.path.join(sys.argv[1], "libnccl.so.2"), mode=ctypes.RTLD_GLOBAL)
after = [hasattr(here, n) for n in names]
print(before, after)
"""
out = os.path.join(tmp, "probe")
os.makedirs(out)
env = rstest.traced_env(out)
env.pop("LD_LIBRARY_PATH", None)
p = rstest.run([rstest.PYTHON, "-c", PROBE, capture.SIM], env=env)
res = p.stdout.decode().strip()
want = str([False] * 5) + " " + str([True] * 5)
check("absent libraries: symbols not shown before libcuda/libnccl are loaded, shown after",
      p.returncode == 0 and res == want and "ringside:" not in p.stderr.decode(),
      "status %d, %r, stderr %r" % (p.returncode, res, p.stderr.decode(errors="replace")[-300:]))

# The agent's dlsym keeps RTLD_NEXT relative to the caller (it hands the
# lookup on as a tail call, so the C library sees the caller's address).
out = os.path.join(tmp, "next")
os.makedirs(out)
p = rstest.run([os.path.join(rstest.PROG, "dlsym_next")], env=rstest.traced_env(out))
check("dlsym(RTLD_NEXT) from the program still finds the next definition after the program",
      p.returncode == 0 and p.stdout.decode().strip() == "same", "status %d, %r" % (p.returncode, p.stdout))

rstest.cleanup(tmp)
rstest.finish()
