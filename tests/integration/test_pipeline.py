#!/usr/bin/env python3
"""Pipeline bubbles: simtrain on 2 ranks as 2 pipeline stages (--pp 2), 1F1B
over 4 and then 16 micro-batches, on 4 ranks as 4 stages over 8, and with
stage 1's kernels 1.5 times longer (--stage-slow 1:1.5), and on 4 stages
with evaluation steps and checkpoints between the training steps, under the
agent with the simulator's truth file. report.json's pipeline must give each stage's bubble (its GPU's wait
in sends and receives for the other stage, in the median training step)
within 10% of the truth's, the micro-batches the schedule ran and the schedule's own
bubble, (p - 1) / (m + p - 1); the bubble must fall with more
micro-batches; the slowed stage must be named the slowest, the other's
bubble must grow as the truth's does, and no rank may be named a
straggler for it. The truth, from outside the reporter: the simulator's
truth file (each send and receive with when its stream reached it,
ready_ns, and when the transfer began, start_ns, once both ends were
there) and simtrain's steps and layout lines in it."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import check, finish  # noqa: E402
from simjob import sim_job  # noqa: E402

STEPS = 12


def job(name, args, stages=2):
    """Runs the stages, a rank each, 2 layers a stage; (report.json with its
    page as "_page", summary, truth lines) or None."""
    got = sim_job(name, stages, ["--pp", str(stages), "--steps", str(STEPS), "--layers", str(2 * stages),
                                 "--fwd-us", "1600", "--bwd-us", "3200"] + args, truth=True)
    if not got:
        return None
    rep, text, page, lines = got
    rep["_page"] = page
    return rep, text, lines


def truth_bubbles(lines):
    """Per stage: the truth's wait in sends and receives (a group of them
    waits once) in its median training step, ms, and the micro-batches."""
    layout = {x["pid"]: x for x in lines if x.get("kind") == "layout"}
    steps = {}
    for x in lines:
        if x.get("kind") == "step" and x["phase"] == "train":
            steps.setdefault(x["pid"], []).append(x)
    ops = {}
    for x in lines:
        if x.get("kind") == "p2p":
            ops.setdefault(x["pid"], {})[(x["stream"], x["launch_ns"], x["start_ns"])] = x
    by_stage = {}
    for pid, lay in layout.items():
        per = []
        for s in sorted(steps[pid], key=lambda s: s["index"]):
            per.append(sum(x["start_ns"] - x["ready_ns"] for x in ops.get(pid, {}).values()
                           if s["start_ns"] <= x["ready_ns"] <= s["end_ns"]) / 1e6)
        by_stage.setdefault(lay["pp"], []).append(per)
    out = {}
    for stage, ranks in by_stage.items():
        mean = sorted(sum(r[i] for r in ranks) / len(ranks) for i in range(len(ranks[0])))
        n = len(mean)
        out[stage] = mean[n // 2] if n % 2 else (mean[n // 2 - 1] + mean[n // 2]) / 2
    micro = {lay["microbatches"] for lay in layout.values()}
    return out, micro.pop() if len(micro) == 1 else None


def near(a, b):
    """Equal to the 6 significant digits report.json prints."""
    return abs(a - b) <= 1e-5 * max(abs(a), abs(b)) + 1e-12


def check_bubbles(name, rep, lines, stages=2, micro_tol=1e-9):
    """The report's bubbles against the truth's; returns the truth's.
    micro_tol: how far the inferred micro-batches may be from the truth's
    (with evaluation between training steps, the last stage begins its
    evaluation while the first finishes its step, and a call or two of the
    first stage's falls in the job's evaluation step)."""
    truth, micro = truth_bubbles(lines)
    pipe = rep.get("pipeline")
    if not check("%s: a pipeline of %d stages" % (name, stages),
                 pipe and pipe["stages"] == stages and len(pipe["by_stage"]) == stages, json.dumps(pipe)):
        return truth
    check(name + ": the micro-batches the schedule ran, and its bubble",
          micro and abs(pipe["microbatches"] - micro) <= micro_tol * micro and
          near(pipe["schedule_bubble_pct"], 100.0 * (stages - 1) / (pipe["microbatches"] + stages - 1)),
          json.dumps(pipe)[:300])
    for st in pipe["by_stage"]:
        want = truth.get(st["stage"])
        check("%s: stage %d's bubble within 10%% of the truth's" % (name, st["stage"]),
              want is not None and abs(st["bubble_ms_per_step"] - want) <= 0.1 * want + 0.005,
              "report %.4f ms/step, truth %s" % (st["bubble_ms_per_step"], want))
        check("%s: stage %d's share of the step agrees with its time" % (name, st["stage"]),
              near(st["bubble_pct"], 100 * st["bubble_ms_per_step"] / pipe["per_step_ms"]) and
              near(pipe["per_step_ms"], rep["steps"]["per_step_ms"]), json.dumps(st))
    return truth


def main():
    got4 = job("m4", ["--microbatches", "4"])
    got16 = job("m16", ["--microbatches", "16"])
    t4 = check_bubbles("4 micro-batches", got4[0], got4[2]) if got4 else None
    t16 = check_bubbles("16 micro-batches", got16[0], got16[2]) if got16 else None
    if got4 and got16 and got4[0].get("pipeline") and got16[0].get("pipeline"):
        b4 = [s["bubble_pct"] for s in got4[0]["pipeline"]["by_stage"]]
        b16 = [s["bubble_pct"] for s in got16[0]["pipeline"]["by_stage"]]
        check("the bubble falls with more micro-batches, as in the truth",
              all(x > y for x, y in zip(b4, b16)) and all(t4[k] > t16[k] for k in t4),
              "%s vs %s" % (b4, b16))
        line = [ln for ln in got4[1].splitlines() if ln.strip().startswith("pipeline:")]
        check("the summary has the pipeline's line", len(line) == 1 and "4 micro-batches" in line[0], "\n".join(line))
        page = got4[0]["_page"]
        i = page.find('id="table-pipeline"')
        table = page[i:page.find("</table>", i)] if i >= 0 else ""
        check("the page has the pipeline's table, a row per stage, and the schedule's bubble",
              table.count("<tr>") == 3 and "the 1F1B schedule's own bubble is 20.0%" in page, table[:300])
        f4 = [f for f in got4[0]["findings"] if f["id"] == "pipeline_bubble"]
        check("4 micro-batches: a finding that the stages wait for each other, advising more micro-batches",
              len(f4) == 1 and "micro-batches" in f4[0]["advice"] and "20.0%" in f4[0]["evidence"],
              json.dumps(f4)[:300])
    # 4 stages: the middle ones send and receive both ways on one
    # communicator, their calls paired per peer
    got = job("4 stages", ["--microbatches", "8"], stages=4)
    if got:
        check_bubbles("4 stages", got[0], got[2], stages=4)
        check("4 stages: the steps the program ran, found whole on every stage",
              got[0]["steps"]["count"] == STEPS and got[0]["steps"]["confidence"] > 0.9,
              json.dumps({k: got[0]["steps"].get(k) for k in ("count", "confidence", "source")}))
    # 4 stages with evaluation and checkpoints between the training steps:
    # the middle stages' longest gaps (waiting for the stage before) lie
    # inside their steps, and steps cut there break at each evaluation
    ckpt = tempfile.mkdtemp(prefix="rs-pipeline-ckpt-")
    got = job("4 stages, evaluation", ["--microbatches", "8", "--eval-every", "4", "--eval-steps", "2",
                                       "--ckpt-every", "6", "--ckpt-mb", "4", "--ckpt-dir", ckpt], stages=4)
    shutil.rmtree(ckpt, ignore_errors=True)
    if got:
        rep, text, lines = got
        evals = {}
        for x in lines:
            if x.get("kind") == "step":
                evals.setdefault(x["pid"], []).append(x["phase"])
        n_eval = {ph.count("eval") for ph in evals.values()}
        phases = {p["name"]: p["count"] for p in rep["steps"].get("phases", [])}
        check("4 stages, evaluation: the training and evaluation steps the program ran, on every stage",
              len(n_eval) == 1 and rep["steps"]["count"] == STEPS and phases.get("eval") == n_eval.pop() > 0 and
              rep["steps"]["confidence"] > 0.8,
              json.dumps({k: rep["steps"].get(k) for k in ("count", "confidence", "phases")}))
        check_bubbles("4 stages, evaluation", rep, lines, stages=4, micro_tol=0.02)
    slow = job("stage 1 slow", ["--microbatches", "4", "--stage-slow", "1:1.5"])
    if slow:
        rep, text, lines = slow
        ts = check_bubbles("stage 1 slow", rep, lines)
        pipe = rep.get("pipeline") or {}
        check("stage 1 slow: named the slowest", pipe.get("slowest") == 1, json.dumps(pipe)[:300])
        fs = [f for f in rep["findings"] if f["id"] == "pipeline_bubble"]
        check("stage 1 slow: the finding names it and advises balancing the stages",
              len(fs) == 1 and "stage 1 is the slowest" in fs[0]["evidence"] and "Balance" in fs[0]["advice"],
              json.dumps(fs)[:300])
        if t4 and pipe.get("by_stage"):
            grew = pipe["by_stage"][0]["bubble_ms_per_step"] - got4[0]["pipeline"]["by_stage"][0]["bubble_ms_per_step"]
            want = ts[0] - t4[0]
            check("stage 1 slow: stage 0's bubble grows by what the truth says, within 10%",
                  want > 0 and abs(grew - want) <= 0.1 * want + 0.01, "grew %.4f ms/step, truth %.4f" % (grew, want))
        check("stage 1 slow: no rank named a straggler for it", rep["stragglers"] == [] and
              not any(f["id"] == "straggler_rank" for f in rep["findings"]), json.dumps(rep["stragglers"])[:300])
    finish()


if __name__ == "__main__":
    main()
