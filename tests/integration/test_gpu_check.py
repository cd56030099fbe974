#!/usr/bin/env python3
"""`make gpu-check` (docs/testing.md, On a real GPU) where there is no GPU, steered through the knobs of
tests/gpu/gpu-check.sh so that it holds on any machine: no device file, nvidia-smi
missing or failing, each give exit status 0, the line "gpu-check: no GPU (...)" naming
what is missing, and then the list of what a GPU machine is checked for (the workload
and every part tests/gpu/torch_check.py has). Past those, a failure is a failure, not a
skip: a GPU without nvcc leaves the workload part out with a skip line naming nvcc; a
PyTorch without CUDA (Debian's, where it is installed) makes the torch part fail with a
"not ok" line and no Python traceback; an nvcc that cannot build makes it fail; and where
the toolkit is here, the real build of the workload (with NCCL where found), run with no
device visible, makes it fail with check.py's "not ok" line carrying the CUDA error and
no Python traceback.

torch_check.py's own logic, which needs no GPU, is run here too: its Kineto-against-ringside
matcher holds the agent's dump of a simtrain run against a Kineto trace written from the
simulator's truth file (every kernel matched, durations within tolerance), then against
that trace with one kernel taken out and one stretched (exactly those two found); and a
real Kineto trace of ../shared/data/kineto against itself, renumbered, shifted, drifting,
with one kernel taken out and two durations changed, one beyond the tolerance and one
within (exactly the changes found, the drift measured). Its demangling is held against
c++filt."""
import collections
import gzip
import json
import os
import shutil
import stat
import sys

from rstest import AGENT, BUILD, ROOT, check, cleanup, dump, finish, run, skip, tempdir, trace_files

sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import torch_check  # noqa: E402 (the path above first)

KNOBS = ("NVCC", "NVIDIA_SMI", "GPU_DEVICES", "NCCL", "NCCL_HOME", "NVCC_ARCH", "CUDART",
         "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CUDA_VISIBLE_DEVICES", "TORCH", "TORCH_PYTHON", "TORCH_PARTS",
         "WORKLOAD", "JOBS")
TORCH_PY = "/usr/bin/python3"   # Debian's python3-torch (CPU only), where it is installed
KINETO = "/work/shared/data/kineto/a100-2rank-r0-nccl.json.gz"
CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
NVCC = os.environ.get("NVCC", os.path.join(CUDA_HOME, "bin", "nvcc"))


def script(path, text):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def gpu_check(**env):
    """(exit status, output lines) of `make gpu-check` in the suite's build folder."""
    e = {k: v for k, v in os.environ.items() if k not in KNOBS}
    e.update(env)
    p = run(["make", "--no-print-directory", "BUILD=" + BUILD, "gpu-check"], env=e, cwd=ROOT, timeout=120)
    out = (p.stdout + p.stderr).decode(errors="replace")
    return p.returncode, [l for l in out.splitlines() if l.strip()]


def no_gpu(name, missing, **env):
    """A no-GPU case: status 0, the "no GPU" line naming what is missing, then the list of
    checks: the workload and each of torch_check.py's parts, one line each."""
    rc, lines = gpu_check(**env)
    listed = [l.strip()[2:].split(":")[0] for l in lines[2:] if l.startswith("  - ")]
    want = ["workload"] + [p for p, _ in torch_check.PARTS]
    check(name, rc == 0 and lines and lines[0].startswith("gpu-check: no GPU (") and missing in lines[0]
          and lines[1].startswith("gpu-check: on a machine with an NVIDIA GPU") and listed == want
          and len(lines) == 2 + len(want),
          "status %d, expected the line naming %r and the checks %s: %s" % (rc, missing, want, lines[:10]))


def kineto_doc(kernels, base_ns):
    """A Kineto trace as torch.profiler writes it (cat "kernel", ts and dur in microseconds
    with three decimals, relative to baseTimeNanoseconds; pid the device, tid the stream)
    of kernels (name, device, stream, start_ns, end_ns)."""
    events = []
    for i, (name, dev, stream, start, end) in enumerate(kernels):
        rel = start - base_ns
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": dev, "tid": stream,
                       "ts": float("%d.%03d" % (rel // 1000, rel % 1000)), "dur": (end - start) / 1e3,
                       "args": {"External id": i + 1, "device": dev, "stream": stream, "correlation": 1000 + i}})
    return {"schemaVersion": 1, "baseTimeNanoseconds": base_ns, "traceEvents": events}


def matcher_on_simtrain(tmp):
    """simtrain under the agent; its truth file as a Kineto trace; the matcher on both."""
    work = os.path.join(tmp, "simtrain")
    os.mkdir(work)
    truth_path, out = os.path.join(work, "truth.jsonl"), os.path.join(work, "trace")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "RINGSIDE_RANK")}
    env.update(LD_PRELOAD=AGENT, RINGSIDE_OUT=out, SIMGPU_TRUTH=truth_path,
               LD_LIBRARY_PATH=os.path.join(BUILD, "sim"))
    p = run([os.path.join(BUILD, "simtrain"), "--steps", "6", "--layers", "3", "--kernels-per-layer", "2",
             "--fwd-us", "120", "--bwd-us", "240"], env=env, timeout=120)
    files = trace_files(out)
    if not check("matcher: simtrain ran under the agent", p.returncode == 0 and len(files) == 1,
                 "status %d, %d trace files: %s" % (p.returncode, len(files), p.stderr.decode(errors="replace")[-300:])):
        return
    recs, rc, err = dump(files[0])
    pid = next(r["pid"] for r in recs if r.get("type") == "meta")
    with open(truth_path) as f:
        truth = [json.loads(l) for l in f if l.strip()]
    # what Kineto lists as kernels: compute kernels and NCCL's
    kern = [t for t in truth if t.get("kind") in ("kernel", "collective") and t.get("pid") == pid]
    # Kineto numbers streams its own way, and its clock is the profiler's
    shift = 7_000_000_123
    as_kineto = [(t["name"], t["device"], t["stream"] + 100, t["start_ns"] + shift, t["end_ns"] + shift)
                 for t in kern]
    base = min(k[3] for k in as_kineto) - 5_000_000
    rs = torch_check.ringside_kernels(recs, pid)
    m = torch_check.match_kernels(rs, torch_check.kineto_kernels(kineto_doc(as_kineto, base)))
    print("    " + torch_check.match_line(m))
    # the durations off, worked out here: the i-th kernel of a stream by the agent against
    # the truth's i-th there
    bad = []
    for stream in set(t["stream"] for t in kern):
        got = sorted((r for r in recs if r.get("type") == "gpu" and r.get("kind") == "kernel"
                      and r.get("stream") == stream), key=lambda r: r["gpu_start_ns"])
        want = sorted((t for t in kern if t["stream"] == stream), key=lambda t: t["start_ns"])
        for r, t in zip(got, want):
            d, w = r["gpu_end_ns"] - r["gpu_start_ns"], t["end_ns"] - t["start_ns"]
            if abs(d - w) > max(torch_check.DUR_REL * w, torch_check.DUR_ABS_US * 1e3):
                bad.append((r["name_text"], round(d / 1e3, 3), round(w / 1e3, 3)))
    found = sorted((n, round(a, 3), round(b, 3)) for n, a, b in m["dur_bad"])
    check("matcher: the agent's kernels against the truth as a Kineto trace: all %d matched, the durations off "
          "from the truth (%d) found" % (len(kern), len(bad)),
          len(kern) > 20 and m["counts"] == (len(kern), len(kern)) and not m["count_diff"]
          and m["pairs"] == len(kern) and m["unmatched"] == (0, 0) and not m["untimed"] and found == sorted(bad),
          "%s; off by the truth: %s" % (torch_check.match_line(m), bad[:4]))

    # one kernel taken out of the Kineto side, one stretched by 20% (backward kernels of
    # 120 us the agent timed within tolerance)
    fine = [i for i, k in enumerate(as_kineto) if i > 10 and k[0].startswith("bwd_")
            and not any(b[0] == k[0] for b in bad)]
    gone, longer = fine[0], fine[-1]
    changed = [k if i != longer else k[:4] + (k[3] + int((k[4] - k[3]) * 1.2),) for i, k in enumerate(as_kineto)]
    del changed[gone]
    m = torch_check.match_kernels(rs, torch_check.kineto_kernels(kineto_doc(changed, base)))
    name = as_kineto[gone][0]
    found = sorted((n, round(a, 3), round(b, 3)) for n, a, b in m["dur_bad"])
    check("matcher: a kernel missing from Kineto's side and one 20% longer there: exactly those found",
          m["count_diff"] == {name: (sum(k[0] == name for k in as_kineto), sum(k[0] == name for k in changed))}
          and m["unmatched"] == (1, 0) and len(found) == len(bad) + 1
          and as_kineto[longer][0] in [n for n, _, _ in found],
          "count_diff %s, unmatched %s, dur_bad %s" % (m["count_diff"], m["unmatched"], found[:4]))


def matcher_on_kineto():
    """A real Kineto trace against itself as ringside's side: renumbered streams, another
    clock running 20 ppm fast (so Kineto's drifts -20 ppm against it), one kernel gone, one
    long kernel 1.2 times longer, one short one 3 us longer (within tolerance)."""
    if not os.path.exists(KINETO):
        skip("matcher: a real Kineto trace", "no %s" % KINETO)
        return
    with gzip.open(KINETO, "rt") as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    kin = torch_check.kineto_kernels(KINETO)
    streams = collections.Counter((e["pid"], e["tid"]) for e in raw)
    check("matcher: Kineto's kernels of a real trace read, stream by stream (%d on %d streams)"
          % (len(raw), len(streams)),
          len(kin) == len(raw) and collections.Counter(k["stream"] for k in kin) == streams,
          "%d read, streams %s" % (len(kin), collections.Counter(k["stream"] for k in kin)))
    t0 = min(k["start_ns"] for k in kin)
    rs = []
    for k in kin:
        start = k["start_ns"] - 3_000_000_000 + (k["start_ns"] - t0) * 20 // 1_000_000
        rs.append({"name": k["name"], "device": k["device"], "stream": ("ringside", k["stream"][1] * 7919),
                   "start_ns": start, "dur_ns": k["dur_ns"], "launch_ns": start})
    order = sorted(range(len(rs)), key=lambda i: rs[i]["start_ns"])
    long_i = next(i for i in order[50:] if kin[i]["dur_ns"] > 200_000)
    short_i = next(i for i in order[50:] if kin[i]["dur_ns"] < 20_000)
    gone_i = order[len(order) // 2]
    rs[long_i]["dur_ns"] = int(rs[long_i]["dur_ns"] * 1.2)
    rs[short_i]["dur_ns"] += 3000
    name = rs[gone_i]["name"]
    n = sum(k["name"] == name for k in kin)
    del rs[gone_i]
    m = torch_check.match_kernels(rs, kin)
    print("    " + torch_check.match_line(m))
    check("matcher: on a real trace (%d kernels, NCCL's among them), exactly the changes found, the drift measured"
          % len(kin),
          m["count_diff"] == {name: (n - 1, n)} and m["pairs"] == len(kin) - 1 and m["unmatched"] == (0, 1)
          and [b[0] for b in m["dur_bad"]] == [kin[long_i]["name"]] and abs(m["drift_ppm"] + 20) < 1
          and m["start_us"][1] < 2.0 and len(m["streams"]) == len(streams),
          "count_diff %s, pairs %d, unmatched %s, dur_bad %s, drift %.2f ppm, residual %.2f us, streams %s"
          % (m["count_diff"], m["pairs"], m["unmatched"], [b[0][:40] for b in m["dur_bad"]], m["drift_ppm"],
             m["start_us"][1], m["streams"]))


def demangling():
    """torch_check's names as c++filt spells them (Kineto demangles with the same runtime)."""
    names = ["_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
             "_Z10spin_quartPmx", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "_Znot_valid"]
    filt = shutil.which("c++filt")
    if not filt:
        skip("matcher: kernel names demangled as c++filt does", "no c++filt")
        return
    p = run([filt] + names, timeout=60)
    want = p.stdout.decode().splitlines()
    got = [torch_check.norm_name(n) for n in names]
    check("matcher: kernel names demangled as c++filt does (plain and invalid names left as they are)",
          p.returncode == 0 and got == want and got[2] == names[2], "got %s, c++filt %s" % (got, want))


def main():
    tmp = tempdir("gpu-check")
    fake_dev = os.path.join(tmp, "nvidia0")
    open(fake_dev, "w").close()
    ok_bin, fail_bin = os.path.join(tmp, "ok"), os.path.join(tmp, "fail")
    os.mkdir(ok_bin)
    os.mkdir(fail_bin)
    script(os.path.join(ok_bin, "nvidia-smi"),
           'case "$1" in -L) echo "GPU 0: Fake GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)";;\n'
           '*) echo 0.0;; esac\n')
    script(os.path.join(fail_bin, "nvidia-smi"),
           "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9\n")
    bad_nvcc = os.path.join(tmp, "bad-nvcc")
    script(bad_nvcc, 'echo "bad-nvcc: cannot compile anything" >&2\nexit 1\n')
    path = os.environ.get("PATH", "")
    with_ok, with_fail = ok_bin + os.pathsep + path, fail_bin + os.pathsep + path
    absent = os.path.join(tmp, "absent")

    no_gpu("no device file: says so, exits 0", "no device file " + absent,
           GPU_DEVICES=absent + "[0-9]*")
    no_gpu("no nvidia-smi: says so, exits 0", "nvidia-smi is not found",
           GPU_DEVICES=fake_dev, NVIDIA_SMI=os.path.join(absent, "nvidia-smi"))
    no_gpu("nvidia-smi -L fails: says so with its words, exits 0", "couldn't communicate with the NVIDIA driver",
           GPU_DEVICES=fake_dev, PATH=with_fail)
    rc, lines = gpu_check(GPU_DEVICES=fake_dev, PATH=with_ok, NVCC=os.path.join(absent, "nvcc"), TORCH="0")
    check("a GPU but no nvcc, TORCH=0: the workload left out naming nvcc, nothing checked, exits 0",
          rc == 0 and any(l.startswith("skip - the workload part: nvcc not found at " + absent) for l in lines)
          and "skip - the torch part: TORCH=0" in lines and lines[-1].startswith("gpu-check: both parts left out")
          and not any(l.startswith("not ok") for l in lines), "status %d: %s" % (rc, lines[-5:]))

    if not os.path.exists(TORCH_PY) or run([TORCH_PY, "-c", "import torch"], timeout=120).returncode != 0:
        skip("a PyTorch without CUDA: the torch part fails", "no torch for %s" % TORCH_PY)
    else:
        rc, lines = gpu_check(GPU_DEVICES=fake_dev, PATH=with_ok, NVCC=os.path.join(absent, "nvcc"),
                              TORCH_PYTHON=TORCH_PY)
        text = "\n".join(lines)
        check("a PyTorch without CUDA: the torch part fails on its not ok line, no traceback",
              rc != 0 and "Traceback" not in text and "not ok - PyTorch sees a CUDA GPU: torch.cuda.is_available() "
              "is False" in text and any(l.startswith("gpu-check: FAILED: torch") for l in lines),
              "status %d: %s" % (rc, lines[-6:]))

    rc, lines = gpu_check(GPU_DEVICES=fake_dev, PATH=with_ok, NVCC=bad_nvcc)
    check("an nvcc that cannot build: fails and says so", rc != 0
          and any(l.startswith("gpu-check: FAILED: nvcc could not build") for l in lines)
          and not any(l.startswith("gpu-check: no GPU") for l in lines),
          "status %d: %s" % (rc, lines[-3:]))

    if not shutil.which(NVCC):
        skip("the workload builds and a failed run fails", "no nvcc at %s" % NVCC)
    else:
        rc, lines = gpu_check(GPU_DEVICES=fake_dev, PATH=with_ok, NVCC=NVCC, NVCC_ARCH="-arch=sm_90",
                              CUDA_VISIBLE_DEVICES="", TORCH="0")
        text = "\n".join(lines)
        check("the workload builds with nvcc", os.access(os.path.join(BUILD, "gpu", "workload"), os.X_OK)
              and "nvcc could not build" not in text, "\n".join(lines[-8:]))
        check("the workload with no device visible: fails, the CUDA error in a not ok line, no traceback",
              rc != 0 and "Traceback" not in text
              and any(l.startswith("not ok - the workload ran under the agent") and "cuda" in l.lower()
                      for l in lines) and any(l.startswith("gpu-check: FAILED: workload") for l in lines),
              "status %d: %s" % (rc, lines[-8:]))
    matcher_on_simtrain(tmp)
    matcher_on_kineto()
    demangling()
    cleanup(tmp)
    finish()


main()
