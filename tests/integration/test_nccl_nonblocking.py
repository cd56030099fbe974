#!/usr/bin/env python3
"""Non-blocking NCCL communicators (SIMNCCL_NONBLOCKING=1: init and groups
return ncclInProgress, the simulated NCCL's own thread enqueues the work
later, the program polls ncclCommGetAsyncError). nccl_ops on 4 ranks: every
call recorded with the truth's op, count, bytes, communicator rank and size
(read once the communicator is ready, without NCCL refusing an early query),
and a GPU time around the truth's; simtrain on 2 ranks: the AllReduce busbw
within 10% of the same job with blocking communicators, on a slow link and at
the simulator's default bandwidth (its calls shorter than a late poll: their
times are their kernels', CollEvent flag late)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import check, report_problems  # noqa: E402

PROGRAM = os.path.join(rstest.PROG, "nccl_ops")
LAUNCH = os.path.join(rstest.BUILD, "simlaunch")
TRAIN = os.path.join(rstest.BUILD, "simtrain")
if not os.path.exists(os.path.join(capture.SIM, "libnccl.so.2")) or not os.path.exists(PROGRAM):
    rstest.skip("nccl non-blocking", "build/sim or build/tests/prog/nccl_ops is not built")
    rstest.finish()

# The end event goes on the stream once the program's poll sees the work
# enqueued, the start is held to the last poll that did not: both are off by
# at most about one polling interval, which on a loaded 2-core machine with
# 4 ranks polling is scheduling latency (milliseconds), not the 10 us sleep.
SLACK_NS = 20_000_000

tmp = rstest.tempdir("nccl-nonblocking")
out, tdir = os.path.join(tmp, "out"), os.path.join(tmp, "truth")
os.makedirs(out)
os.makedirs(tdir)
p = rstest.run([LAUNCH, "-n", "4", "--", PROGRAM, os.path.join(tmp, "nccl.id")],
               env=capture.sim_env(out, tdir, SIMNCCL_NONBLOCKING="1"))
err = p.stderr.decode(errors="replace")
traces = [t for t in rstest.trace_files(out) if os.path.basename(t).startswith("rank-")]
if check("nccl_ops non-blocking: 4 ranks run, four traces", p.returncode == 0 and len(traces) == 4,
         "status %d, %d traces: %s" % (p.returncode, len(traces), err[-300:])):
    check("no communicator used or asked before it was ready (the simulated NCCL's refusal)",
          "used before its last operation" not in err, err[-300:])
    calls = [int(l.split("=")[1]) for l in p.stdout.decode().split() if l.startswith("calls=")]
    for tr in traces:
        by, rc = capture.records(tr)
        meta = by["meta"][0]
        r = meta["rank"]
        tl = capture.truth(tdir, meta["pid"])
        colls = by.get("coll", [])
        check("rank %d: every call recorded (the program's count)" % r,
              len(calls) == 4 and len(colls) == calls[0], "%d recorded, program %r" % (len(colls), calls))
        # op, count, bytes, rank and size as coll_problems holds them; the
        # times here against the truth with the polling slack
        probs, _ = capture.coll_problems(tl, by)
        probs = [x for x in probs if "GPU end" not in x and "GPU start" not in x]
        report_problems("rank %d: calls against the truth (op, count, bytes, rank and size)" % r, probs)
        want = sorted((t for t in tl if t["kind"] in ("collective", "p2p")), key=lambda t: t["start_ns"])
        got = sorted(colls, key=lambda c: c["launch_ns"])
        bad = []
        for t, c in zip(want, got):
            if not (0 < c["gpu_start_ns"] <= c["gpu_end_ns"]):
                bad.append("%s seq %d: no GPU time" % (c["op"], c["seq"]))
            elif not (t["end_ns"] - capture.TOL_NS <= c["gpu_end_ns"] <= t["end_ns"] + SLACK_NS):
                bad.append("%s seq %d: GPU end %d ns from the truth's" % (c["op"], c["seq"],
                                                                          c["gpu_end_ns"] - t["end_ns"]))
            elif not (t["launch_ns"] - SLACK_NS <= c["gpu_start_ns"] <= t["start_ns"] + SLACK_NS):
                # its arrival: from NCCL's thread putting it on the stream to
                # the last rank's arrival (the truth's start: a rank waits
                # for the others on the GPU), each give or take the polling
                bad.append("%s seq %d: GPU start %d ns from its enqueue, %d ns from the last rank's arrival"
                           % (c["op"], c["seq"], c["gpu_start_ns"] - t["launch_ns"],
                              c["gpu_start_ns"] - t["start_ns"]))
        report_problems("rank %d: every call with a GPU time around the truth's" % r, bad)
        comms = [c for c in by.get("comm", []) if c["kind"] in ("init", "split")]
        check("rank %d: communicator facts read once ready (init rank %d of 4, split of 2, device 0)" % (r, r),
              sorted((c["kind"], c["rank"], c["nranks"], c["device"]) for c in comms) ==
              [("init", r, 4, 0), ("split", r // 2, 2, 0)], "%r" % comms)


def busbw(extra, bw):
    o = os.path.join(tmp, "train-%s-%s" % ("nb" if extra else "b", bw or "default"))
    os.makedirs(o)
    env = capture.sim_env(o, tdir, **extra)
    env.pop("SIMGPU_TRUTH", None)
    env["SIMTRAIN_POLL_US"] = "300"     # polls late by up to the AllReduce's own length
    q = rstest.run([LAUNCH, "-n", "2", "--", TRAIN, "--steps", "12", "--layers", "3", "--ckpt-dir", o] +
                   (["--bw-gbs", bw] if bw else []), env=env)
    if q.returncode != 0:
        return None, q.stderr.decode(errors="replace")[-300:]
    rows = [c for c in rstest.report(o)["collectives"] if c["op"] == "AllReduce" and c["bytes"] > 1 << 20]
    return (rows[0]["busbw_gbs"] if len(rows) == 1 else None), rows


# a slow link (2 GB/s: 25 ms AllReduces) and the default (100 GB/s: a
# quarter of a millisecond, no longer than the program's polls come late,
# 300 us apart: the times are the kernel's own, not the poll's)
for bw in ("2", None):
    blocking, why_b = busbw({}, bw)
    nonblocking, why_n = busbw({"SIMNCCL_NONBLOCKING": "1"}, bw)
    label = "the simulator's %s GB/s" % (bw or "default 100")
    if check("simtrain 2 ranks, %s: AllReduce busbw with blocking and non-blocking communicators" % label,
             blocking and nonblocking, "%r / %r" % (why_b, why_n)):
        check("%s: busbw non-blocking within 10%% of blocking (%.3f against %.3f GB/s)" %
              (label, nonblocking, blocking), abs(nonblocking - blocking) <= 0.10 * blocking, "")

rstest.cleanup(tmp)
rstest.finish()
