#!/usr/bin/env python3
"""The simulated NCCL (build/sim/libnccl.so.2): collective durations against the
nccl-tests formulas, a slow rank making the others wait (in one process and across
processes via simlaunch and simtrain), grouped sends and receives, and a dead or
missing rank failing the others with a clear error instead of hanging them."""
import ctypes
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("BUILD", "build")
SIM = os.path.join(BUILD, "sim")
ALPHA_US, BW_GBS = 5.0, 50.0
V = ctypes.c_void_p
failed = 0


def check(name, ok, why=""):
    global failed
    if ok:
        print("ok " + name)
    else:
        failed += 1
        print("not ok %s: %s" % (name, why))


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def load():
    """libcuda and libnccl through ctypes, a current context and a kernel function."""
    cu = ctypes.CDLL(os.path.join(SIM, "libcuda.so.1"))
    nccl = ctypes.CDLL(os.path.join(SIM, "libnccl.so.2"))
    for name in ("ncclAllReduce", "ncclReduceScatter"):
        getattr(nccl, name).argtypes = [V, V, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, V, V]
    nccl.ncclAllGather.argtypes = [V, V, ctypes.c_size_t, ctypes.c_int, V, V]
    nccl.ncclAlltoAll.argtypes = [V, V, ctypes.c_size_t, ctypes.c_int, V, V]
    for name in ("ncclBroadcast", "ncclGather", "ncclScatter"):
        getattr(nccl, name).argtypes = [V, V, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, V, V]
    nccl.ncclReduce.argtypes = [V, V, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, V, V]
    nccl.ncclSend.argtypes = [V, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, V, V]
    nccl.ncclRecv.argtypes = [V, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, V, V]
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(V), ctypes.c_int, UniqueId, ctypes.c_int]
    nccl.ncclCommDestroy.argtypes = [V]
    assert cu.cuInit(0) == 0
    ctx = V()
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    assert cu.cuCtxSetCurrent(ctx) == 0
    mod, fn = V(), V()
    assert cu.cuModuleLoadData(ctypes.byref(mod), b"m") == 0
    assert cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"slow_kernel") == 0
    return cu, nccl, fn


def stream(cu):
    s = V()
    assert cu.cuStreamCreate(ctypes.byref(s), 0) == 0
    return s


def launch(cu, fn, s, ns):
    d = ctypes.c_uint64(ns)
    params = (V * 1)(ctypes.cast(ctypes.byref(d), V))
    assert cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, None) == 0


def read_truth(pattern):
    out = []
    for path in glob.glob(pattern):
        with open(path) as f:
            out += [json.loads(line) for line in f]
    return out


def rank_helper(rank, mode):
    """One rank of the dead/missing-rank checks, run in a child process."""
    cu, nccl, _ = load()
    uid = UniqueId()
    uid.internal = bytes.fromhex(os.environ["TEST_UID"])
    comm = V()
    assert nccl.ncclCommInitRank(ctypes.byref(comm), 2, uid, rank) == 0
    if rank == 1:
        if mode == "late":
            time.sleep(4)
        os._exit(0)
    s = stream(cu)
    assert nccl.ncclAllReduce(None, None, 1024, 7, 0, comm, s) == 0
    t0 = time.monotonic()
    r = cu.cuStreamSynchronize(s)
    print("sync=%d after=%.2f" % (r, time.monotonic() - t0), flush=True)
    os._exit(0)


def busbw_factor(op, n):
    return {"AllReduce": 2.0 * (n - 1) / n, "Broadcast": 1.0, "Reduce": 1.0, "Send": 1.0,
            "Recv": 1.0}.get(op, (n - 1) / n)


def in_process_checks(tmp):
    cu, nccl, fn = load()
    # Two ranks in one process: rank 0 is 3 ms behind; rank 1's AllReduce waits for it.
    comms = (V * 3)()
    assert nccl.ncclCommInitAll(comms, 2, None) == 0
    s0, s1 = stream(cu), stream(cu)
    t0 = time.monotonic()
    launch(cu, fn, s0, 3000000)
    assert nccl.ncclAllReduce(None, None, 1 << 20, 7, 0, comms[0], s0) == 0
    assert nccl.ncclAllReduce(None, None, 1 << 20, 7, 0, comms[1], s1) == 0
    r = cu.cuStreamSynchronize(s1)
    wall_ms = (time.monotonic() - t0) * 1e3
    check("allreduce_waits_for_slow_rank", r == 0 and wall_ms >= 3.0, "rc %d after %.3f ms" % (r, wall_ms))
    assert cu.cuStreamSynchronize(s0) == 0
    for c in comms[:2]:
        assert nccl.ncclCommDestroy(c) == 0

    # Three ranks, every collective once; durations against nccl-tests' definitions.
    assert nccl.ncclCommInitAll(comms, 3, None) == 0
    streams = [stream(cu) for _ in range(3)]
    count, n = 1 << 18, 3
    for r in range(3):
        c, s = comms[r], streams[r]
        assert nccl.ncclAllReduce(None, None, count, 7, 0, c, s) == 0
        assert nccl.ncclAllGather(None, None, count, 7, c, s) == 0
        assert nccl.ncclReduceScatter(None, None, count, 7, 0, c, s) == 0
        assert nccl.ncclBroadcast(None, None, count, 7, 0, c, s) == 0
        assert nccl.ncclReduce(None, None, count, 7, 0, 1, c, s) == 0
        assert nccl.ncclAlltoAll(None, None, count, 7, c, s) == 0
        assert nccl.ncclGather(None, None, count, 7, 2, c, s) == 0
        assert nccl.ncclScatter(None, None, count, 7, 0, c, s) == 0
    # A ring of sends and receives in one group.
    assert nccl.ncclGroupStart() == 0
    for r in range(3):
        assert nccl.ncclSend(None, count, 7, (r + 1) % 3, comms[r], streams[r]) == 0
        assert nccl.ncclRecv(None, count, 7, (r + 2) % 3, comms[r], streams[r]) == 0
    assert nccl.ncclGroupEnd() == 0
    for s in streams:
        assert cu.cuStreamSynchronize(s) == 0
    for c in comms:
        assert nccl.ncclCommDestroy(c) == 0

    lines = read_truth(os.path.join(tmp, "inproc-*.jsonl"))
    colls = [t for t in lines if t["kind"] == "collective" and t["nranks"] == 3]
    whole = {"AllReduce": 1, "Broadcast": 1, "Reduce": 1}
    for op in ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "AlltoAll", "Gather", "Scatter"):
        mine = [t for t in colls if t["op"] == op]
        nbytes = count * 4 * (1 if op in whole else n)
        want_ns = ALPHA_US * 1e3 + nbytes * busbw_factor(op, n) / BW_GBS
        ok = len(mine) == 3 and all(t["bytes"] == nbytes and abs(t["end_ns"] - t["start_ns"] - want_ns) <= 1
                                    for t in mine)
        ok = ok and len({(t["start_ns"], t["end_ns"]) for t in mine}) == 1
        check("duration_" + op, ok, "want %d bytes in %.0f ns, got %r" %
              (nbytes, want_ns, [(t["bytes"], t["end_ns"] - t["start_ns"]) for t in mine]))
    busbw = [t["bytes"] * busbw_factor(t["op"], n) / (t["end_ns"] - t["start_ns"] - ALPHA_US * 1e3)
             for t in colls]
    check("busbw_equals_setting", busbw and all(abs(b / BW_GBS - 1) < 0.01 for b in busbw),
          "busbw %r, set %g GB/s" % (busbw, BW_GBS))
    p2p = [t for t in lines if t["kind"] == "p2p"]
    want_ns = ALPHA_US * 1e3 + count * 4 / BW_GBS
    check("group_sendrecv_ring", len(p2p) == 6 and sorted(t["op"] for t in p2p) == ["Recv"] * 3 + ["Send"] * 3
          and all(abs(t["end_ns"] - t["start_ns"] - want_ns) <= 1 for t in p2p)
          and all(t["peer"] == (t["rank"] + (1 if t["op"] == "Send" else 2)) % 3 for t in p2p),
          "p2p lines: %r" % [(t["rank"], t["op"], t["peer"]) for t in p2p])


def lost_rank_check(name, mode, timeout_s, want_words):
    cu, nccl, _ = load()
    uid = UniqueId()
    assert nccl.ncclGetUniqueId(ctypes.byref(uid)) == 0
    env = dict(os.environ, TEST_UID=bytes(uid.internal).hex(), SIMNCCL_TIMEOUT_S=str(timeout_s))
    env.pop("SIMGPU_TRUTH", None)
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(r), mode], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    try:
        out, err = procs[0].communicate(timeout=30)
        procs[1].communicate(timeout=30)
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        check(name, False, "rank 0 hung")
        return
    ok = "sync=702" in out and want_words in err
    if ok:
        after = float(out.split("after=")[1])
        ok = after < timeout_s + 3
    check(name, ok, "rank 0 said %r / %r" % (out.strip(), err.strip()))


def straggler_checks(tmp):
    """Three ranks of simtrain; rank 1's kernels last 3 times longer. Each step starts
    with 2 x (1 + 2) ms of kernels, so at each step's first AllReduce the others wait
    (3 - 1) x 6 ms, plus (3 - 1) x 0.5 ms because its optimizer step (fwd/2) ended
    later in the step before."""
    env = dict(os.environ, SIMGPU_TRUTH=os.path.join(tmp, "train-%p.jsonl"), SIMNCCL_ALPHA_US="0",
               SIMNCCL_TIMEOUT_S="20")
    cmd = [os.path.join(BUILD, "simlaunch"), "-n", "3", "--", os.path.join(BUILD, "simtrain"),
           "--steps", "5", "--layers", "2", "--fwd-us", "1000", "--bwd-us", "2000", "--no-overlap",
           "--bucket-mb", "1", "--straggler", "1:3", "--bw-gbs", "40"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    check("simtrain_3_ranks_runs", p.returncode == 0, "status %d: %s" % (p.returncode, p.stderr.strip()))
    lines = read_truth(os.path.join(tmp, "train-*.jsonl"))
    check("truth_file_per_process", len(glob.glob(os.path.join(tmp, "train-*.jsonl"))) == 3,
          "files: %r" % glob.glob(os.path.join(tmp, "train-*.jsonl")))
    colls = [t for t in lines if t["kind"] == "collective"]
    by_seq = {}
    for t in colls:
        by_seq.setdefault(t["seq"], []).append(t)
    check("collectives_meet", len(by_seq) == 10 and all(len(v) == 3 and len({(t["start_ns"], t["end_ns"])
                                                                            for t in v}) == 1
                                                     for v in by_seq.values()),
          "per seq: %r" % {k: len(v) for k, v in by_seq.items()})
    busbw = [t["bytes"] * busbw_factor("AllReduce", 3) / (t["end_ns"] - t["start_ns"]) for t in colls]
    check("simtrain_busbw", busbw and all(abs(b / 40 - 1) < 0.01 for b in busbw), "busbw %r" % busbw[:4])
    waits, compute = {0: [], 1: [], 2: []}, {0: [], 1: [], 2: []}
    for step in range(1, 5):
        for t in by_seq.get(2 * step, []):
            mine = [k for k in lines if k["pid"] == t["pid"] and k["kind"] == "kernel"]
            ready = max(k["end_ns"] for k in mine if k["end_ns"] <= t["start_ns"])
            first = [k["start_ns"] for k in mine if k["name"] == "fwd_gemm_l0" and k["start_ns"] <= ready][-1]
            waits[t["rank"]].append((t["start_ns"] - ready) / 1e6)
            compute[t["rank"]].append((ready - first) / 1e6)
    check("straggler_kernels_longer", all(abs(c - 6.0 * (3 if r == 1 else 1)) < 0.2 for r in compute
                                          for c in compute[r]), "compute before AllReduce (ms): %r" % compute)
    # Each rank starts a step when its synchronisation returns, so the host's
    # scheduling on a loaded machine moves single steps by a millisecond or so.
    expect = 2 * 6.0 + 2 * 0.5
    check("others_wait_for_straggler", all(len(waits[r]) == 4 and abs(sorted(waits[r])[2] - expect) < 1.0
                                           for r in (0, 2)),
          "waits of ranks 0 and 2 (ms): %r, %r; expected %.2f" % (waits[0], waits[2], expect))
    check("straggler_does_not_wait", waits[1] and sorted(waits[1])[2] < 0.5, "waits: %r" % waits[1])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--rank":
        rank_helper(int(sys.argv[2]), sys.argv[3])
        return
    tmp = tempfile.mkdtemp(prefix="test_sim_nccl.")
    os.environ.update(SIMNCCL_ALPHA_US=str(ALPHA_US), SIMNCCL_BW_GBS=str(BW_GBS), SIMNCCL_TIMEOUT_S="20")
    os.environ.pop("RANK", None)
    straggler_checks(tmp)
    lost_rank_check("dead_rank_fails_fast", "dead", 20, "has exited")
    lost_rank_check("missing_rank_times_out", "late", 1, "did not arrive")
    os.environ["SIMGPU_TRUTH"] = os.path.join(tmp, "inproc-%p.jsonl")
    in_process_checks(tmp)
    sys.exit(1 if failed else 0)


main()
