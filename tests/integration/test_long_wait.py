#!/usr/bin/env python3
"""A collective that waits 20 s keeps its GPU times (the timing anchors are
renewed every second; the wait outlives 16 of them): simtrain --stall 1:5:20
on 2 ranks, rank 1 sleeping 20 s before step 5's first AllReduce. Rank 0's
AllReduce at step 5 (its first, by the simulator's truth) has a GPU time of
19 s or more, matching the truth's; the report says rank 0 waited for rank 1
(its sync wait against rank 1's). Then --stall 1:0:0.3: the first step, held
up by rank 1, is slow for the warm-up, not for a straggler."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import check  # noqa: E402

LAUNCH = os.path.join(rstest.BUILD, "simlaunch")
TRAIN = os.path.join(rstest.BUILD, "simtrain")
if not os.path.exists(os.path.join(capture.SIM, "libnccl.so.2")) or not os.path.exists(TRAIN):
    rstest.skip("long wait", "build/sim or build/simtrain is not built")
    rstest.finish()

tmp = rstest.tempdir("long-wait")
out, tdir = os.path.join(tmp, "out"), os.path.join(tmp, "truth")
os.makedirs(out)
os.makedirs(tdir)
env = capture.sim_env(out, tdir)  # SIMNCCL_TIMEOUT_S 30 covers the 20 s wait
p = rstest.run([LAUNCH, "-n", "2", "--", TRAIN, "--steps", "8", "--layers", "2", "--stall", "1:5:20",
                "--ckpt-dir", tmp], env=env, timeout=200)
traces = [t for t in rstest.trace_files(out) if os.path.basename(t).startswith("rank-")]
if check("simtrain --stall 1:5:20: 2 ranks run, two traces", p.returncode == 0 and len(traces) == 2,
         "status %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-300:])):
    for tr in traces:
        by, _ = capture.records(tr)
        meta = by["meta"][0]
        if meta["rank"] != 0:
            continue
        tl = capture.truth(tdir, meta["pid"])
        want = sorted((t for t in tl if t["kind"] == "collective"), key=lambda t: t["seq"])
        # two AllReduces a step (one per layer): step 5's first is seq 10
        t = want[10] if len(want) > 10 else None
        c = [c for c in by.get("coll", []) if c["seq"] == 10]
        # the truth's start is when the last rank arrived; rank 0's stream
        # reached the call soon after its launch
        ok = t is not None and len(c) == 1 and t["end_ns"] - t["launch_ns"] >= 19.5e9
        if check("truth: rank 0's first AllReduce of step 5 ends 19.5 s or more after its launch", ok, "%r" % (t,)):
            c = c[0]
            dur = c["gpu_end_ns"] - c["gpu_start_ns"]
            check("rank 0's AllReduce at step 5 keeps its GPU time (%.3f s; 19 s or more)" % (dur / 1e9),
                  dur >= 19e9, "%r" % c)
            check("its GPU end within 2 us of the truth's, its start between its launch and the last arrival",
                  abs(c["gpu_end_ns"] - t["end_ns"]) <= capture.TOL_NS and
                  t["launch_ns"] <= c["gpu_start_ns"] <= t["start_ns"] + capture.TOL_NS,
                  "end %d, start %d ns off" % (c["gpu_end_ns"] - t["end_ns"], c["gpu_start_ns"] - t["start_ns"]))
    rep = rstest.report(out)
    procs = {q["rank"]: q for q in rep["processes"] if q.get("rank") is not None}
    w0 = procs.get(0, {}).get("gpu", {}).get("sync_wait_pct", 0)
    w1 = procs.get(1, {}).get("gpu", {}).get("sync_wait_pct", 0)
    check("report: rank 0 waited for rank 1 (sync wait %.1f%% of its span against rank 1's %.1f%%)" % (w0, w1),
          w0 > 50 and w0 > 10 * max(w1, 0.1), "%r" % procs.get(0, {}).get("gpu"))
    # and says who: the stalled step is slow, its cause rank 1 (a one-off is
    # no straggler over the whole job, but it is that step's)
    slow = [x for x in rep.get("steps", {}).get("slow", []) if x["dur_ms"] >= 19000]
    check("report: the stalled step is slow, for rank 1", len(slow) == 1 and slow[0]["cause"] == "straggler"
          and slow[0]["rank"] == 1, "%r" % rep.get("steps", {}).get("slow"))
    # the finding lists each cause's ranks ("2 straggler (rank 0,1)": the
    # first step, a warm-up, can be slow for rank 0 too)
    ev = [f["evidence"] for f in rep.get("findings", []) if f["id"] == "slow_steps"]
    named = {int(r) for lst in re.findall(r"\brank ([0-9]+(?:,[0-9]+)*)", ev[0] if ev else "") for r in lst.split(",")}
    check("report: the slow-steps finding names rank 1", 1 in named, "%r" % ev)
    # a slow first step is the warm-up, whoever came last to it (here simtrain's
    # first step may be slow for rank 0), never a straggler; later ones are not
    check("report: a slow first step is the warm-up, no other is",
          all((x["cause"] == "warm_up") == (x["index"] == 0) for x in rep["steps"]["slow"]),
          "%r" % rep["steps"]["slow"])

# The first step held up by one rank (rank 1 sleeps 0.3 s before its first
# AllReduce): slow, for the warm-up, and said so by the finding
tmp2 = rstest.tempdir("long-wait-first")
out2, tdir2 = os.path.join(tmp2, "out"), os.path.join(tmp2, "truth")
os.makedirs(out2)
os.makedirs(tdir2)
p = rstest.run([LAUNCH, "-n", "2", "--", TRAIN, "--steps", "8", "--layers", "2", "--stall", "1:0:0.3",
                "--ckpt-dir", tmp2], env=capture.sim_env(out2, tdir2), timeout=200)
if check("simtrain --stall 1:0:0.3 runs", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
    rep = rstest.report(out2)
    slow = rep.get("steps", {}).get("slow", [])
    check("report: the first step, 0.3 s late on rank 1, is slow for the warm-up (not a straggler)",
          rep["steps"]["count"] == 8 and [x["index"] for x in slow if x["dur_ms"] >= 250] == [0] and
          slow[0]["cause"] == "warm_up", "%r" % slow)
    ev = [f["evidence"] for f in rep.get("findings", []) if f["id"] == "slow_steps"]
    check("report: the slow-steps finding says warm_up", ev and "warm_up" in ev[0] and "straggler" not in ev[0],
          "%r" % ev)
rstest.cleanup(tmp2)
rstest.cleanup(tmp)
rstest.finish()
