#!/usr/bin/env python3
"""What removing a cause gives back (report.json critical_path and the
findings, critpath.h): simtrain on 4 ranks, each job with one injected cause
and the same job without it, the truth's gain from the program's own clock
(SIMGPU_TRUTH step lines: 1 - time per step without / with). For each case:
- the first finding names the injected cause (its "cause");
- that finding's recoverable_pct is within max(5 points, 35%) of the
  truth's gain, and no other finding claims more than that gain + 10 points;
- the critical path's parts add up to steps.per_step_ms (within 1%), and no
  finding's gain is more than its cause's part of the path; the gains add up
  to no more than the step.
A job with nothing injected has no finding above 10%; the 3D-parallel job
(--tp 2 --pp 2, 8 ranks) has its path's parts add up. Each arm runs twice,
the shorter time per step its truth; three times where the cause gives
back less than 15%. `make whatif` runs this test alone. Its host-side waits come from simtrain's
--host-wait (a sleep, a condition variable, a pipe, a log file)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, RINGSIDE, check, cleanup, finish, run, tempdir  # noqa: E402
from simtruth import per_step_ms  # noqa: E402

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
BASE = ["--steps", "40", "--layers", "4"]
ONE = 2     # the rank a one-rank cause is on

# (name, the job's options with the cause, without it, shell lines each
# rank runs first (a cause on some ranks only), the cause)
CASES = [
    ("checkpoints", ["--ckpt-every", "5", "--ckpt-mb", "32"], [], "", "checkpoint"),
    ("straggler_kernels", ["--straggler", "%d:1.5" % ONE], [], "", "imbalance"),
    ("straggler_host", ["--host-work", "%d:1500" % ONE], [], "", "host"),
    ("data_sleep_all", ["--data-us", "3000"], [], "", "data_loading"),
    ("data_sleep_one", [], [], "[ \"$RANK\" = %d ] && export SIMTRAIN_CONFIG='--data-us 3000'; " % ONE,
     "data_loading"),
    ("slow_read_one", ["--slow-data", "%d:3000" % ONE], [], "", "data_loading"),
    ("slow_read_all", [], [], "export SIMTRAIN_CONFIG=\"--slow-data $RANK:3000\"; ", "data_loading"),
    ("overlap_off", ["--no-overlap"], [], "", "transfer"),
    ("slow_link", ["--no-overlap", "--bw-gbs", "2"], ["--bw-gbs", "2"], "", "transfer"),
    ("pipeline_bubble", ["--pp", "2", "--stage-slow", "1:2"], ["--pp", "2"], "", "imbalance"),
    ("host_sleeps", ["--host-wait", "sleep:2000"], [], "", "sleep"),
    ("lock_waits", ["--host-wait", "cond:2000"], [], "", "lock"),
    ("host_waits", ["--host-wait", "poll:2000"], [], "", "host_wait"),
    ("file_io", ["--host-wait", "write:256"], [], "", "file_io"),
    ("sync_gpu_bound", [], ["--no-step-sync"], "", "sync"),
    # 100 kernels a layer for 1: the same GPU work in 800 launches a step;
    # four ranks launching that hard on a two-core machine also wait for a
    # CPU, and that wait (run_delay) is the host's as well
    ("host_bound", ["--kernels-per-layer", "100"], [], "", "host"),
    # five evaluation steps after every five training steps: about a fifth
    # of the time. Two (a tenth) gave back 4.9% to 11.2% over runs of the
    # same pair on this machine, the report 10.1% to 11.2%: the truth's noise
    # alone could take it past the 5 points allowed.
    ("evaluation", ["--eval-every", "5", "--eval-steps", "5"], [], "", "evaluation"),
]
# Not here: a sync in a host-bound loop (800 launches a step, with and
# without --no-step-sync). Four ranks launching that hard saturate this
# machine's two cores, and the truth's gain is the scheduler's: measured
# 11.4% and -6.9% in two runs of the same pair, while the report gives the
# sync 2-3% and the host's launches ~50% (the first finding, rightly).


def job(name, args, pre="", ranks=4, base=None):
    """(report.json, the truth's time per step in ms) or None."""
    d = tempdir("whatif-" + name)
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LD_PRELOAD", "RINGSIDE_JOB",
              "RINGSIDE_RANK_PID", "SIMTRAIN_CONFIG"):
        env.pop(k, None)
    env.update(LD_LIBRARY_PATH=SIM, SIMNCCL_TIMEOUT_S="60", RINGSIDE_OUT=os.path.join(d, "trace"),
               AGENT_SO=os.path.join(BUILD, "libagent.so"), SIMGPU_TRUTH=os.path.join(d, "truth.%p"))
    cmd = [LAUNCH, "-n", str(ranks), "--", "sh", "-c", pre + 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", TRAIN,
           "--ckpt-dir", d] + (BASE if base is None else base) + args
    out = None
    p = run(cmd, env=env, timeout=300)
    if check(name + ": simtrain runs", p.returncode == 0, p.stderr.decode(errors="replace")[-400:]):
        r = run([RINGSIDE, "report", os.path.join(d, "trace"), "-o", os.path.join(d, "report"), "-q"])
        if check(name + ": report succeeds", r.returncode == 0, r.stderr.decode(errors="replace")[-400:]):
            with open(os.path.join(d, "report", "report.json")) as f:
                rep = json.load(f)
            lines = []
            for fn in os.listdir(d):
                if fn.startswith("truth."):
                    with open(os.path.join(d, fn)) as f:
                        lines += [json.loads(x) for x in f if x.strip()]
            steps = [t for t in lines if t.get("kind") == "step"]
            ops = [t for t in lines if t.get("kind") not in ("step", "layout")]
            out = rep, per_step_ms(steps, ops)
    cleanup(d)
    return out


def gains(rep):
    return [(f["id"], f.get("cause"), f["recoverable_pct"]) for f in rep.get("findings", [])]


def path_checks(name, rep):
    """The path adds up to the step; no finding claims more than its part;
    the gains add up to no more than the step."""
    cp = rep.get("critical_path")
    if not check(name + ": critical_path present", cp is not None and "steps" in rep, str(rep.get("steps"))[:200]):
        return {}
    per = rep["steps"]["per_step_ms"]
    total = sum(p["ms_per_step"] for p in cp["parts"])
    check(name + ": the path's parts add up to the time per step (within 1%)", abs(total - per) <= 0.01 * per,
          "%.3f != %.3f" % (total, per))
    part = {p["cause"]: p for p in cp["parts"]}
    over = [(f["id"], f["recoverable_pct"], part[f["cause"]]["pct"]) for f in rep["findings"]
            if f.get("cause") and f["recoverable_pct"] is not None and
            f["recoverable_pct"] > part.get(f["cause"], {"pct": 0})["pct"] + 1e-6]
    check(name + ": no finding claims more than its cause's part of the path", not over, str(over))
    claimed = sum(f["recoverable_pct"] or 0 for f in rep["findings"] if f.get("cause"))
    check(name + ": the findings' gains add up to no more than the step", claimed <= 100 + 1e-6, "%.1f" % claimed)
    causes = [f.get("cause") for f in rep["findings"] if f.get("cause")]
    check(name + ": no two findings claim the same cause", len(causes) == len(set(causes)), str(causes))
    return part


def main():
    for name, with_args, without_args, pre, cause in CASES:
        # each arm twice, its time per step the shorter (a run the machine
        # slowed says less of the job than one it left alone); a cause that
        # gives back less than 15% (a few tenths of a millisecond a step,
        # the size of this machine's noise) a third time: the GPU-bound
        # sync's pair read 3.35 -> 3.00 ms/step (10.4%) in one clean run,
        # where eight runs of each arm gave 3.19-3.53 and 3.04-3.24 (about 5%)
        a = [job(name + "-with", with_args, pre) for _ in range(2)]
        b = [job(name + "-without", without_args) for _ in range(2)]
        if not all(a) or not all(b):
            continue
        if 100 * (1 - min(x[1] for x in b) / min(x[1] for x in a)) < 15:
            a.append(job(name + "-with", with_args, pre))
            b.append(job(name + "-without", without_args))
            if not a[-1] or not b[-1]:
                continue
        # the report of the run the machine slowed least, and its time
        rep, t_with = min(a, key=lambda x: x[1])
        t_without = min(x[1] for x in b)
        truth = 100 * (1 - t_without / t_with) if t_with > 0 else 0
        path_checks(name, rep)
        fs = [f for f in rep.get("findings", []) if f["recoverable_pct"] is not None]
        mine = [f for f in fs if f.get("cause") == cause]
        why = "truth %.1f%% (%.2f -> %.2f ms/step); findings %s" % (truth, t_with, t_without, gains(rep))
        print("    %s: %s" % (name, why), flush=True)
        check(name + ": the first finding names the cause (%s)" % cause, bool(fs) and fs[0].get("cause") == cause,
              why)
        if check(name + ": a finding claims the cause", bool(mine), why):
            got = mine[0]["recoverable_pct"]
            check(name + ": its gain within max(5 points, 35%) of the truth's",
                  abs(got - truth) <= max(5.0, 0.35 * abs(truth)), "%.1f%%; %s" % (got, why))
        others = [f for f in fs if f.get("cause") != cause and f["recoverable_pct"] > truth + 10]
        check(name + ": no other finding claims more than the truth's gain + 10 points", not others, why)
    # the 3D-parallel job (8 ranks: tensor 2, pipeline 2, data 2): the
    # path's parts add up, no finding claims more than its part
    got = job("tp2_pp2", ["--tp", "2", "--pp", "2", "--act-mb", "2", "--bucket-mb", "8", "--fwd-us", "100",
                          "--bwd-us", "200"], ranks=8, base=["--steps", "12", "--layers", "4"])
    if got:
        path_checks("tp2_pp2", got[0])
    got = job("nothing", [])
    if got:
        rep, _ = got
        path_checks("nothing", rep)
        big = [(f["id"], f["recoverable_pct"]) for f in rep.get("findings", [])
               if f["recoverable_pct"] is not None and f["recoverable_pct"] > 10]
        check("nothing injected: no finding above 10%", not big, str(gains(rep)))
    return finish()


if __name__ == "__main__":
    sys.exit(main())
