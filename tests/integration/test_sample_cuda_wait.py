#!/usr/bin/env python3
"""Wait stacks of blocking CUDA calls: two simulated ranks of simtrain, rank
1 a straggler (kernels 3x longer), so rank 0 blocks in cuStreamSynchronize
after each step's collective. Rank 0's wait samples of reason cuda_sync
(the simulator's threads wait on condition variables too), symbolised with
addr2line through the trace's module map, put most of the blocked time
under sim_train_step (the function that synchronises), and the blocked
time fits in the run time simtrain reports itself."""
import os
import re

from rstest import BUILD, check, cleanup, finish, run, tempdir, trace_files, traced_env
from samples import Trace


def main():
    out = tempdir("sample-cuda")
    env = traced_env(out, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"))
    p = run([os.path.join(BUILD, "simlaunch"), "-n", "2", "--", os.path.join(BUILD, "simtrain"),
             "--steps", "20", "--straggler", "1:3"], env=env)
    err = p.stderr.decode()
    check("simtrain runs", p.returncode == 0, err[-300:])
    m = re.search(r"rank 0 of 2: \d+ steps in ([0-9.]+) s", err + p.stdout.decode())
    run_ns = float(m.group(1)) * 1e9 if m else 0
    rank0 = [f for f in trace_files(out) if os.path.basename(f).startswith("rank-0.")]
    if check("rank 0 trace", len(rank0) == 1 and run_ns > 0, "%s; %r" % (rank0, err[-200:])):
        t = Trace(rank0[0])
        # the CUDA waits: the simulator's own threads wait too (condvar...)
        waits = [s for s in t.of_kind("wait") if s.get("reason") == "cuda_sync"]
        total = sum(s["weight_ns"] for s in waits)
        under = sum(s["weight_ns"] for s in waits if "sim_train_step" in t.names(s))
        check("wait samples recorded", len(waits) >= 10, "%d" % len(waits))
        check("most blocked time under sim_train_step", total > 0 and under >= 0.8 * total,
              "%.1f of %.1f ms" % (under / 1e6, total / 1e6))
        check("blocked time within the run time simtrain reports", 0.2 * run_ns <= total <= run_ns,
              "%.1f ms blocked, run %.1f ms" % (total / 1e6, run_ns / 1e6))
    cleanup(out)
    finish()


main()
