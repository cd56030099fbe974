#!/usr/bin/env python3
"""Flame graphs of some of the steps: `ringside flame --steps A-B | --slow-steps
| --phase NAME`.

tests/programs/step_parts marks its steps with NVTX ranges and spins in a
function that says which part of the run a step is (early_work, late_work,
slow_work for three steps three times as long, eval_work for the "eval_step"
ranges), writing its own account of every step in the order the report
numbers them (the truth). Each selection's CPU graph gives each function
its share of the chosen steps' time by the truth, within 10 points or 4 sd
(sampled.py; the one function of steps that ran only it: 90% or more);
--slow-steps chooses what report.json lists as slow, which holds the
program's slow steps; --phase train and --phase eval
together hold the whole run's CPU time (within 3%). The report graphs its
three slowest steps (OUT/step-N-KIND.svg, named in report.json's slow
list), each CPU graph 90% or more in the function the program ran in that
step, and the page links them; a drag across four bars of the page's step
chart (headless Chromium) says the flame command for those steps, which
gives what --steps gave. Wrong values are usage errors; a range past the job's steps and a job
without steps say why."""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import PROG, RINGSIDE, check, cleanup, finish, flame_shares, run, tempdir, traced_env  # noqa: E402
from sampled import cpu_samples, samples_in, share_check  # noqa: E402
import headless  # noqa: E402

FUNCS = ("early_work", "late_work", "slow_work", "eval_work")


def shares(out, *pick):
    """({function: CPU ns}, total ns, process) of the CPU graph of a pick."""
    return flame_shares(out, FUNCS, *pick)


def expected(truth, indices):
    """{function: share of the chosen steps' time} by the program's account."""
    chosen = [t for t in truth if t["index"] in indices]
    total = sum(t["end_ns"] - t["start_ns"] for t in chosen)
    by = dict.fromkeys(FUNCS, 0.0)
    for t in chosen:
        by[t["function"]] += (t["end_ns"] - t["start_ns"]) / total
    return by


def held(name, out, truth, indices, pick):
    """Each function's share of a pick's CPU graph against the truth's share
    of the chosen steps' time (the functions in neither left out)."""
    by, total, p = shares(out, *pick)
    want = expected(truth, indices)
    label = "%s (%s)" % (name, " ".join(pick))
    if not check("%s: a CPU graph of %.2f s" % (label, total / 1e9), p.returncode == 0 and total > 0,
                 p.stderr.decode(errors="replace")[-300:]):
        return total
    n = samples_in(total, cpu_samples(out))
    for k in FUNCS:
        if want[k] or by[k]:
            share_check("%s: %s's share" % (label, k), 100.0 * by[k] / total, 100 * want[k], n, floor=10.0)
    return total


def svg_shares(path):
    """({function: weight}, root weight) of a flame graph SVG: a function's
    weight is that of its outermost frames."""
    ns = "{http://www.w3.org/2000/svg}"
    frames = [g for g in ET.parse(path).getroot().iter(ns + "g") if g.get("class") == "f"]
    by = dict.fromkeys(FUNCS, 0)
    root = sum(int(g.get("data-w")) for g in frames if g.get("data-d") == "0")
    for g in frames:
        name = g.find(ns + "title").text.split("\n")[0].strip()
        if name in by:
            by[name] += int(g.get("data-w"))
    return by, root


def report_graphs(rep, truth, slow_listed, counted):
    """The report's graphs of its slowest steps: at most 3, each the step
    that took the most times the median, with its CPU graph spent in the
    function the program ran in that step (counted: cpu_samples() of the
    traces)."""
    graphed = [s for s in slow_listed if s.get("graphs")]
    top = sorted(slow_listed, key=lambda s: -s["x_median"])[:3]
    check("the report graphs its %d slowest steps (%s)" % (len(top), [s["index"] for s in top]),
          sorted(s["index"] for s in graphed) == sorted(s["index"] for s in top),
          "graphed %s" % [(s["index"], s["graphs"]) for s in graphed])
    with open(os.path.join(rep, "index.html"), encoding="utf-8") as f:
        page = f.read()
    links = {"step-%d-%s.svg" % (s["index"], k) for s in graphed for k in s["graphs"]}
    para = page[page.find('id="slow-graphs"'):]
    para = para[:para.find("</p>")]
    check("the page links every one of those graphs beside the step chart",
          graphed and all('href="%s"' % name in para for name in links), para[:300])
    fn = {t["index"]: t["function"] for t in truth}
    for s in graphed:
        path = os.path.join(rep, "step-%d-cpu.svg" % s["index"])
        if not check("step %d: its graphs' files (%s)" % (s["index"], s["graphs"]),
                     all(os.path.exists(os.path.join(rep, "step-%d-%s.svg" % (s["index"], k))) for k in s["graphs"])
                     and "cpu" in s["graphs"], str(os.listdir(rep))):
            continue
        by, root = svg_shares(path)
        want = fn[s["index"]]
        share_check("step %d's CPU graph: %s, which the program ran then" % (s["index"], want),
                    100.0 * by[want] / max(root, 1), 100.0, samples_in(root, counted), floor=10.0, detail=str(by))


def long_chart(work):
    """A job of 2,400 steps (step_parts: 2,000 training steps of 0.3 ms, an
    evaluation step after every fifth): report.json's series stands for runs
    of steps; the page's step chart still covers every step, each bar with
    its bars drawn, the last ending at the last step."""
    out, rep = os.path.join(work, "long"), os.path.join(work, "long-r")
    env = traced_env(out, RINGSIDE_SAMPLE_HZ=0)
    env.pop("NVTX_INJECTION64_PATH", None)
    p = run([os.path.join(PROG, "step_parts"), os.path.join(work, "long-truth"), "2000", "0.3"], env=env, cwd=work,
            timeout=120)
    q = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    if not check("a job of 2,400 steps runs and is reported", p.returncode == 0 and q.returncode == 0,
                 (p.stderr + q.stderr).decode(errors="replace")[-300:]):
        return
    with open(os.path.join(rep, "report.json")) as f:
        st = json.load(f)["steps"]
    with headless.Browser() as b:
        b.open(os.path.join(rep, "index.html"))
        got = b.eval("(function(){var g=document.querySelectorAll('#step-bars g[data-a]'),e=0;"
                     "Array.prototype.forEach.call(g,function(x){if(!x.querySelector('rect'))e++;});"
                     "return [g.length,e,+g[0].getAttribute('data-a'),+g[g.length-1].getAttribute('data-b')];})()")
    run_, total = st.get("series_run", 1), st.get("series_steps", len(st["series"]))
    check("its step chart: %s bars (report.json: %d steps, %d series entries of %s), none empty, steps 0 to %d"
          % (got and got[0], total, len(st["series"]), run_, total - 1),
          total == 2400 and run_ > 1 and got and got[0] == len(st["series"]) and got[1] == 0 and got[2] == 0
          and got[3] == total - 1, str(got))


def main():
    work = tempdir("flame-steps")
    out, rep, truth_path = (os.path.join(work, n) for n in ("t", "r", "truth"))
    env = traced_env(out, RINGSIDE_SAMPLE_HZ=499)
    env.pop("NVTX_INJECTION64_PATH", None)
    # steps of 50 ms: 12 samples each from a 250 Hz kernel tick on
    p = run([os.path.join(PROG, "step_parts"), truth_path, "40", "50"], env=env, cwd=work, timeout=120)
    if not check("step_parts runs under the agent", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        finish()
    with open(truth_path) as f:
        truth = [json.loads(line) for line in f if line.strip()]
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    with open(os.path.join(rep, "report.json")) as f:
        steps = json.load(f).get("steps") or {}
    if not check("the report finds the program's %d steps, from NVTX" % len(truth),
                 steps.get("source") == "nvtx" and len(steps.get("series", [])) == len(truth),
                 "%s; %s" % (repr(steps)[:200], p.stderr.decode(errors="replace")[-200:])):
        finish()

    # four training steps in a row of the second half
    late = [t["index"] for t in truth if t["function"] == "late_work"]
    a = next(i for i in late if all(i + k in late for k in range(4)))
    held("four steps in a row", out, truth, set(range(a, a + 4)), ["--steps", "%d-%d" % (a, a + 3)])
    one = next(t["index"] for t in truth if t["function"] == "slow_work")
    held("one step", out, truth, {one}, ["--steps", str(one)])
    # 13 training steps, 3 evaluations and a slow step: about 240 samples,
    # 4 sd of the training steps' share (68%) 12 points
    early = [t["index"] for t in truth if t["function"] == "early_work"]
    held("a range across evaluations and a slow step", out, truth, set(range(early[2], early[14] + 1)),
         ["--steps", "%d-%d" % (early[2], early[14])])

    # the page: a drag across the step chart's bars a..a+3 says the command
    # for those steps, which gives what --steps gave above
    with headless.Browser() as b:
        b.open(os.path.join(rep, "index.html"))
        said = b.eval("(function(){function at(i,type){var r=document.querySelector('#step-bars g[data-a=\"'+i+"
                      "'\"] rect');r.dispatchEvent(new MouseEvent(type,{bubbles:true}));}at(%d,'mousedown');"
                      "at(%d,'mouseup');return document.getElementById('step-pick').textContent;})()" % (a, a + 3))
        problems = b.problems()
    m = re.search(r"ringside flame (\S+) --steps (\d+)-(\d+)", said or "")
    check("a drag across steps %d to %d on the page says their flame command" % (a, a + 3),
          m and (int(m.group(2)), int(m.group(3))) == (a, a + 3) and os.path.dirname(m.group(1)) == out
          and not problems, "%r %s" % (said, problems))
    if m:
        held("the page's command", out, truth, set(range(a, a + 4)), ["--steps", "%s-%s" % m.group(2, 3)])
    slow = {s["index"] for s in steps.get("slow", [])}
    made = {t["index"] for t in truth if t["function"] == "slow_work"}
    check("report.json's slow steps hold the program's %s" % sorted(made), made <= slow, "slow %s" % sorted(slow))
    held("the slow steps", out, truth, slow, ["--slow-steps"])
    report_graphs(rep, truth, steps.get("slow", []), cpu_samples(out))
    evals = {t["index"] for t in truth if t["name"] == "eval_step"}
    ev = held("the evaluation phase", out, truth, evals, ["--phase", "eval"])
    tr = held("the training phase", out, truth, {t["index"] for t in truth} - evals, ["--phase", "train"])
    _, whole, _ = shares(out)
    check("train and eval hold the whole run's CPU time (%.3f against %.3f s)" % ((tr + ev) / 1e9, whole / 1e9),
          whole > 0 and abs(tr + ev - whole) <= 0.03 * whole, "")

    q = run([RINGSIDE, "flame", out, "--steps", "500-600", "-o", "-"])
    check("a range past the job's steps: status 1, saying how many it has",
          q.returncode == 1 and b"has %d steps" % len(truth) in q.stderr, q.stderr.decode()[-200:])
    for bad in (["--steps", "5-3"], ["--steps", "x"], ["--phase", "lunch"], ["--steps", "1", "--from", "0"],
                ["--steps", "1", "--slow-steps"]):
        q = run([RINGSIDE, "flame", out, "-o", "-"] + bad)
        check("%s: a usage error (status 2) that says what" % " ".join(bad),
              q.returncode == 2 and b"ringside" in q.stderr and not q.stdout, q.stderr.decode()[-200:])
    long_chart(work)
    plain = os.path.join(work, "plain")
    p = run([os.path.join(PROG, "two_phases"), "0.2"], env=traced_env(plain), timeout=60)
    q = run([RINGSIDE, "flame", plain, "--slow-steps", "-o", "-"])
    check("a job without steps: status 1, saying so", p.returncode == 0 and q.returncode == 1
          and b"no steps found" in q.stderr and not q.stdout, q.stderr.decode()[-200:])
    cleanup(work)
    finish()


if __name__ == "__main__":
    main()
