#!/usr/bin/env python3
"""Steps from NVTX ranges: tests/programs/nvtx_steps marks 30 training steps
("train_step", 8 to 12 ms, each with a nested "forward" and an
"optimizer.step", a name that says step one level down) and, after every
fifth, an "eval_step", and writes its own account of each (CLOCK_MONOTONIC
around the push and the pop: the truth). Under the agent, `ringside report`
gives steps from nvtx: the training and evaluation counts exact, every
step's duration within 0.5 ms of the truth's and the median within 3%.
Two such processes, run at once (one run) and reported under `mpirun -n 2`,
give what one reporter process gives (the step ranges travel with the
summaries)."""
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import PROG, RINGSIDE, check, cleanup, finish, report_problems, run, skip, tempdir, \
    traced_env  # noqa: E402
from samereport import compare  # noqa: E402

PROGRAM = os.path.join(PROG, "nvtx_steps")
STEPS = 30
TOL_MS = 0.5


def main():
    outs, work = [tempdir("nvtx-steps-a"), tempdir("nvtx-steps-b")], tempdir("nvtx-steps-work")
    try:
        # both at once: one run of two processes (reported together below),
        # each writing into a folder of its own
        truths, procs = [], []
        for k, out in enumerate(outs):
            env = traced_env(out)
            env.pop("NVTX_INJECTION64_PATH", None)
            procs.append(subprocess.Popen([PROGRAM, os.path.join(work, "truth%d" % k), str(STEPS)], env=env,
                                          cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        for k, p in enumerate(procs):
            _, err = p.communicate(timeout=120)
            if not check("nvtx_steps %d runs under the agent" % k, p.returncode == 0, err.decode()[-300:]):
                finish()
            with open(os.path.join(work, "truth%d" % k)) as f:
                truths.append([json.loads(line) for line in f if line.strip()])
        one = os.path.join(work, "one")
        p = run([RINGSIDE, "report", outs[0], "-o", one, "-q"])
        if not check("report of one process", p.returncode == 0, p.stderr.decode()[-300:]):
            finish()
        with open(os.path.join(one, "report.json")) as f:
            steps = json.load(f).get("steps")
        if not check("steps found, from nvtx", steps and steps.get("source") == "nvtx", repr(steps)[:300]):
            finish()
        train = [t for t in truths[0] if t["name"] == "train_step"]
        evals = [t for t in truths[0] if t["name"] == "eval_step"]
        check("training steps: %d, as the program made" % len(train), steps["count"] == len(train),
              "count %r" % steps["count"])
        phases = {ph["name"]: ph for ph in steps.get("phases", [])}
        check("evaluation steps: %d, their own phase" % len(evals),
              phases.get("eval", {}).get("count") == len(evals), repr(steps.get("phases")))
        durs = [(t["end_ns"] - t["start_ns"]) / 1e6 for t in train]
        want = statistics.median(durs)
        check("median training step within 3%% of the truth's %.3f ms" % want,
              abs(steps["median_ms"] - want) <= 0.03 * want, "median_ms %r" % steps["median_ms"])
        got = [s for s in steps.get("series", []) if s.get("phase") == "train"]
        problems = ["%d steps in the series" % len(got)] if len(got) != len(train) else []
        for s, t, d in zip(got, train, durs):
            if abs(s["dur_ms"] - d) > TOL_MS:
                problems.append("step %d: %.3f ms, truth %.3f ms" % (t["index"], s["dur_ms"], d))
        report_problems("every training step's duration within %.1f ms of the truth's" % TOL_MS, problems)
        # both processes, one reporter process against two
        if not shutil.which("mpirun"):
            skip("nvtx steps under mpirun", "no mpirun")
        else:
            a, b = os.path.join(work, "a"), os.path.join(work, "b")
            pa = run([RINGSIDE, "report"] + outs + ["-o", a, "-q"])
            pb = run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-n", "2", RINGSIDE, "report"] + outs +
                     ["-o", b, "-q"], timeout=120)
            if check("two processes: one reporter and mpirun -n 2 report", pa.returncode == 0 and
                     pb.returncode == 0, (pa.stderr + pb.stderr).decode()[-400:]):
                report_problems("two processes: mpirun -n 2 writes what one reporter process writes", compare(a, b))
    finally:
        cleanup(*outs, work)
    finish()


main()
