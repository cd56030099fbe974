#!/usr/bin/env python3
"""Kernel names on every driver, old and new, whatever way the program reached it
(docs/design.md, Kernel names on any driver). The truths: the
simulator's truth file (every kernel and collective that ran, with its name),
the knob the test sets (SIMGPU_DRIVER_VERSION), and tests/programs/cuda_names.c's
own account of what it launched, allocated and looked up.

- The stand-in plays an R535 driver under SIMGPU_DRIVER_VERSION=12020:
  cuDriverGetVersion says 12020, and cuFuncGetName / cuKernelGetName are absent
  to dlsym and cuGetProcAddress (present without the knob).
- simtrain on 2 ranks under the agent, with and without the knob: the kernel
  table names every kernel with the truth's name and count, NCCL's kernels as
  communication, the same table both ways; each run's communication share
  within 1 point of its own truth (the two runs' shares differ by the host's
  scheduling, not by the knob).
- Unloads forget: cuda_names launches a module's function, unloads it, and
  launches another function the driver made at the same address (and the same
  for a library's kernels): the trace names each launch as the program did.
- cuMemCreate / cuMemRelease and cuMemAllocAsync / cuMemAllocFromPoolAsync /
  cuMemFreeAsync in the memory figures, as the program counted them.
- dlsym(RTLD_DEFAULT) from a library loaded RTLD_LOCAL, whose libcuda and
  libnccl only it sees, finds under the agent what it finds without it (the
  agent's wrapper for a hooked function)."""
import ctypes
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import (AGENT, BUILD, PROG, check, cleanup, dump, finish, report, run, skip,  # noqa: E402
                    tempdir, traced_env)
from simtruth import _rank_ops, length, union  # noqa: E402

SIM = os.path.join(BUILD, "sim")
LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
NAMES = os.path.join(PROG, "cuda_names")
PROBE = os.path.join(PROG, "libnames_probe.so")
R535 = "12020"


def stand_in(version):
    """(driver version, cuFuncGetName by dlsym, cuKernelGetName by dlsym,
    cuFuncGetName by cuGetProcAddress) of the stand-in, in a child process that
    has the knob in its environment from the start."""
    code = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
v = ctypes.c_int(0)
lib.cuDriverGetVersion(ctypes.byref(v))
dl = ctypes.CDLL(None)
dl.dlsym.restype = ctypes.c_void_p
dl.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
def has(n):
    return int(bool(dl.dlsym(lib._handle, n.encode())))
fn = ctypes.c_void_p(0)
st = ctypes.c_int(-1)
r = lib.cuGetProcAddress_v2(b"cuFuncGetName", ctypes.byref(fn), 13000, ctypes.c_ulonglong(0), ctypes.byref(st))
print(v.value, has("cuFuncGetName"), has("cuKernelGetName"), int(r == 0 and bool(fn.value)))
"""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("SIMGPU_DRIVER_VERSION", None)
    if version:
        env["SIMGPU_DRIVER_VERSION"] = version
    p = run([sys.executable, "-c", code, os.path.join(SIM, "libcuda.so.1")], env=env)
    return tuple(int(x) for x in p.stdout.split()) if p.returncode == 0 else None


def check_stand_in():
    check("stand-in: 13000 and cuFuncGetName / cuKernelGetName without the knob",
          stand_in(None) == (13000, 1, 1, 1), str(stand_in(None)))
    got = stand_in(R535)
    check("stand-in: SIMGPU_DRIVER_VERSION=12020 says 12020, no cuFuncGetName / cuKernelGetName "
          "to dlsym or cuGetProcAddress", got == (12020, 0, 0, 0), str(got))


def run_train(d, version):
    """simtrain on 2 ranks under the agent; (report, truth) or None."""
    out = os.path.join(d, "trace")
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "LD_PRELOAD",
              "RINGSIDE_JOB", "RINGSIDE_RANK_PID", "SIMGPU_DRIVER_VERSION"):
        env.pop(k, None)
    # NCCL's calls spend 20 us on the host before their kernel, as the real
    # ones do: each collective's kernel starts well after the collective's own
    # start, and the report must still link the two (no row of its own)
    env.update(LD_LIBRARY_PATH=SIM, SIMGPU_TRUTH=os.path.join(d, "truth"), SIMNCCL_TIMEOUT_S="30",
               SIMNCCL_ENQUEUE_US="20", RINGSIDE_OUT=out, AGENT_SO=AGENT)
    if version:
        env["SIMGPU_DRIVER_VERSION"] = version
    cmd = [LAUNCH, "-n", "2", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", TRAIN,
           "--steps", "20", "--layers", "4", "--data-us", "2000", "--overlap", "--ckpt-dir", os.path.join(d, "ckpt")]
    p = run(cmd, env=env, timeout=180)
    if p.returncode != 0:
        check("simtrain runs (driver %s)" % (version or "default"), False, p.stderr.decode()[-400:])
        return None
    with open(os.path.join(d, "truth")) as f:
        truth = [t for t in (json.loads(line) for line in f if line.strip()) if t.get("kind") != "step"]
    return report(out), truth


def kernel_table(proc):
    """Kernels (not copies) of the report's table: {name: (count, class)}."""
    return {k["name"]: (k["count"], k["class"]) for k in proc.get("kernels", []) if k["class"] != "memcpy"}


def truth_table(truth, rank):
    t = {}
    for op in truth:
        if op.get("rank") == rank and op["kind"] in ("kernel", "collective"):
            n, cls = t.get(op["name"], (0, None))
            t[op["name"]] = (n + 1, "communication" if op["kind"] == "collective" else "compute")
    return t


def truth_comm_pct(truth, rank):
    """The rank's communication (its collectives from when its stream reached
    them to their end) as % of its GPU span, from the truth file."""
    ops, colls = _rank_ops(truth, rank, True)
    comm = union([(a, c["end_ns"]) for a, c in colls])
    starts = [a for a, _ in colls] + [t["start_ns"] for t in ops if t["kind"] != "collective"]
    return 100.0 * length(comm) / (max(t["end_ns"] for t in ops) - min(starts))


def check_train():
    tables, errs = {}, {}
    dirs = []
    for version in (None, R535):
        label = "driver %s" % (version or "13000")
        d = tempdir("driver-names")
        dirs.append(d)
        got = run_train(d, version)
        if not got:
            continue
        rep, truth = got
        procs = [p for p in rep["processes"] if p.get("rank") is not None]
        check(label + ": 2 ranks with GPU work", len(procs) == 2 and all("gpu" in p for p in procs),
              str([p.get("rank") for p in procs]))
        for p in procs:
            r = p["rank"]
            table, want = kernel_table(p), truth_table(truth, r)
            tables.setdefault(version, {})[r] = table
            check("%s rank %d: every kernel named with the truth's name, count and class" % (label, r),
                  table == want, "report %s, truth %s" % (sorted(table.items()), sorted(want.items())))
            comm, want_comm = p["gpu"].get("comm_pct", -100), truth_comm_pct(truth, r)
            errs.setdefault(version, []).append(comm - want_comm)
            check("%s rank %d: communication within 1 point of the truth's" % (label, r),
                  abs(comm - want_comm) <= 1, "report %.2f%%, truth %.2f%%" % (comm, want_comm))
    if len(tables) == 2:
        check("driver 12020: the same kernel table as driver 13000", tables[None] == tables[R535],
              "%s vs %s" % (tables[None], tables[R535]))
        worst = max(abs(a - b) for a, b in zip(errs[None], errs[R535]))
        check("driver 12020: communication's error within 1 point of driver 13000's", worst <= 1,
              "errors %s vs %s" % (errs[None], errs[R535]))
    cleanup(*dirs)


def names_run(mode, version, *args):
    """cuda_names MODE under the agent: (its output lines, its trace's records)."""
    d = tempdir("driver-names-" + mode)
    env = traced_env(os.path.join(d, "trace"), LD_LIBRARY_PATH=SIM)
    env.pop("SIMGPU_DRIVER_VERSION", None)
    if version:
        env["SIMGPU_DRIVER_VERSION"] = version
    p = run([NAMES, mode] + list(args), env=env)
    lines = p.stdout.decode().splitlines()
    recs = []
    traces = [os.path.join(b, f) for b, _, fs in os.walk(d) for f in fs if f.endswith(".trace.lz4")]
    if p.returncode == 0 and len(traces) == 1:
        recs = dump(traces[0])[0]
    rep = report(os.path.join(d, "trace")) if p.returncode == 0 and traces else None
    cleanup(d)
    return p.returncode, lines, recs, rep


def check_unload():
    for version in (None, R535):
        label = "unload (driver %s)" % (version or "13000")
        rc, lines, recs, _ = names_run("unload", version)
        if rc != 0:
            check(label + ": cuda_names runs", False, "exit %d" % rc)
            continue
        launched = [l.split()[1] for l in lines if l.startswith("launch ")]
        reused = {l.split()[0]: l.split()[1] for l in lines if l.startswith("reused_")}
        # a test of forgetting needs the handles to come back
        check(label + ": the stand-in gave the freed handles again",
              reused == {"reused_function": "1", "reused_kernel": "1"}, str(reused))
        names = [r.get("name_text") for r in recs if r.get("type") == "gpu" and r.get("kind") == "kernel"]
        check(label + ": each launch named as the program launched it", names == launched,
              "trace %s, program %s" % (names, launched))


def check_memory():
    rc, lines, _, rep = names_run("memory", None)
    if rc != 0 or rep is None:
        check("memory: cuda_names runs", False, "exit %d" % rc)
        return
    allocs = [int(l.split()[1]) for l in lines if l.startswith("alloc ")]
    frees = sum(1 for l in lines if l == "free")
    # the call counts (the memory figures beside them have their own tests)
    mem = [{k: p["memory"][k] for k in ("allocs", "frees", "alloc_bytes")} for p in rep["processes"] if "memory" in p]
    want = {"allocs": len(allocs), "frees": frees, "alloc_bytes": sum(allocs)}
    check("memory: VMM and pool allocations counted as the program made them", mem == [want],
          "report %s, program %s" % (mem, want))


def check_dlsym():
    def lookups(agent):
        env = dict(os.environ, LD_LIBRARY_PATH=SIM)
        env.pop("LD_PRELOAD", None)
        d = None
        if agent:
            d = tempdir("driver-names-dlsym")
            env = traced_env(os.path.join(d, "trace"), LD_LIBRARY_PATH=SIM)
        p = run([NAMES, "dlsym", PROBE], env=env)
        if d:
            cleanup(d)
        out = {}
        for line in p.stdout.decode().splitlines():
            f = line.split()
            out[f[1]] = dict(kv.split("=") for kv in f[2:])
        return p.returncode, out
    rc0, plain = lookups(False)
    rc1, traced = lookups(True)
    if rc0 != 0 or rc1 != 0 or not plain:
        check("dlsym: cuda_names runs", False, "exit %d / %d" % (rc0, rc1))
        return
    check("dlsym: without the agent the probe's own scope finds libcuda and libnccl",
          plain["cuDeviceGetName"]["found"] == "1" and plain["ncclGetVersion"]["found"] == "1", str(plain))
    check("dlsym(RTLD_DEFAULT): found under the agent exactly as without it",
          {n: v["found"] for n, v in traced.items()} == {n: v["found"] for n, v in plain.items()},
          "agent %s, none %s" % (traced, plain))
    unhooked = ("cuDeviceGetName", "cuMemGetInfo_v2", "ncclGetVersion")
    check("dlsym(RTLD_DEFAULT): an unhooked function is the library's own",
          all(traced[n]["same"] == "1" and traced[n]["agent"] == "0" for n in unhooked), str(traced))
    hooked = ("cuLaunchKernel", "cuModuleGetFunction", "ncclAllReduce")
    check("dlsym(RTLD_DEFAULT): a hooked function is the agent's wrapper",
          all(traced[n]["agent"] == "1" for n in hooked), str(traced))


def main():
    for path in (os.path.join(SIM, "libcuda.so.1"), TRAIN, LAUNCH, NAMES, PROBE, AGENT):
        if not os.path.exists(path):
            skip("driver names", "%s is not built" % path)
            finish()
    check_stand_in()
    check_unload()
    check_memory()
    check_dlsym()
    check_train()
    finish()


if __name__ == "__main__":
    main()
