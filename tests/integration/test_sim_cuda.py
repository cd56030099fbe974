#!/usr/bin/env python3
"""The simulated CUDA driver (build/sim/libcuda.so.1), driven through ctypes: kernel
durations against events and the wall clock, copy durations against bytes/bandwidth,
cuGetProcAddress's choice of ABI and stream variants, graph replay, the truth file."""
import ctypes
import json
import os
import sys
import tempfile
import time

BUILD = os.environ.get("BUILD", "build")
COPY_GBS = 4.0
failed = 0


def check(name, ok, why=""):
    global failed
    if ok:
        print("ok " + name)
    else:
        failed += 1
        print("not ok %s: %s" % (name, why))


tmp = tempfile.mkdtemp(prefix="test_sim_cuda.")
truth_path = os.path.join(tmp, "truth-%p.jsonl")
os.environ["SIMGPU_TRUTH"] = truth_path
os.environ["SIMGPU_COPY_GBS"] = str(COPY_GBS)
os.environ.pop("RANK", None)
cu = ctypes.CDLL(os.path.join(BUILD, "sim", "libcuda.so.1"))
V = ctypes.c_void_p


def call(fn, *args):
    r = getattr(cu, fn)(*args)
    if r != 0:
        raise RuntimeError("%s returned %d" % (fn, r))


def addr(name):
    return ctypes.cast(getattr(cu, name), V).value


call("cuInit", 0)
dev = ctypes.c_int()
call("cuDeviceGet", ctypes.byref(dev), 0)
ctx = V()
call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
call("cuCtxSetCurrent", ctx)
mod = V()
call("cuModuleLoadData", ctypes.byref(mod), b"any bytes")


def func(name):
    f = V()
    call("cuModuleGetFunction", ctypes.byref(f), mod, name.encode())
    return f


def stream():
    s = V()
    call("cuStreamCreate", ctypes.byref(s), 0)
    return s


def event():
    e = V()
    call("cuEventCreate", ctypes.byref(e), 0)
    return e


durations = []  # keeps the uint64 parameters alive until the launch returns


def launch(f, s, ns, fn="cuLaunchKernel"):
    d = ctypes.c_uint64(ns)
    durations.append(d)
    params = (V * 1)(ctypes.cast(ctypes.byref(d), V))
    call(fn, f, 1, 1, 1, 32, 1, 1, 0, s, params, None)


def elapsed_ms(a, b):
    ms = ctypes.c_float()
    call("cuEventElapsedTime_v2", ctypes.byref(ms), a, b)
    return ms.value


# A 200 us kernel, timed by events and by the wall clock. A 5 ms kernel goes first,
# so that the events and the kernel are queued before the GPU reaches them and the
# interpreter's own delays between the calls do not count.
k200, block = func("k200"), func("blocker")
s1 = stream()
e0, e1 = event(), event()
launch(block, s1, 5000000)
call("cuEventRecord", e0, s1)
launch(k200, s1, 200000)
call("cuEventRecord", e1, s1)
busy = cu.cuEventQuery(e1)
call("cuStreamSynchronize", s1)
ms = elapsed_ms(e0, e1)
check("kernel_200us_events", abs(ms - 0.2) < 0.001, "events say %.4f ms" % ms)
check("event_query_not_ready", busy == 600, "cuEventQuery before the kernel ran gave %d" % busy)
check("event_query_done", cu.cuEventQuery(e1) == 0, "cuEventQuery after the sync")
t0 = time.monotonic()
launch(k200, s1, 200000)
call("cuStreamSynchronize", s1)
wall_ms = (time.monotonic() - t0) * 1e3
check("kernel_200us_wall", 0.2 <= wall_ms < 20, "synchronise returned after %.3f ms" % wall_ms)

# Five 2 ms kernels queue up: the synchronisation really waits for all of them.
t0 = time.monotonic()
for _ in range(5):
    launch(k200, s1, 2000000)
call("cuStreamSynchronize", s1)
wall_ms = (time.monotonic() - t0) * 1e3
check("queued_kernels_wall", 10.0 <= wall_ms < 30, "5 x 2 ms took %.3f ms" % wall_ms)

# Copies: 4 MB at COPY_GBS is 1 ms; the bytes really arrive. Moving them takes the
# host time too, so a 30 ms kernel holds the stream while the calls are made.
n = 4000000
host = ctypes.create_string_buffer(bytes(range(256)) * (n // 256), n)
back = ctypes.create_string_buffer(n)
dptr = ctypes.c_uint64()
call("cuMemAlloc_v2", ctypes.byref(dptr), ctypes.c_size_t(n))
launch(block, s1, 30000000)
call("cuEventRecord", e0, s1)
call("cuMemcpyHtoDAsync_v2", dptr, host, ctypes.c_size_t(n), s1)
call("cuEventRecord", e1, s1)
call("cuStreamSynchronize", s1)
ms = elapsed_ms(e0, e1)
check("copy_bytes_over_bandwidth", abs(ms - n / COPY_GBS / 1e6) < 0.001, "4 MB copy took %.4f ms" % ms)
t0 = time.monotonic()
call("cuMemcpyDtoH_v2", back, dptr, ctypes.c_size_t(n))
wall_ms = (time.monotonic() - t0) * 1e3
check("sync_copy_waits", wall_ms >= n / COPY_GBS / 1e6, "cuMemcpyDtoH returned after %.3f ms" % wall_ms)
check("copy_moves_bytes", host.raw == back.raw, "DtoH did not return what HtoD sent")
call("cuMemsetD32Async", dptr, ctypes.c_uint(0x01020304), ctypes.c_size_t(4), s1)
call("cuMemcpyDtoHAsync_v2", back, dptr, ctypes.c_size_t(16), s1)
call("cuStreamSynchronize", s1)
check("memset_sets", back.raw[:16] == bytes([4, 3, 2, 1]) * 4, "got %r" % back.raw[:16])

# A stream that waits on an event starts after the event's work.
s2 = stream()
kslow, kafter = func("slow_on_s1"), func("after_wait_on_s2")
launch(kslow, s1, 1000000)
call("cuEventRecord", e0, s1)
call("cuStreamWaitEvent", s2, e0, 0)
launch(kafter, s2, 100000)
call("cuStreamSynchronize", s2)

# Capture three 300 us kernels, replay the graph twice.
kg = func("graph_kernel")
status = ctypes.c_int()
call("cuStreamBeginCapture_v2", s2, 0)
call("cuStreamIsCapturing", s2, ctypes.byref(status))
check("capture_active", status.value == 1, "capture status %d" % status.value)
for _ in range(3):
    launch(kg, s2, 300000)
graph, exe = V(), V()
call("cuStreamEndCapture", s2, ctypes.byref(graph))
call("cuGraphInstantiateWithFlags", ctypes.byref(exe), graph, ctypes.c_ulonglong(0))
t0 = time.monotonic()
call("cuGraphLaunch", exe, s2)
call("cuGraphLaunch", exe, s2)
call("cuStreamSynchronize", s2)
wall_ms = (time.monotonic() - t0) * 1e3
check("graph_replay_wall", 1.8 <= wall_ms < 20, "two replays of 3 x 300 us took %.3f ms" % wall_ms)
call("cuGraphExecDestroy", exe)
call("cuGraphDestroy", graph)

# The per-thread default stream: a _ptsz launch on stream 0 and its own synchronisation.
t0 = time.monotonic()
launch(func("ptsz_kernel"), None, 500000, "cuLaunchKernel_ptsz")
call("cuStreamSynchronize_ptsz", None)
wall_ms = (time.monotonic() - t0) * 1e3
check("per_thread_stream", 0.5 <= wall_ms < 20, "took %.3f ms" % wall_ms)

# cuGetProcAddress_v2: versions, per-thread variants, symbolStatus.
get = cu.cuGetProcAddress_v2
get.argtypes = [ctypes.c_char_p, ctypes.POINTER(V), ctypes.c_int, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
PTDS = 2


def proc(name, version, flags=0):
    fn, st = V(), ctypes.c_int(-1)
    r = get(name.encode(), ctypes.byref(fn), version, flags, ctypes.byref(st))
    return r, fn.value, st.value


for name, version, flags, want in [
    ("cuMemAlloc", 13000, 0, "cuMemAlloc_v2"),
    ("cuCtxCreate", 13000, 0, "cuCtxCreate_v4"),
    ("cuEventElapsedTime", 13000, 0, "cuEventElapsedTime_v2"),
    ("cuEventElapsedTime", 12000, 0, "cuEventElapsedTime"),
    ("cuStreamDestroy", 13000, 0, "cuStreamDestroy_v2"),
    ("cuLaunchKernel", 13000, 0, "cuLaunchKernel"),
    ("cuLaunchKernel", 13000, PTDS, "cuLaunchKernel_ptsz"),
    ("cuMemcpyHtoD", 13000, PTDS, "cuMemcpyHtoD_v2_ptds"),
    ("cuStreamSynchronize", 13000, PTDS, "cuStreamSynchronize_ptsz"),
    ("cuEventQuery", 13000, PTDS, "cuEventQuery"),
    ("cuGraphInstantiate", 13000, 0, "cuGraphInstantiateWithFlags"),
    ("cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2"),
]:
    r, fn, st = proc(name, version, flags)
    check("procaddr_%s_%d%s" % (name, version, "_ptds" if flags else ""),
          r == 0 and st == 0 and fn == addr(want), "r=%d status=%d, not %s" % (r, st, want))
r, fn, st = proc("cuNoSuchFunction", 13000)
check("procaddr_not_found", r == 500 and st == 1 and fn is None, "r=%d status=%d" % (r, st))
r, fn, st = proc("cuLibraryLoadData", 11080)
check("procaddr_version_not_sufficient", r == 500 and st == 2, "r=%d status=%d" % (r, st))
table = V()
check("export_table_not_supported", cu.cuGetExportTable(ctypes.byref(table), None) == 801,
      "cuGetExportTable must say CUDA_ERROR_NOT_SUPPORTED")
name = ctypes.c_char_p()
call("cuGetErrorName", 1, ctypes.byref(name))
check("error_name", name.value == b"CUDA_ERROR_INVALID_VALUE", repr(name.value))
fname = ctypes.c_char_p()
call("cuFuncGetName", ctypes.byref(fname), k200)
check("func_name", fname.value == b"k200", repr(fname.value))

# The truth file: one line per kernel, copy and memset, with the model's times.
call("cuCtxSynchronize")
with open(truth_path.replace("%p", str(os.getpid()))) as f:
    lines = [json.loads(line) for line in f]
kernels = [t for t in lines if t["kind"] == "kernel"]
k = [t for t in kernels if t["name"] == "k200"]
check("truth_kernel", len(k) == 7 and k[0]["end_ns"] - k[0]["start_ns"] == 200000,
      "k200 lines: %r" % k[:1])
copies = [t for t in lines if t["kind"] == "memcpy" and t["bytes"] == n]
check("truth_copy", len(copies) == 2 and {c["direction"] for c in copies} == {"HtoD", "DtoH"}
      and all(c["end_ns"] - c["start_ns"] == round(n / COPY_GBS) for c in copies), "copies: %r" % copies)
check("truth_memset", any(t["kind"] == "memset" and t["bytes"] == 16 for t in lines), "no memset line")
slow = [t for t in kernels if t["name"] == "slow_on_s1"][0]
after = [t for t in kernels if t["name"] == "after_wait_on_s2"][0]
check("truth_stream_wait", after["start_ns"] >= slow["end_ns"] and after["stream"] != slow["stream"],
      "waiting kernel started at %d, awaited one ended at %d" % (after["start_ns"], slow["end_ns"]))
g = [t for t in kernels if t["name"] == "graph_kernel"]
check("truth_graph_replay", len(g) == 6 and all(t.get("graph") for t in g)
      and all(b["start_ns"] >= a["end_ns"] for a, b in zip(g, g[1:])), "graph lines: %d" % len(g))
check("truth_fields", all({"pid", "rank", "stream", "kind", "name", "bytes", "start_ns", "end_ns"} <= set(t)
                          and t["pid"] == os.getpid() and t["rank"] is None for t in lines), "missing fields")
sys.exit(1 if failed else 0)
