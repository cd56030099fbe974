#!/usr/bin/env python3
"""NCCL groups as the units they are on the GPU (tests/programs/nccl_groups
on 4 simulated ranks): per iteration an AllReduce of its own, a coalesced
AllReduce (three in a group), an all-to-all as grouped sends and receives, a
ring exchange and a group of an AllReduce and an AllGather; rank 1 sleeps
before each all-to-all. Held against the simulator's truth file: one row per
kind of group with the group's summed bytes, its calls, the program's count
of groups, its time from the truth (the first operation's start, which is
the last rank's arrival, to the last one's end, as the row counts it; for
sends and receives, which wait for their peers alone, the last rank's own
time) and
busbw from those; the wait for rank 1 from the truth's arrivals, and rank 1
named the straggler of the all-to-all. Rank 3 comes late to the ring of
odd iterations: RING_LATE_US (rank 1, opposite it and tied to ranks 0 and 2
alone, is done after it comes, before it is done) and eight times that (rank
1 is done before it comes)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import check  # noqa: E402

PROGRAM = os.path.join(rstest.PROG, "nccl_groups")
LAUNCH = os.path.join(rstest.BUILD, "simlaunch")
if not os.path.exists(os.path.join(capture.SIM, "libnccl.so.2")) or not os.path.exists(PROGRAM):
    rstest.skip("nccl groups", "build/sim or build/tests/prog/nccl_groups is not built")
    rstest.finish()

N, ITERS, SLEEP_MS, RING_LATE_US = 4, 6, 60, 300
# Slow links, so that each group lasts a millisecond or more: the host's
# time to enqueue a group (which the GPU spends idle when a rank arrives on
# an idle stream) stays small beside it.
BW_GBS = 0.5
tmp = rstest.tempdir("nccl-groups")
out, tdir = os.path.join(tmp, "out"), os.path.join(tmp, "truth")
os.makedirs(out)
os.makedirs(tdir)
p = rstest.run([LAUNCH, "-n", str(N), "--", PROGRAM, os.path.join(tmp, "id"), str(ITERS), str(SLEEP_MS),
                str(RING_LATE_US)],
               env=capture.sim_env(out, tdir, SIMNCCL_BW_GBS=str(BW_GBS)))
said = [dict(kv.split("=") for kv in l.split()) for l in p.stdout.decode().splitlines() if l.startswith("iters=")]
if not check("nccl_groups: %d ranks run" % N, p.returncode == 0 and len(said) == N,
             "status %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-300:])):
    rstest.finish()

# The truth per rank: its operations in stream order (a group of sends and
# receives is one operation, a truth line per call), cut into the program's
# groups: per iteration [AllReduce] [AllReduce x3] [all-to-all] [ring]
# [AllReduce, AllGather].
KINDS = ("single", "coalesced", "alltoall", "ring", "mixed")
SHAPE = (["AllReduce"], ["AllReduce"] * 3, ["p2p"], ["p2p"], ["AllReduce", "AllGather"])
truth = capture.truth(tdir)
units = {}   # (kind, iteration) -> {rank: (arrival, start, end, bytes, calls)}
problems = []
for r in range(N):
    lines = [t for t in truth if t.get("rank") == r and t["kind"] in ("collective", "p2p")]
    ops = {}
    for t in lines:
        ops.setdefault((t["start_ns"], t["end_ns"], t["launch_ns"], t["kind"]), []).append(t)
    ops = sorted(ops.values(), key=lambda o: o[0]["start_ns"])
    prev_end = 0
    i = 0
    for it in range(ITERS):
        for kind, shape in zip(KINDS, SHAPE):
            grp = ops[i:i + len(shape)]
            i += len(shape)
            names = [o[0]["op"] if o[0]["kind"] == "collective" else "p2p" for o in grp]
            if names != shape:
                problems.append("rank %d iteration %d %s: truth has %r" % (r, it, kind, names))
                continue
            calls = sum(len(o) for o in grp)
            if kind in ("alltoall", "ring"):
                send = sum(t["bytes"] for t in grp[0] if t["op"] == "Send")
                recv = sum(t["bytes"] for t in grp[0] if t["op"] == "Recv")
                nbytes = max(send, recv)
            else:
                nbytes = sum(o[0]["bytes"] for o in grp)
            first = grp[0][0]
            # where this rank's stream reached the group: after its last
            # operation, not before the group was enqueued
            arrival = max(prev_end, first["launch_ns"])
            units.setdefault((kind, it), {})[r] = (arrival, first["start_ns"], grp[-1][0]["end_ns"], nbytes, calls)
            prev_end = grp[-1][0]["end_ns"]
    if i != len(ops):
        problems.append("rank %d: %d operations in the truth, the program's groups hold %d" % (r, len(ops), i))
rstest.report_problems("the truth holds the program's groups on every rank", problems)
iters = int(said[0]["iters"])
check("the program's counts: every kind of group once per iteration",
      all(int(s[k]) == iters for s in said for k in KINDS), "%r" % said)

# (rank 1's end, rank 3's start, rank 3's end) in each iteration's ring
ring = [(lambda u: (u[1][2], u[3][1], u[3][2]) if len(u) == N else None)(units.get(("ring", it), {}))
        for it in range(iters)]
check("the truth: rank 1 is done before rank 3 comes to the ring of iteration 3; in iteration 1 or 5, "
      "after it comes and before it is done",
      ring[3] is not None and ring[3][0] < ring[3][1] and
      any(x is not None and x[1] < x[0] < x[2] for x in (ring[1], ring[5])), "%r" % ring)

rep = rstest.report(out)
rows = rep["collectives"]
FACTOR = {"AllReduce": 2.0 * (N - 1) / N, "AlltoAll": (N - 1) / N, "SendRecv": 1.0, "Group": 1.0}
OP = {"single": "AllReduce", "coalesced": "AllReduce", "alltoall": "AlltoAll", "ring": "SendRecv",
      "mixed": "Group"}
check("one row per kind of group, no row for a grouped call alone",
      len(rows) == len(KINDS), "%r" % [(c["op"], c["bytes"], c.get("group_calls")) for c in rows])
for kind in KINDS:
    per = [units.get((kind, it), {}) for it in range(iters)]
    per = [u for u in per if len(u) == N]
    if len(per) != iters:
        check(kind + ": the truth's groups", False, "%d of %d iterations complete" % (len(per), iters))
        continue
    nbytes = {v[3] for u in per for v in u.values()}
    calls = {v[4] for u in per for v in u.values()}
    # the row's time: the last rank's arrival (the truth's start of the
    # group's first operation) to the group's end (the earliest rank's);
    # sends and receives wait for their peers alone (a rank of the ring
    # opposite a late one is done before it comes): the last rank's own
    # start to end, its peers all there
    if kind in ("alltoall", "ring"):
        durs = [(lambda v: v[2] - v[1])(max(u.values(), key=lambda v: v[0])) for u in per]
    else:
        durs = [min(v[2] for v in u.values()) - max(v[1] for v in u.values()) for u in per]
    mean_us = sum(durs) / len(durs) / 1e3
    want_calls = calls.pop() if len(calls) == 1 else None
    want_bytes = nbytes.pop() if len(nbytes) == 1 else None
    row = [c for c in rows if c["op"] == OP[kind] and c["bytes"] == want_bytes]
    if not check("%s: a row %s of %s bytes (the truth's, summed over the group)" % (kind, OP[kind], want_bytes),
                 len(row) == 1, "%r" % [(c["op"], c["bytes"]) for c in rows]):
        continue
    c = row[0]
    check("%s: %s calls per group, as the truth's" % (kind, want_calls), c.get("group_calls") == want_calls,
          "row %r" % c.get("group_calls"))
    check("%s: count %d, the program's groups" % (kind, iters), c["count"] == iters, "row %r" % c["count"])
    check("%s: mean time %.1f us within 10%% of the truth's group span (%.1f us)" % (kind, c["mean_us"], mean_us),
          abs(c["mean_us"] - mean_us) <= 0.10 * mean_us + 20, "")
    busbw = want_bytes / mean_us / 1e3 * FACTOR[OP[kind]]
    check("%s: busbw %.3f GB/s within 10%% of the truth's (%.3f: the group's bytes over its span)" %
          (kind, c["busbw_gbs"], busbw), abs(c["busbw_gbs"] - busbw) <= 0.10 * busbw, "")
    if kind == "alltoall":
        # each rank's wait for the last: the truth's arrivals
        waits = [sum(max(v[0] for v in u.values()) - v[0] for v in u.values()) / N for u in per]
        wait_us = sum(waits) / len(waits) / 1e3
        check("alltoall: mean wait %.1f us within 10%% of the truth's (%.1f us: rank 1 slept %d ms, the GPU busy for part of it)" %
              (c["mean_wait_us"], wait_us, SLEEP_MS),
              wait_us > 5000 and abs(c["mean_wait_us"] - wait_us) <= 0.10 * wait_us + 200, "")
st = rep.get("stragglers") or []
check("rank 1 the straggler, in the all-to-all (its groups matched across ranks as one call each)",
      [s["rank"] for s in st] == [1] and st[0].get("phase") == "AlltoAll",
      "%r" % [(s["rank"], s.get("phase")) for s in st])

rstest.cleanup(tmp)
rstest.finish()
