#!/usr/bin/env python3
"""A stuck job on real PyTorch: Debian's torchrun, 2 ranks on
gloo (tests/programs/torch/hang.py), rank 1 sleeping 600 s before step 5's
all-reduce, init_process_group's timeout 3 s: rank 0 raises on the timeout
and torchrun ends rank 1 (SIGTERM). The agent records no gloo calls, so the
verdict comes from the ranks' own waits: report.json hang names rank 1 as
missing and rank 0 as waiting, the collective all_reduce (its Python
frame), rank 1's frames its sleep under the script's step() (hang.py:stall,
then the sleep), rank 0's wait at least the timeout; the first finding is
the hang."""
import json
import os

from rstest import ROOT, check, cleanup, finish, free_port, report, run, skip, tempdir, traced_env

TORCH_PY = "/usr/bin/python3"   # Debian's torch is for Debian's interpreter
TORCHRUN = "/usr/bin/torchrun"
SCRIPT = os.path.join(ROOT, "tests", "programs", "torch", "hang.py")


def have_torch():
    try:
        return os.path.exists(TORCHRUN) and run([TORCH_PY, "-c", "import torch"], timeout=120).returncode == 0
    except OSError:
        return False


def main():
    if not have_torch():
        skip("torch hang", "%s cannot import torch, or no %s (Debian's python3-torch)" % (TORCH_PY, TORCHRUN))
        finish()
    work = tempdir("torch-hang")
    out = os.path.join(work, "trace")
    env = traced_env(out)
    for k in ("MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    # Debian's torchrun 1.13 on Python 3.11 fails without -r/-t (test_torch.py)
    cmd = [TORCHRUN, "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           "--rdzv_id", "rs-hang-%d" % os.getpid(), "-r", "1", "-t", "1", "--log_dir", os.path.join(work, "logs"),
           SCRIPT, "--stall-rank", "1", "--stall-step", "5", "--stall-s", "600", "--timeout-s", "3"]
    p = run(cmd, env=env, cwd=work, timeout=120)
    check("the job fails (rank 0's timeout; torchrun ends rank 1)", p.returncode != 0,
          "status %d" % p.returncode)
    rep = report(out)
    h = rep.get("hang") or {}
    check("hang.kind hang, missing rank 1, waiting rank 0",
          h.get("kind") == "hang" and h.get("missing_ranks") == [1] and h.get("waiting_ranks") == [0],
          json.dumps(h)[:400])
    check("the collective: all_reduce", h.get("op") == "all_reduce", str(h.get("op")))
    check("rank 0 waited the timeout (3 s) or more", h.get("waited_s", 0) >= 2.9, str(h.get("waited_s")))
    r1 = [r for r in h.get("per_rank", []) if r.get("rank") == 1]
    frames = r1[0]["where"]["frames"] if r1 else []
    check("rank 1's frames: its sleep in stall() under step()",
          "hang.py:step" in frames and "hang.py:stall" in frames and frames[-1:] == ["[wait: sleep]"] and
          frames.index("hang.py:step") < frames.index("hang.py:stall"), str(frames))
    fs = rep.get("findings", [])
    check("the first finding is the hang", bool(fs) and fs[0]["id"] == "job_hung", str([f["id"] for f in fs][:3]))
    cleanup(work)
    finish()


main()
