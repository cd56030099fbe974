#!/usr/bin/env python3
"""NCCL capture with 4 ranks (simlaunch -n 4, tests/programs/nccl_ops.c):
every collective, sends and receives in a group, a group of collectives, a
communicator split, finalize and destroy, held against the simulator's truth
file (op, count, datatype, bytes, root or peer, sequence, the rank in the
communicator and its size, GPU times) and the program's own calls; comm ids
equal across ranks, split communicators told apart, the NCCL kernels recorded
as GPU events too."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import check, report_problems  # noqa: E402

PROGRAM = os.path.join(rstest.PROG, "nccl_ops")
LAUNCH = os.path.join(rstest.BUILD, "simlaunch")
if not os.path.exists(os.path.join(capture.SIM, "libnccl.so.2")) or not os.path.exists(PROGRAM):
    rstest.skip("nccl capture", "build/sim or build/tests/prog/nccl_ops is not built")
    rstest.finish()

tmp = rstest.tempdir("capture-nccl")
out, tdir = os.path.join(tmp, "out"), os.path.join(tmp, "truth")
os.makedirs(out)
os.makedirs(tdir)
p = rstest.run([LAUNCH, "-n", "4", "--", PROGRAM, os.path.join(tmp, "nccl.id")], env=capture.sim_env(out, tdir))
# The launcher may leave a file of its own (CPU samples): the ranks' files.
traces = [t for t in rstest.trace_files(out) if os.path.basename(t).startswith("rank-")]
if check("nccl_ops: 4 ranks run, four traces", p.returncode == 0 and len(traces) == 4,
         "status %d, %d traces: %s" % (p.returncode, len(traces), p.stderr.decode(errors="replace")[-300:])):
    calls = [int(l.split("=")[1]) for l in p.stdout.decode().split() if l.startswith("calls=")]
    maps = {}
    comm_sets = []
    for tr in traces:
        by, rc = capture.records(tr)
        meta = by["meta"][0]
        r = meta["rank"]
        tl = capture.truth(tdir, meta["pid"])
        colls = by.get("coll", [])
        check("rank %d: every call recorded (the program's count)" % r,
              len(calls) == 4 and len(colls) == calls[0], "%d recorded, program %r" % (len(colls), calls))
        probs, idmap = capture.coll_problems(tl, by)
        report_problems("rank %d: collectives and sends/receives against the truth" % r, probs)
        for a, t in idmap.items():
            maps.setdefault(t, set()).add(a)
        report_problems("rank %d: NCCL kernels as GPU events against the truth" % r,
                        capture.gpu_problems(tl, by.get("gpu", []), exact_start=False))
        grouped = sorted(c["op"] for c in colls if c["group"])
        check("rank %d: calls inside groups flagged" % r,
              grouped == ["allreduce", "allreduce", "recv", "send"], "grouped %r" % grouped)
        red = {c["op"]: c["redop"] for c in colls if c["op"] in ("reducescatter", "reduce")}
        check("rank %d: reduction ops (ncclMax 2, ncclProd 1)" % r,
              red == {"reducescatter": 2, "reduce": 1}, "%r" % red)
        comms = by.get("comm", [])
        kinds = sorted(c["kind"] for c in comms)
        init = [c for c in comms if c["kind"] == "init"]
        split = [c for c in comms if c["kind"] == "split"]
        ok = kinds == ["destroy", "destroy", "finalize", "init", "split"] and len(init) == 1 and len(split) == 1
        ok = ok and split[0]["parent"] == init[0]["comm"] and split[0]["nranks"] == 2 and \
            split[0]["rank"] == r // 2 and init[0]["rank"] == r and init[0]["nranks"] == 4
        check("rank %d: communicator events (init, split with parent, rank and size; finalize, destroy)" % r,
              ok, "%r" % [(c["kind"], c["rank"], c["nranks"]) for c in comms])
        comm_sets.append((r, init[0]["comm"] if init else None, split[0]["comm"] if split else None))
    check("comm ids: one agent id per communicator, equal on every rank",
          len(maps) == 3 and all(len(v) == 1 for v in maps.values()) and
          len(set().union(*maps.values())) == 3, "truth -> agent %r" % maps)
    by_rank = {r: (i, s) for r, i, s in comm_sets}
    check("comm ids: the split gives ranks 0 and 2 one communicator, 1 and 3 another",
          len({i for i, _ in by_rank.values()}) == 1 and by_rank.get(0, (0, 1))[1] == by_rank.get(2, (0, 2))[1]
          and by_rank.get(1, (0, 1))[1] == by_rank.get(3, (0, 2))[1]
          and by_rank.get(0, (0, 1))[1] != by_rank.get(1, (0, 1))[1], "%r" % comm_sets)

rstest.cleanup(tmp)
rstest.finish()
