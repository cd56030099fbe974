#!/usr/bin/env python3
"""GPU stacks: simtrain on the simulated GPU, every launch's stack taken
(RINGSIDE_GPU_STACK_EVERY=1), each weighted by its kernel's GPU time (within
5% for 98% of them: a launch call descheduled after its handover moves its
kernel's start by as much, and 25% for all). The
truth is simtrain's options: forward kernels last --fwd-us, backward ones
--bwd-us, optimizer_step fwd-us/2, one of each per layer and step; the
stacks, symbolised with addr2line through the module map, start in
sim_train_kernel. With RINGSIDE_GPU_STACK_EVERY=4, about a quarter."""
import os

from rstest import BUILD, check, cleanup, finish, run, tempdir, trace_files, traced_env
from samples import Trace

STEPS, LAYERS, FWD, BWD = 20, 4, 300, 600


def gpu_samples(every):
    out = tempdir("sample-gpu")
    env = traced_env(out, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), RINGSIDE_GPU_STACK_EVERY=every)
    p = run([os.path.join(BUILD, "simtrain"), "--steps", str(STEPS), "--layers", str(LAYERS),
             "--fwd-us", str(FWD), "--bwd-us", str(BWD)], env=env)
    check("every=%d: simtrain runs" % every, p.returncode == 0, p.stderr.decode()[-300:])
    files = trace_files(out)
    t = Trace(files[0]) if files else None
    got = [s for s in t.of_kind("gpu") if t.names(s)[:1] == ["sim_train_kernel"]] if t else []
    cleanup(out)
    return got


def main():
    launches = STEPS * (2 * LAYERS + 1)
    got = gpu_samples(1)
    check("every launch of sim_train_kernel has a GPU stack", len(got) == launches,
          "%d samples, %d launches" % (len(got), launches))
    want = (FWD * 1000, BWD * 1000, FWD * 500)
    # a launch call descheduled after it handed its kernel over moves the kernel's
    # start (preload/gpustart.c) by as much: on a loaded 2-core machine one in a few
    # hundred, tens of microseconds
    err = [min(abs(s["weight_ns"] - w) / w for w in want) for s in got]
    off = [s["weight_ns"] for s, e in zip(got, err) if e > 0.05]
    check("weights are the kernels' GPU times (within 5%% for 98%% of them, 25%% for all)",
          got and len(off) <= max(1, 0.02 * len(got)) and max(err) <= 0.25,
          "%d of %d off, e.g. %s; farthest %.1f%%" % (len(off), len(got), off[:3], 100 * max(err or [0])))
    total, truth = sum(s["weight_ns"] for s in got), STEPS * (LAYERS * (FWD + BWD) + FWD / 2) * 1000
    check("total GPU weight is the kernels' total (within 5%)", abs(total - truth) <= 0.05 * truth,
          "%.2f ms vs %.2f ms" % (total / 1e6, truth / 1e6))
    got = gpu_samples(4)
    check("every 4th launch: a quarter of them", abs(len(got) - launches / 4) <= 2,
          "%d samples of %d launches" % (len(got), launches))
    finish()


main()
