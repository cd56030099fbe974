#!/usr/bin/env python3
"""Several devices and contexts, held against the simulator's truth file:
simtrain --devices 2 (two ranks, each over two devices: every kernel timed,
its record and report.json's kernel row labelled with the truth's device,
counts per device as the truth's); a first launch on device 0 and every
later one on device 1 (tests/programs/cuda_contexts.c switch); created
contexts destroyed with work queued, a primary context reset (what
cudaDeviceReset calls) and released, then more launches (destroy): every
kernel still timed, no handle of a destroyed context used (the simulator
says so on stderr), the program's output and status unchanged."""
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import check, report_problems  # noqa: E402

TRAIN = os.path.join(rstest.BUILD, "simtrain")
LAUNCH = os.path.join(rstest.BUILD, "simlaunch")
PROGRAM = os.path.join(rstest.PROG, "cuda_contexts")
if not os.path.exists(os.path.join(capture.SIM, "libcuda.so.1")) or not os.path.exists(PROGRAM):
    rstest.skip("devices", "build/sim or build/tests/prog/cuda_contexts is not built")
    rstest.finish()

tmp = rstest.tempdir("devices")
DESTROYED = "destroyed context"


def device_problems(tl, gpu):
    """Per kernel (stream, in launch order), the agent's device against the
    truth's; gpu_problems has matched counts, names and times already."""
    problems = []
    want, got = {}, {}
    for t in tl:
        if t["kind"] in ("kernel", "collective"):
            want.setdefault(t["stream"], []).append(t)
    for g in gpu:
        if g["kind"] == "kernel":
            got.setdefault(g["stream"], []).append(g)
    for s in sorted(want):
        w = sorted(want[s], key=lambda t: t["launch_ns"])
        a = sorted(got.get(s, []), key=lambda g: g["launch_ns"])
        for t, g in zip(w, a):
            if g["device"] != t["device"]:
                problems.append("stream %d %s: device %d, truth %d" % (s, t.get("name"), g["device"], t["device"]))
    return problems


def per_device(items, name_of):
    c = collections.Counter()
    for x in items:
        c[(x["device"], name_of(x))] += 1
    return c


# ---- simtrain --devices 2, two ranks ----
out, tdir = os.path.join(tmp, "train"), os.path.join(tmp, "train-truth")
os.makedirs(out)
os.makedirs(tdir)
cmd = [TRAIN, "--devices", "2", "--steps", "5", "--layers", "4", "--fwd-us", "150", "--bwd-us", "300",
       "--bucket-mb", "1"]
plain = rstest.run([LAUNCH, "-n", "2", "--"] + cmd, env=dict(os.environ, LD_LIBRARY_PATH=capture.SIM,
                                                            SIMNCCL_TIMEOUT_S="30"))
p = rstest.run([LAUNCH, "-n", "2", "--"] + cmd, env=capture.sim_env(out, tdir))
traces = [t for t in rstest.trace_files(out) if capture.records(t)[0].get("meta", [{}])[0].get("rank", -1) >= 0]
err = p.stderr.decode(errors="replace")
if check("devices 2: simtrain runs under the agent as without it, two rank traces",
         p.returncode == 0 and plain.returncode == 0 and len(traces) == 2 and DESTROYED not in err,
         "status %d (without %d), %d traces: %s" % (p.returncode, plain.returncode, len(traces), err[-300:])):
    on_dev = {}
    for tr in traces:
        by, _ = capture.records(tr)
        meta = by["meta"][0]
        r = meta["rank"]
        tl = capture.truth(tdir, meta["pid"])
        gpu = by.get("gpu", [])
        report_problems("devices 2: rank %d kernels against the truth (all timed)" % r,
                        capture.gpu_problems(tl, gpu, exact_start=False))
        report_problems("devices 2: rank %d each kernel's device is the truth's" % r, device_problems(tl, gpu))
        tk = per_device([t for t in tl if t["kind"] == "kernel"], lambda t: t["name"])
        ak = per_device([g for g in gpu if g["kind"] == "kernel" and not g["name_text"].startswith("nccl")],
                        lambda g: g["name_text"])
        second = 2 * r + 1   # LOCAL_RANK * 2 + 1
        n_second = sum(n for (d, _), n in tk.items() if d == second)
        check("devices 2: rank %d: %d kernels on device %d in the truth, the agent's per device and name equal"
              % (r, n_second, second), n_second > 0 and tk == ak, "truth %r, agent %r" % (tk, ak))
        timed = [g for g in gpu if g["kind"] == "kernel" and g["device"] == second and g["gpu_end_ns"] > 0]
        check("devices 2: rank %d: every kernel on device %d timed" % (r, second), len(timed) == n_second,
              "%d timed of %d" % (len(timed), n_second))
        on_dev[r] = {name: {d for (d, n) in tk if n == name} for (_, name) in tk}
    code, errs, procs = rstest.report_of(out, tmp, "train-report")
    if check("devices 2: ringside report", code == 0, "status %d: %s" % (code, errs)):
        probs = []
        for proc in procs:
            if proc.get("rank") not in on_dev:
                continue
            truth_names = on_dev[proc["rank"]]
            rows = {k["name"]: k for k in proc["kernels"]}
            for name, devs in truth_names.items():
                k = rows.get(name)
                if not k or set(k.get("devices", [])) != devs:
                    probs.append("rank %d %s: report %r, truth devices %r" % (proc["rank"], name, k, sorted(devs)))
        report_problems("devices 2: report.json's kernel rows name the truth's devices", probs)


def contexts_run(mode):
    out, tdir = os.path.join(tmp, mode), os.path.join(tmp, mode + "-truth")
    os.makedirs(out)
    os.makedirs(tdir)
    plain = rstest.run([PROGRAM, mode], env=dict(os.environ, LD_LIBRARY_PATH=capture.SIM))
    p = rstest.run([PROGRAM, mode], env=capture.sim_env(out, tdir))
    traces = rstest.trace_files(out)
    err = p.stderr.decode(errors="replace")
    if not check("%s: runs under the agent as without it (output, status), one trace, no destroyed handle used"
                 % mode, p.returncode == 0 and p.stdout == plain.stdout and plain.returncode == 0 and
                 len(traces) == 1 and DESTROYED not in err,
                 "status %d (without %d), out %r / %r, %d traces: %s" % (
                     p.returncode, plain.returncode, p.stdout, plain.stdout, len(traces), err[-400:])):
        return None, None
    by, _ = capture.records(traces[0])
    tl = capture.truth(tdir, by["meta"][0]["pid"])
    gpu = by.get("gpu", [])
    report_problems("%s: kernels against the truth (all timed)" % mode, capture.gpu_problems(tl, gpu))
    report_problems("%s: each kernel's device is the truth's" % mode, device_problems(tl, gpu))
    return tl, gpu


# ---- the first launch on device 0, the rest on device 1 ----
tl, gpu = contexts_run("switch")
if tl is not None:
    n1 = sum(1 for t in tl if t["kind"] == "kernel" and t["device"] == 1)
    a1 = sum(1 for g in gpu if g["kind"] == "kernel" and g["device"] == 1 and g["gpu_end_ns"] > 0)
    check("switch: %d kernels on device 1 in the truth, as many timed on device 1" % n1,
          n1 == 25 and a1 == n1, "agent %d" % a1)

# ---- destroyed, reset and released contexts, then more launches ----
tl, gpu = contexts_run("destroy")
if tl is not None:
    names = collections.Counter(t["name"] for t in tl if t["kind"] == "kernel")
    timed = collections.Counter(g["name_text"] for g in gpu if g["kind"] == "kernel" and g["gpu_end_ns"] > 0)
    check("destroy: every kernel before and after each destroy, reset and release timed",
          names == timed and names["after_release"] == 3 and names["after_reset"] == 5 and
          names["created_ctx_b"] == 5, "truth %r, timed %r" % (names, timed))

rstest.cleanup(tmp)
rstest.finish()
