#!/usr/bin/env python3
"""Steps found with no code change (report.json "steps"), against what the
programs say of their own steps: simtrain's truth lines (SIMGPU_TRUTH: each
step's start, end and phase on every rank, the program's own account) and
its log of checkpoints (SIMTRAIN_EVENTS). A step's truth duration is, as the
report measures it, from the first rank's start to the last rank's end.
  - 4 ranks, a straggler, a checkpoint every 8 steps, evaluation every 10:
    the training step count exact, the evaluation steps their own phase (as
    many as simtrain ran), the median training step within 3% of the
    truth's and 90% of the steps within 10% of theirs, every checkpoint step
    slow with cause checkpoint, the text summary's step line;
  - the headline, the job's time per training step (steps.per_step_ms):
    `make demo`'s job (checkpoints, data loading, a straggler) within 3% of
    the truth's (the last training step's end less the first one's start,
    over the count, job-wide), the same job without checkpoints too, and
    `ringside diff` between them leads with a change within 3 points of
    the truth's; the terminal summary's first figure is the same; the
    findings by their gain, the headline (report.json, the page, the
    terminal) naming the first, which is the checkpoints' with a gain
    within 5 points or 35% of what the job without checkpoints saved;
  - --drift 30 on 2 ranks: every training step after the first within 5%
    of the truth's (the last one included: it runs to the host's return
    from the optimizer); trend_pct is the least-squares line through the
    training steps of the series, and that line, the first step left out
    on both sides (the host's warm-up before the first launch, which the
    GPU does not see), is within 5 points of the truth's; the
    step_time_drift finding;
  - a single rank without NCCL records (RINGSIDE_NCCL=0): steps from the
    kernel sequence alone, count exact, median within 3%;
  - a job with no repeating structure (tests/programs/nccl_ops: each
    collective once): no "steps" key, and the text summary says why."""
import html
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simtruth import per_step_ms  # noqa: E402
from rstest import (AGENT, BUILD, PROG, RINGSIDE, check, cleanup, finish, report_problems, run, skip,  # noqa: E402
                    tempdir)

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
NCCL_OPS = os.path.join(PROG, "nccl_ops")


def job(name, nranks, cmd, **extra):
    """Runs cmd on nranks ranks under the agent; returns (dir, report dict,
    text summary, truth step lines, events) or None when it failed."""
    d = tempdir("steps-" + name)
    out = os.path.join(d, "trace")
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "LD_PRELOAD",
              "RINGSIDE_JOB", "RINGSIDE_RANK_PID", "RINGSIDE_NCCL"):
        env.pop(k, None)
    env.update(LD_LIBRARY_PATH=SIM, SIMGPU_TRUTH=os.path.join(d, "truth"), SIMTRAIN_EVENTS=os.path.join(d, "events"),
               SIMNCCL_TIMEOUT_S="30", RINGSIDE_OUT=out, AGENT_SO=AGENT)
    env.update({k: str(v) for k, v in extra.items()})
    script = 'export LD_PRELOAD="$AGENT_SO"; exec "$@"'
    if cmd[0] == TRAIN:
        cmd = cmd + ["--ckpt-dir", os.path.join(d, "ckpt")]
    p = run([LAUNCH, "-n", str(nranks), "--", "sh", "-c", script, "sh"] + cmd, env=env, timeout=180)
    if not check(name + "_runs", p.returncode == 0, "(%d): %s" % (p.returncode, p.stderr.decode()[-500:])):
        return None
    rj = os.path.join(d, "report", "report.json")
    p = run([RINGSIDE, "report", out, "-o", os.path.join(d, "report")])
    if not check(name + "_report", p.returncode == 0, p.stderr.decode()[-500:]):
        return None
    with open(rj) as f:
        rep = json.load(f)

    def lines(path):
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(x) for x in f if x.strip()]
    truth = [t for t in lines(os.path.join(d, "truth")) if t.get("kind") == "step"]
    return d, rep, p.stdout.decode(), truth, lines(os.path.join(d, "events"))



def truth_steps(truth):
    """[(phase, duration ms)] per step index: first rank's start to last rank's end."""
    by = {}
    for t in truth:
        by.setdefault(t["index"], []).append(t)
    return [(by[i][0]["phase"], (max(t["end_ns"] for t in by[i]) - min(t["start_ns"] for t in by[i])) / 1e6)
            for i in sorted(by)]


def trend(durs):
    """trend_pct as report.json defines it."""
    n = len(durs)
    mx, my = (n - 1) / 2.0, sum(durs) / n
    slope = sum((x - mx) * (y - my) for x, y in enumerate(durs)) / sum((x - mx) ** 2 for x in range(n))
    icept = my - slope * mx
    return 100.0 * slope * (n - 1) / icept


def train_series(st):
    return [s for s in st["series"] if s["phase"] == "train"]


def count_and_median(name, st, ts, tol_pct=3.0):
    tr = [dur for ph, dur in ts if ph == "train"]
    check(name + "_train_count", st["count"] == len(tr) and len(train_series(st)) == len(tr),
          "%d training steps found, simtrain ran %d" % (st["count"], len(tr)))
    want = statistics.median(tr)
    check(name + "_median", abs(st["median_ms"] - want) <= tol_pct / 100 * want,
          "median %.3f ms, truth %.3f ms" % (st["median_ms"], want))
    return tr


def straggler_ckpt_eval():
    name = "ckpt_eval"
    r = job(name, 4, [TRAIN, "--steps", "40", "--ckpt-every", "8", "--ckpt-mb", "8", "--eval-every", "10",
                      "--eval-steps", "2", "--straggler", "1:1.5", "--bucket-mb", "8", "--bw-gbs", "40"])
    if not r:
        return
    d, rep, text, truth, events = r
    st = rep.get("steps")
    if not check(name + "_steps", st is not None and st["source"] == "collectives" and st["confidence"] > 0.5,
                 "steps %r" % ({k: v for k, v in st.items() if k != "series"} if st else None)):
        cleanup(d)
        return
    ts = truth_steps(truth)
    tr = count_and_median(name, st, ts)
    ev = [dur for ph, dur in ts if ph == "eval"]
    phases = {p["name"]: p["count"] for p in st["phases"]}
    check(name + "_eval_phase", phases.get("eval") == len(ev) and phases.get("train") == len(tr),
          "phases %r, simtrain ran %d training and %d evaluation steps" % (phases, len(tr), len(ev)))
    # every step against its truth, in order (the phases must line up)
    problems = []
    if len(st["series"]) != len(ts):
        problems.append("%d steps in the series, simtrain ran %d" % (len(st["series"]), len(ts)))
    else:
        far = [(i, s["dur_ms"], want) for i, (s, (ph, want)) in enumerate(zip(st["series"], ts))
               if s["phase"] != ph or abs(s["dur_ms"] - want) > 0.1 * want]
        if len(far) > 0.1 * len(ts):
            problems += ["step %d: %.3f ms, truth %.3f ms" % x for x in far]
    report_problems(name + "_each_step", problems)
    # the checkpoint steps: training steps whose number simtrain logged
    ck_steps = sorted({e["step"] - 1 for e in events if e["event"] == "checkpoint"})
    series = train_series(st)
    slow = {s["index"]: s for s in st["slow"]}
    check(name + "_slow_count", st.get("slow_count") == len(st["slow"]),
          "slow_count %r, %d listed (fewer than the %d listed at most: all of them)" %
          (st.get("slow_count"), len(st["slow"]), 1500))
    problems = []
    for k in ck_steps:
        if k >= len(series):
            problems.append("checkpoint after training step %d: no such step" % k)
            continue
        s = series[k]
        sl = slow.get(s["index"])
        if not s["checkpoint"] or not sl or sl["cause"] != "checkpoint":
            problems.append("training step %d (series %d, %.1f ms): checkpoint %r, slow %r" %
                            (k, s["index"], s["dur_ms"], s["checkpoint"], sl))
        want = max((e["end_ns"] - e["start_ns"]) / 1e6 for e in events
                   if e["event"] == "checkpoint" and e["step"] - 1 == k)
        if abs(s["checkpoint_ms"] - want) > 0.1 * want + 0.5:
            problems.append("training step %d: checkpoint %.2f ms, simtrain's log %.2f ms" %
                            (k, s["checkpoint_ms"], want))
    if not ck_steps:
        problems.append("simtrain logged no checkpoint")
    report_problems(name + "_checkpoint_steps_slow", problems)
    ids = [f["id"] for f in rep["findings"]]
    check(name + "_slow_steps_finding", "slow_steps" in ids, "findings %r" % ids)
    line = [x for x in text.splitlines() if x.strip().startswith("time per step:")]
    check(name + "_summary_line", line and "ms/step" in line[0] and "%d training steps" % len(tr) in line[0],
          "text summary: %r" % line)
    want = per_step_ms(truth)
    check(name + "_per_step", abs(st["per_step_ms"] - want) <= 0.03 * want,
          "time per step %.3f ms, truth %.3f ms" % (st["per_step_ms"], want))
    cleanup(d)


def findings_ranked(name, d, rep, text):
    """Findings come by recoverable_pct, largest first (context last); the
    page's first line and the terminal say report.json's headline, which
    names the first finding's cause and its gain."""
    fs = rep["findings"]
    rec = [f["recoverable_pct"] for f in fs]
    measured = [r for r in rec if r is not None]
    check(name + "_findings_by_recoverable", fs and measured == sorted(measured, reverse=True) and
          rec[:len(measured)] == measured and all(0 <= r <= 100 for r in measured),
          "recoverable_pct in order: %r" % [(f["id"], f["recoverable_pct"]) for f in fs])
    if not fs or rec[0] is None:
        return
    with open(os.path.join(d, "report", "index.html")) as f:
        page = f.read()
    head = rep.get("headline") or ""
    check(name + "_headline_names_the_largest", "%.0f%% of the step time" % rec[0] in head and
          "without it about" in head, "headline %r, first finding %r" % (head, fs[0]))
    want = '<p id="recoverable"><a href="#findings">%s</a></p>' % html.escape(head, quote=True).replace("&#x27;", "&#39;")
    check(name + "_page_names_the_largest", head and want in page, "page has no %r" % want)
    check(name + "_summary_names_the_largest", head and "gives back (%s):" % head in text,
          text[text.find("findings"):][:300])
    # the page's critical path: a row per cause of report.json's, the first
    # finding's cause among them with its gain
    block = page[page.find('<section id="critical_path">'):]
    block = block[:block.find("</table>")]
    parts = rep.get("critical_path", {}).get("parts", [])
    rows = re.findall(r"<tr><td><span class=\"key\"[^>]*></span>([^<]*)</td>", block)
    check(name + "_page_critical_path", parts and [html.unescape(r) for r in rows] == [p["text"] for p in parts],
          "rows %r, parts %r" % (rows, [p["text"] for p in parts]))


DEMO = ["--steps", "30", "--layers", "4", "--data-us", "2000", "--ckpt-mb", "32", "--straggler", "2:1.5"]


def headline():
    """make demo's job with its checkpoints and without: the headline and
    diff's change against the truth's."""
    runs = {}
    for name, ck in (("demo", "10"), ("demo_no_ckpt", "0")):
        r = job(name, 4, [TRAIN] + DEMO + ["--ckpt-every", ck])
        if not r:
            return
        d, rep, text, truth, events = r
        st = rep.get("steps")
        # 30 training steps, with or without checkpoints: the first step's
        # marks (its data loaded before any GPU work) are one of them
        if not check(name + "_steps", st is not None and st["count"] == 30 and
                     [p["name"] for p in st["phases"]] == ["train"], "steps %r" %
                     ({k: v for k, v in st.items() if k not in ("series", "slow")} if st else None)):
            cleanup(d)
            return
        # The first step starts where the host began it (its first data
        # loading after the communicator was made, summary.h's lead_ns),
        # not at its first GPU work: with checkpoints and without, the
        # program's own clock within 3%.
        want = per_step_ms(truth)
        check(name + "_per_step", abs(st["per_step_ms"] - want) <= 0.03 * want,
              "time per step %.3f ms, truth %.3f ms (median step %.3f ms, first step %.3f ms)" %
              (st["per_step_ms"], want, st["median_ms"], st["series"][0]["dur_ms"] if st["series"] else -1))
        # the terminal leads with it, as report.json has it
        lines = text.splitlines()
        shown = "%.3g ms/step" % st["per_step_ms"] if st["per_step_ms"] < 1000 else \
            "%.3g s/itr" % (st["per_step_ms"] / 1000)
        check(name + "_summary_leads", len(lines) > 1 and lines[1].strip().startswith("time per step: " + shown),
              "summary %r, per_step_ms %r" % (lines[:2], st["per_step_ms"]))
        if ck != "0":
            findings_ranked(name, d, rep, text)
        runs[name] = (d, want, rep)
    (d0, w0, r0), (d1, w1, r1) = runs["demo"], runs["demo_no_ckpt"]
    # the checkpoints' finding gives back what the job without them saved
    # (within 5 points, or 35% of the truth's gain: test_whatif's tolerance)
    ck = [f for f in r0["findings"] if f["id"] == "checkpoint_stall"]
    truth = 100 * (1 - w1 / w0)
    check("demo_checkpoint_gain", ck and ck[0] is r0["findings"][0] and ck[0]["cause"] == "checkpoint" and
          abs(ck[0]["recoverable_pct"] - truth) <= max(5, 0.35 * truth),
          "checkpoint_stall gives back %r%%, the job without checkpoints %.1f%% faster (%.2f -> %.2f ms/step)" %
          (ck[0]["recoverable_pct"] if ck else None, truth, w0, w1))
    out = os.path.join(d0, "diff")
    p = run([RINGSIDE, "diff", os.path.join(d0, "trace"), os.path.join(d1, "trace"), "-o", out])
    if check("demo_diff_runs", p.returncode == 0, p.stderr.decode()[-400:]):
        with open(os.path.join(out, "diff.json")) as f:
            dj = json.load(f)
        # the truth's change, from the program's own clock
        want = 100 * (w1 - w0) / w0
        got = dj["step_ms"]["delta_pct"]
        check("demo_diff_headline", dj["step_ms"]["basis"] == "steps" and abs(got - want) <= 3,
              "diff: time per step %+.1f%%, truth %+.1f%%" % (got, want))
        check("demo_diff_wall", dj["wall_s"]["before"] == r0["wall_s"] and dj["wall_s"]["after"] == r1["wall_s"],
              "diff wall %r, reports %r %r" % (dj["wall_s"], r0["wall_s"], r1["wall_s"]))
        text = p.stdout.decode()
        check("demo_diff_text_leads", text.startswith("time per step:"), text[:200])
    cleanup(d0)
    cleanup(d1)


def drift():
    name = "drift"
    r = job(name, 2, [TRAIN, "--steps", "30", "--drift", "30", "--bucket-mb", "1", "--fwd-us", "1000",
                      "--bwd-us", "2000"])
    if not r:
        return
    d, rep, _, truth, _ = r
    st = rep.get("steps")
    if check(name + "_steps", st is not None, "no steps"):
        tr = count_and_median(name, st, truth_steps(truth), tol_pct=5.0)
        got = [x["dur_ms"] for x in train_series(st)]
        far = ["step %d: %.3f ms, truth %.3f ms" % (i, g, w) for i, (g, w) in enumerate(zip(got, tr))
               if i and abs(g - w) > 0.05 * w]
        report_problems(name + "_each_step_after_the_first", far)
        # trend_pct is the least-squares line through the series' steps
        check(name + "_trend_pct_is_the_series'", len(got) > 2 and abs(st["trend_pct"] - trend(got)) < 0.01,
              "trend_pct %.3f, the series gives %.3f" % (st["trend_pct"], trend(got) if len(got) > 2 else 0))
        # and the steps' durations make the truth's trend; the first step
        # is left out on both sides: the host's time before the first
        # launch (the warm-up) the GPU cannot see, and one outlier at an end
        # moves a least-squares line over 30 steps by tens of points
        want = trend(tr[1:])
        check(name + "_trend", len(got) == len(tr) and abs(trend(got[1:]) - want) <= 5,
              "trend %.2f, truth %.2f" % (trend(got[1:]) if len(got) > 3 else 0, want))
        ids = [f["id"] for f in rep["findings"]]
        check(name + "_finding", "step_time_drift" in ids, "findings %r" % ids)
    cleanup(d)


def kernels_only():
    name = "kernels"
    r = job(name, 1, [TRAIN, "--steps", "20"], RINGSIDE_NCCL=0)
    if not r:
        return
    d, rep, _, truth, _ = r
    st = rep.get("steps")
    if check(name + "_steps", st is not None and st["source"] == "kernels",
             "steps %r" % ({k: v for k, v in st.items() if k != "series"} if st else None)):
        count_and_median(name, st, truth_steps(truth))
    cleanup(d)


def no_structure():
    name = "no_structure"
    d = tempdir("steps-none")
    r = job(name, 2, [NCCL_OPS, os.path.join(d, "nccl.id")])
    if r:
        dd, rep, text, _, _ = r
        check(name + "_no_steps", "steps" not in rep, "steps %r" % rep.get("steps"))
        check(name + "_says_why", "time per step: no steps found (no repeating" in text and "wall time" in text,
              text[-600:])
        cleanup(dd)
    cleanup(d)


if not (os.path.exists(TRAIN) and os.path.exists(os.path.join(SIM, "libcuda.so.1"))):
    skip("steps", "build/sim or simtrain is not built")
    finish()
straggler_ckpt_eval()
headline()
drift()
kernels_only()
if os.path.exists(NCCL_OPS):
    no_structure()
else:
    skip("no_structure", "build/tests/prog/nccl_ops is not built")
finish()
