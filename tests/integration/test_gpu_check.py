#!/usr/bin/env python3
"""`make gpu-check` (issue 20) where there is no GPU, steered through the knobs of
tests/gpu/gpu-check.sh so that it holds on any machine: no device file, nvidia-smi
missing or failing, nvcc missing, each give exit status 0 and one line
"gpu-check: no GPU (...)" naming what is missing. Past those, a failure is a failure,
not a skip: an nvcc that cannot build makes it fail; and where the toolkit is here,
the real build of the workload (with NCCL where found), run with no device visible,
makes it fail with check.py's "not ok" line carrying the CUDA error and
no Python traceback."""
import os
import shutil
import stat

from rstest import BUILD, ROOT, check, cleanup, finish, run, skip, tempdir

KNOBS = ("NVCC", "NVIDIA_SMI", "GPU_DEVICES", "NCCL", "NCCL_HOME", "NVCC_ARCH", "CUDART",
         "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CUDA_VISIBLE_DEVICES")
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
    """A no-GPU case: status 0, and one line, the "no GPU" line naming what is missing."""
    rc, lines = gpu_check(**env)
    check(name, rc == 0 and len(lines) == 1 and lines[0].startswith("gpu-check: no GPU (")
          and missing in lines[0], "status %d, expected one line naming %r: %s" % (rc, missing, lines[-5:]))


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
    no_gpu("a GPU but no nvcc: names the missing nvcc, exits 0", "nvcc not found at " + absent,
           GPU_DEVICES=fake_dev, PATH=with_ok, NVCC=os.path.join(absent, "nvcc"))

    rc, lines = gpu_check(GPU_DEVICES=fake_dev, PATH=with_ok, NVCC=bad_nvcc)
    check("an nvcc that cannot build: fails and says so", rc != 0
          and any(l.startswith("gpu-check: FAILED: nvcc could not build") for l in lines)
          and not any(l.startswith("gpu-check: no GPU") for l in lines),
          "status %d: %s" % (rc, lines[-3:]))

    if not shutil.which(NVCC):
        skip("the workload builds and a failed run fails", "no nvcc at %s" % NVCC)
    else:
        rc, lines = gpu_check(GPU_DEVICES=fake_dev, PATH=with_ok, NVCC=NVCC, NVCC_ARCH="-arch=sm_90",
                              CUDA_VISIBLE_DEVICES="")
        text = "\n".join(lines)
        check("the workload builds with nvcc", os.access(os.path.join(BUILD, "gpu", "workload"), os.X_OK)
              and "nvcc could not build" not in text, "\n".join(lines[-8:]))
        check("the workload with no device visible: fails, the CUDA error in a not ok line, no traceback",
              rc != 0 and "Traceback" not in text
              and any(l.startswith("not ok - the workload ran under the agent") and "cuda" in l.lower()
                      for l in lines) and any(l.startswith("gpu-check: FAILED") for l in lines),
              "status %d: %s" % (rc, lines[-8:]))
    cleanup(tmp)
    finish()


main()
