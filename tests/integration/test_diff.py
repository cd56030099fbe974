#!/usr/bin/env python3
"""`ringside diff BEFORE AFTER` against what the programs say of their own
runs, one knob changed at a time:

- simtrain, overlap off -> on: the exposed communication's change within 1
  point of the change the simulator's truth files give, the time per step's
  within 3% of simtrain's own step lines, exposed_communication resolved;
- a straggler removed: straggler_rank resolved, the time per step's change
  within 3% of simtrain's, and per rank the fast rank's wait for the slowed
  one gone;
- checkpoints every 4 steps -> every 16: checkpoint_pct before and after
  within 1 point of simtrain's own log;
- the gradient bucket size changed: the collective rows' calls and bytes
  as the truth files give them;
- the Kineto pair of ../shared/data/kineto (HTA's trace-diff test pair):
  the kernel rows equal the two reports' kernel tables;
- hot3 with hot_c made twice as slow: the differential CPU flame graph
  (its two-column folded file) gives hot_c's share before and after, and
  its change, within 5 points or 4 sd (sampled.py) of what the program's
  own clock gives (its thread's CPU time around each call: about 1 in 10
  units, then 2 in 11), and the SVG colours it red;
- a job against itself: every delta zero, every finding remaining; jobs of
  2 and 4 ranks: kernels by per-process means, said so;
- sides given as trace folders or report folders alike; the page in
  headless Chromium with no console errors; bad input and usage errors."""
import glob
import json
import os
import re
import statistics

from rstest import AGENT, BUILD, PROG, RINGSIDE, ROOT, check, cleanup, finish, run, skip, tempdir
from sampled import change_sd, cpu_samples, samples_in, share_check
from simtruth import checkpoint_pct_logged, per_step_ms, truth_gpu

try:
    from headless import Browser, find_chromium
except ImportError:
    Browser = find_chromium = None

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
KINETO = os.path.join(os.path.dirname(ROOT), "shared", "data", "kineto")


def sim_job(d, name, nranks, args):
    """simtrain under the agent; (trace folder, truth lines, step lines,
    events) or None."""
    base = os.path.join(d, name)
    os.makedirs(base)
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "LD_PRELOAD",
              "RINGSIDE_JOB", "RINGSIDE_RANK_PID"):
        env.pop(k, None)
    env.update(LD_LIBRARY_PATH=SIM, SIMGPU_TRUTH=os.path.join(base, "truth"), SIMTRAIN_EVENTS=os.path.join(base, "events"),
               SIMNCCL_TIMEOUT_S="60", RINGSIDE_OUT=os.path.join(base, "trace"), AGENT_SO=AGENT)
    script = 'export LD_PRELOAD="$AGENT_SO"; exec "$@"'
    p = run([LAUNCH, "-n", str(nranks), "--", "sh", "-c", script, "sh", TRAIN, "--ckpt-dir", base] + args, env=env,
            timeout=240)
    if not check(name + ": simtrain runs", p.returncode == 0, p.stderr.decode()[-300:]):
        return None

    def lines(path):
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(x) for x in f if x.strip()]
    truth = lines(os.path.join(base, "truth"))
    return (glob.glob(os.path.join(base, "trace", "*"))[0], [t for t in truth if t.get("kind") != "step"],
            [t for t in truth if t.get("kind") == "step"], lines(os.path.join(base, "events")))


def diff(d, name, before, after, *extra):
    out = os.path.join(d, "diff-" + name)
    p = run([RINGSIDE, "diff", before, after, "-o", out, "-q"] + list(extra))
    if not check(name + ": ringside diff", p.returncode == 0, p.stderr.decode()[-300:]):
        return None, out
    with open(os.path.join(out, "diff.json")) as f:
        return json.load(f), out


def report(d, name, trace):
    out = os.path.join(d, "report-" + name)
    p = run([RINGSIDE, "report", trace, "-o", out, "-q"])
    check(name + ": ringside report", p.returncode == 0, p.stderr.decode()[-300:])
    return out


def step_change_check(name, dj, b, a):
    """diff's lead figure, the time per step, changes as simtrain's own."""
    # from the first step's first GPU work: the host's start-up before it
    # (tens of ms under the agent) weighs on a job of 7 ms steps
    want = per_step_ms(a[2], a[1]) / per_step_ms(b[2], b[1])
    got = dj["step_ms"]["after"] / dj["step_ms"]["before"] if dj["step_ms"]["before"] else 0
    check(name + ": time per step %.3f -> %.3f ms, x%.3f; simtrain's own x%.3f (within 3%%)"
          % (dj["step_ms"]["before"], dj["step_ms"]["after"], got, want),
          dj["step_ms"]["basis"] == "steps" and abs(got / want - 1) <= 0.03)


def truth_exposed(truth, nranks, overlap):
    return statistics.mean(truth_gpu(truth, r, overlap)[1] for r in range(nranks))


def overlap_case(d):
    args = ["--steps", "40", "--layers", "4", "--fwd-us", "500", "--bwd-us", "1500", "--bucket-mb", "32"]
    b = sim_job(d, "no-overlap", 2, args + ["--no-overlap"])
    a = sim_job(d, "overlap", 2, args + ["--overlap"])
    if not b or not a:
        return
    # before as a report folder, after as a trace folder
    dj, _ = diff(d, "overlap", report(d, "no-overlap", b[0]), a[0])
    if not dj:
        return
    want = truth_exposed(a[1], 2, True) - truth_exposed(b[1], 2, False)
    got = dj["gpu"]["exposed_comm_pct"]["delta"]
    check("overlap off -> on: exposed communication %+.2f points, truth %+.2f (within 1)" % (got, want),
          abs(got - want) <= 1)
    step_change_check("overlap off -> on", dj, b, a)
    check("overlap off -> on: exposed_communication resolved", "exposed_communication" in dj["findings"]["resolved"],
          str(dj["findings"]))


def straggler_case(d):
    args = ["--steps", "40", "--fwd-us", "500", "--bwd-us", "1000"]
    b = sim_job(d, "straggler", 2, args + ["--straggler", "1:2.0"])
    a = sim_job(d, "even", 2, args)
    if not b or not a:
        return
    dj, _ = diff(d, "straggler", b[0], a[0])
    if not dj:
        return
    check("straggler removed: straggler_rank resolved", "straggler_rank" in dj["findings"]["resolved"],
          str(dj["findings"]))
    r = {x["rank"]: x for x in dj["ranks"]}
    check("straggler removed: per rank, rank 0 waited for slowed rank 1 before (%.1f ms against %.1f), far less "
          "after (%.1f ms)" % (r[0]["collective_wait_us_before"] / 1e3, r[1]["collective_wait_us_before"] / 1e3,
                               r[0]["collective_wait_us_after"] / 1e3),
          r[0]["collective_wait_us_before"] > 3 * r[1]["collective_wait_us_before"] and
          r[0]["collective_wait_us_after"] < 0.5 * r[0]["collective_wait_us_before"])
    step_change_check("straggler removed", dj, b, a)


def checkpoint_case(d):
    args = ["--steps", "32", "--ckpt-mb", "48", "--fwd-us", "500", "--bwd-us", "1000"]
    b = sim_job(d, "ckpt4", 2, args + ["--ckpt-every", "4"])
    a = sim_job(d, "ckpt16", 2, args + ["--ckpt-every", "16"])
    if not b or not a:
        return
    dj, _ = diff(d, "checkpoints", b[0], a[0])
    if not dj:
        return
    for side, job in (("before", b), ("after", a)):
        want = checkpoint_pct_logged(job[3])[0]
        got = dj["checkpoint_pct"][side]
        check("checkpoints every 4 -> 16: %s %.2f%%, simtrain's log %.2f%% (within 1)" % (side, got, want),
              abs(got - want) <= 1)


def truth_colls(truth):
    """{(op, bytes): calls} from the truth file: one call per (communicator,
    sequence number)."""
    calls = {}
    for t in truth:
        if t["kind"] == "collective":
            calls.setdefault((t["op"], t["bytes"]), set()).add((t.get("comm"), t["seq"]))
    return {k: len(v) for k, v in calls.items()}


def bucket_case(d):
    args = ["--steps", "20", "--layers", "4"]
    b = sim_job(d, "bucket25", 2, args + ["--bucket-mb", "25"])
    a = sim_job(d, "bucket4", 2, args + ["--bucket-mb", "4"])
    if not b or not a:
        return
    dj, _ = diff(d, "buckets", b[0], a[0])
    if not dj:
        return
    want_b, want_a = truth_colls(b[1]), truth_colls(a[1])
    got = {(c["op"], c["bytes"]): (c["count_before"], c["count_after"]) for c in dj["collectives"]}
    keys = set(want_b) | set(want_a)
    problems = []
    for k in sorted(keys, key=str):
        w = (want_b.get(k, 0), want_a.get(k, 0))
        g = got.get(k)
        if g != w:
            problems.append("%s %d bytes: %s, truth %s" % (k[0], k[1], g, w))
    check("bucket size 25 -> 4 MiB: collective rows' calls and bytes as the truth gives (%d rows)" % len(keys),
          keys and not problems and len(got) == len(keys), "; ".join(problems[:4]) or str(got))


def kernel_table(rep_dir):
    with open(os.path.join(rep_dir, "report.json")) as f:
        rep = json.load(f)
    t = {}
    for p in rep["processes"]:
        for k in p.get("kernels", []):
            c, us = t.get(k["name"], (0, 0.0))
            t[k["name"]] = (c + k["count"], us + k["total_us"])
    return t


def kineto_case(d):
    pair = [os.path.join(KINETO, n) for n in ("a100-8rank-r3-control.json.gz", "a100-r1-test.json.gz")]
    if not all(os.path.exists(p) for p in pair):
        skip("kineto pair", "../shared/data/kineto lacks the pair")
        return
    reps = []
    for i, src in enumerate(pair):
        imp = os.path.join(d, "kineto-%d" % i)
        p = run([RINGSIDE, "import-kineto", src, "-o", imp, "-q"])
        if not check("kineto pair: import %s" % os.path.basename(src), p.returncode == 0, p.stderr.decode()[-300:]):
            return
        reps.append(report(d, "kineto-%d" % i, imp))
    dj, _ = diff(d, "kineto", reps[0], reps[1])
    if not dj:
        return
    tb, ta = kernel_table(reps[0]), kernel_table(reps[1])
    problems = []
    for k in dj["kernels"]:
        wb, wa = tb.get(k["name"], (0, 0.0)), ta.get(k["name"], (0, 0.0))
        if (k["count_before"], k["count_after"]) != (wb[0], wa[0]) or \
                abs(k["total_us_before"] - wb[1]) > 1e-3 * max(1, wb[1]) or \
                abs(k["total_us_after"] - wa[1]) > 1e-3 * max(1, wa[1]):
            problems.append("%s: %r against %r / %r" % (k["name"][:60], k, wb, wa))
    check("kineto pair: %d kernel rows equal the two reports' kernel tables" % len(dj["kernels"]),
          not problems and len(dj["kernels"]) == len(set(tb) | set(ta)), "; ".join(problems[:3]))
    changes = [abs(k["total_us_after"] - k["total_us_before"]) for k in dj["kernels"]]
    check("kineto pair: kernels sorted by the size of their change", changes == sorted(changes, reverse=True))


def hot3_case(d):
    hot3 = os.path.join(PROG, "hot3")
    folders, want = [], []
    for name, cunits in (("hot3-before", "1"), ("hot3-after", "2")):
        out = os.path.join(d, name)
        env = dict(os.environ, LD_PRELOAD=AGENT, RINGSIDE_OUT=out, RINGSIDE_SAMPLE_HZ="499", HOT3_SHARES="1")
        # 2400 rounds: ~600 samples a side from a 250 Hz kernel tick on, so
        # that hot_c's growth (10% -> 18%) is over 4 sd of the change
        p = run([hot3, "2400", "100000", cunits], env=env, timeout=120)
        own = re.search(r"hot_c ([0-9.]+)", p.stderr.decode())
        if not check(name + ": hot3 runs and gives its own shares", p.returncode == 0 and own,
                     p.stderr.decode()[-200:]):
            return
        want.append(float(own.group(1)))
        folders.append(glob.glob(os.path.join(out, "*"))[0])
    dj, out = diff(d, "hot3", folders[0], folders[1])
    if not dj:
        return
    col = {0: 0, 1: 0}, {0: 0, 1: 0}
    with open(os.path.join(out, "diff-cpu.folded")) as f:
        for line in f:
            stack, b, a = line.rsplit(" ", 2)
            for side, w in ((0, int(b)), (1, int(a))):
                col[0][side] += w
                if "hot_c" in stack.split(";"):
                    col[1][side] += w
    share = [100.0 * col[1][s] / col[0][s] if col[0][s] else 0 for s in (0, 1)]
    n = [samples_in(col[0][s], cpu_samples(folders[s])) for s in (0, 1)]
    for s, side in ((0, "before"), (1, "after")):
        share_check("hot3, hot_c twice as slow: its CPU share %s (the program's own clock)" % side, share[s], want[s],
                    n[s], floor=5.0)
    # within 4 sd of the program's change, which is more than 4 sd: it grew
    share_check("hot3: hot_c's CPU share's change", share[1] - share[0], want[1] - want[0], min(n), floor=5.0,
                sd=change_sd(want, n))
    with open(os.path.join(out, "diff-cpu.svg")) as f:
        svg = f.read()
    red = False
    for g in svg.split("<g class=\"f\"")[1:]:
        if "<title>hot_c\n" in g:
            fill = g.split('fill="rgb(')[1].split(")")[0].split(",")
            red = int(fill[0]) == 255 and int(fill[2]) < 255
    check("hot3: the differential CPU flame graph colours hot_c red (it grew)", red)


def self_and_sizes_case(d):
    b = sim_job(d, "two", 2, ["--steps", "12"])
    a = sim_job(d, "four", 4, ["--steps", "12"])
    if not b or not a:
        return
    rep = report(d, "two", b[0])
    dj, out = diff(d, "self", rep, rep)
    if dj:
        zero = all(v["delta"] == 0 for v in dj["gpu"].values()) and dj["step_ms"]["delta_pct"] == 0 and \
            all(k["count_before"] == k["count_after"] and k["total_us_before"] == k["total_us_after"]
                for k in dj["kernels"]) and not dj["findings"]["resolved"] and not dj["findings"]["new"]
        check("a job against itself: every delta zero", zero, json.dumps(dj)[:300])
        page = page_check(out)
        if page is not None:
            check("the diff page in headless Chromium: no console errors", not page, str(page[:3]))
    dj, _ = diff(d, "sizes", b[0], a[0])
    if dj:
        check("2 ranks against 4: kernels compared by per-process means", dj["per_rank_means"] is True and
              dj["before"]["world_size"] == 2 and dj["after"]["world_size"] == 4, json.dumps(dj["after"]))


def page_check(out):
    if not find_chromium or not find_chromium():
        skip("diff page", "no Chromium")
        return None
    with Browser() as b:
        b.open(os.path.join(out, "diff.html"))
        b.settle(1.0)
        ok = b.eval("!!document.getElementById('moves') && !!document.getElementById('cards')")
        return ([] if ok else ["sections missing"]) + b.problems()


def errors_case(d):
    p = run([RINGSIDE, "diff", os.path.join(d, "nowhere"), d])
    check("a side that does not exist: status 1 and its name",
          p.returncode == 1 and b"nowhere" in p.stderr and b"before" in p.stderr, p.stderr.decode()[-200:])
    empty = os.path.join(d, "empty")
    os.makedirs(empty)
    p = run([RINGSIDE, "diff", empty, empty])
    check("a folder with no traces: status 1", p.returncode == 1, p.stderr.decode()[-200:])
    for args in (["diff", d], ["diff", d, d, d], ["diff", d, d, "--kind", "cpu"], ["diff", d, d, "--kind", "x"]):
        p = run([RINGSIDE] + args)
        check("usage error (status 2): %s" % " ".join(a if a != d else "DIR" for a in args), p.returncode == 2,
              str(p.returncode))


def main():
    d = os.path.realpath(tempdir("diff"))
    try:
        errors_case(d)
        overlap_case(d)
        straggler_case(d)
        checkpoint_case(d)
        bucket_case(d)
        kineto_case(d)
        hot3_case(d)
        self_and_sizes_case(d)
    finally:
        cleanup(d)
    finish()


main()
