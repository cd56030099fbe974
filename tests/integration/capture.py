"""Helpers of the capture tests (test_capture_*): the agent's CUDA and NCCL
records from `ringside dump`, the simulator's truth lines, and comparisons
of one against the other. The truth is the simulator's own model of GPU
time (SIMGPU_TRUTH), never a figure the agent computed."""
import glob
import json
import os

import rstest

SIM = os.path.join(rstest.BUILD, "sim")
TOL_NS = 2000
PICKUP_NS = 1000          # the stand-in's SIMGPU_PICKUP_NS default
FLAG_PTSZ, FLAG_CAPTURED, FLAG_SYNC = 1, 2, 4
NCCL_TYPES = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
              "float64", "bfloat16", "float8e4m3", "float8e5m2"]


def sim_env(out, truth_dir, **extra):
    env = rstest.traced_env(out, LD_LIBRARY_PATH=SIM, SIMNCCL_TIMEOUT_S=30,
                            SIMGPU_TRUTH=os.path.join(truth_dir, "truth-%p.jsonl"), **extra)
    for v in ("MASTER_PORT", "MASTER_ADDR"):
        env.pop(v, None)
    return env


def records(trace):
    """{type: [record, ...]} of one trace file, and the dump's exit status."""
    recs, rc, _ = rstest.dump(trace)
    by = {}
    for r in recs:
        by.setdefault(r.get("type"), []).append(r)
    return by, rc


def truth(truth_dir, pid=None):
    """Truth lines (dicts) of the simulator's operations, of every process
    or of pid (simtrain's own step lines, kind "step", are left out)."""
    lines = []
    for path in glob.glob(os.path.join(truth_dir, "truth-*.jsonl")):
        with open(path) as f:
            for l in f:
                if l.strip():
                    t = json.loads(l)
                    if t.get("kind") != "step" and (pid is None or t["pid"] == pid):
                        lines.append(t)
    return lines


def end_ok(e, t):
    """Whether an event's GPU end agrees with the truth's. The end event is
    enqueued during the launch call (recorded as launch_ns + call_ns) and
    completes when the stream reaches it: at the work's end, or when it was
    enqueued if the call outlasted the work (the simulator moves a copy's
    bytes during the call). So: truth end <= GPU end <= max(truth end, call
    end), within TOL_NS."""
    hi = max(t["end_ns"], e["launch_ns"] + e["call_ns"])
    return t["end_ns"] - TOL_NS <= e["gpu_end_ns"] <= hi + TOL_NS


def start_window(g, t):
    """(earliest, latest) GPU start the agent may give a GpuEvent g whose truth line is t.
    The agent's start (preload/gpustart.c): on an idle stream, its start event plus
    the call's own time; on a busy one, the start event (a kernel, plus the GPU's
    gap). A call that went on after its handover (descheduled, say) puts it later by
    as much; a stream that came free while the call was handing the work over looks
    busy, and puts it earlier by at most the call. A synchronous call returns after
    its work, handed over when it liked: between the call's start and the truth."""
    if g["flags"] & FLAG_SYNC:
        return g["launch_ns"] - TOL_NS, t["start_ns"] + TOL_NS
    slack = max(0, g["launch_ns"] + g["call_ns"] - (t["launch_ns"] - PICKUP_NS))
    early = t["start_ns"] - TOL_NS - (g["call_ns"] if t["start_ns"] == t["launch_ns"] else slack)
    return early, t["start_ns"] + TOL_NS + slack


def gpu_problems(tl, gpu, exact_start=True, undirected=()):
    """Every truth operation launched by the program (kernels, copies, sets,
    NCCL kernels) against the agent's GpuEvents that are not graph launches
    or captured into a graph: per stream and kind, in launch order, the same
    count, names, bytes, directions, and GPU start and end within TOL_NS.
    exact_start=False: NCCL kernels may start on the agent's clock when their
    stream reached them, before the last rank arrived (checked elsewhere).
    undirected: byte sizes of cuMemcpy/cuMemcpyAsync calls, whose direction
    needs cuPointerGetAttribute (absent from the simulator): "none" is right."""
    problems = []
    want = {}
    seen_p2p = set()
    for t in tl:
        if t.get("graph"):
            continue
        kind = t["kind"]
        if kind in ("collective", "p2p"):
            # one launch stands for every call of a group: one line each
            key = (t["stream"], t["launch_ns"], t["start_ns"], t["end_ns"])
            if kind == "p2p" and key in seen_p2p:
                continue
            seen_p2p.add(key)
            kind = "kernel"
        want.setdefault((t["stream"], kind), []).append(t)
    got = {}
    for g in gpu:
        if g["kind"] == "graph" or g["flags"] & FLAG_CAPTURED:
            continue
        got.setdefault((g["stream"], g["kind"]), []).append(g)
    for key in sorted(set(want) | set(got)):
        w = sorted(want.get(key, []), key=lambda t: t["launch_ns"])
        a = sorted(got.get(key, []), key=lambda g: g["launch_ns"])
        if len(w) != len(a):
            problems.append("stream %s %s: truth has %d, agent %d" % (key[0], key[1], len(w), len(a)))
            continue
        for t, g in zip(w, a):
            where = "stream %s %s %s at %d" % (key[0], key[1], t.get("name"), t["start_ns"])
            nccl = t["kind"] in ("collective", "p2p")
            if key[1] == "kernel" and g.get("name_text") != t["name"]:
                problems.append("%s: agent name %r" % (where, g.get("name_text")))
            if key[1] != "kernel" and g["bytes"] != t["bytes"]:
                problems.append("%s: bytes %d, truth %d" % (where, g["bytes"], t["bytes"]))
            if key[1] == "memcpy" and t.get("direction") and g["dir"] != t["direction"].lower() and \
                    not (g["dir"] == "none" and t["bytes"] in undirected):
                problems.append("%s: direction %s, truth %s" % (where, g["dir"], t["direction"]))
            if g["gpu_end_ns"] == 0:
                problems.append("%s: not timed" % where)
                continue
            ds = g["gpu_start_ns"] - t["start_ns"]
            if not end_ok(g, t):
                problems.append("%s: GPU end %d, truth %d, call ended %d" % (
                    where, g["gpu_end_ns"], t["end_ns"], g["launch_ns"] + g["call_ns"]))
            early, late = start_window(g, t)
            if (exact_start or not nccl) and not (early <= g["gpu_start_ns"] <= late):
                problems.append("%s: GPU start off by %d ns (allowed %d..%d)" % (
                    where, ds, early - t["start_ns"], late - t["start_ns"]))
            elif not (exact_start or not nccl) and g["gpu_start_ns"] > late:
                problems.append("%s: GPU start %d ns after the truth" % (where, ds))
    return problems


def coll_problems(tl, by):
    """Every truth collective / p2p line of one process against the agent's
    CollEvents: op, count, datatype, bytes, root or peer, sequence number,
    rank and size of the communicator (from its CommEvent), GPU end within
    TOL_NS and GPU start not after the truth's. Returns (problems, {agent
    comm id: truth comm id})."""
    problems = []
    comms = {}
    for c in by.get("comm", []):
        if c["kind"] in ("init", "init_all", "split"):
            comms[c["comm"]] = c
    want = sorted((t for t in tl if t["kind"] in ("collective", "p2p")),
                  key=lambda t: (t["comm"], t["seq"]))
    got = sorted(by.get("coll", []), key=lambda c: (c["comm"], c["seq"]))
    if len(want) != len(got):
        return ["truth has %d collectives, agent %d" % (len(want), len(got))], {}
    idmap = {}
    # the agent's and the simulator's ids differ: pair communicators by order of first use
    order_w, order_a = [], []
    for t in sorted(want, key=lambda t: t["launch_ns"]):
        if t["comm"] not in order_w:
            order_w.append(t["comm"])
    for c in sorted(got, key=lambda c: c["launch_ns"]):
        if c["comm"] not in order_a:
            order_a.append(c["comm"])
    if len(order_w) != len(order_a):
        return ["truth uses %d communicators, agent %d" % (len(order_w), len(order_a))], {}
    idmap = dict(zip(order_a, order_w))
    # collectives by seq; sends and receives count per peer and direction
    want.sort(key=lambda t: (order_w.index(t["comm"]), t["op"].lower(), t.get("peer", -1), t["seq"]))
    got.sort(key=lambda c: (order_a.index(c["comm"]), c["op"], c["peer"] if c["op"] in ("send", "recv")
                            else -1, c["seq"]))
    # Calls inside a group are timed around the group (NCCL launches their
    # work at ncclGroupEnd): each ends when the last of its group ends.
    group_end = {}
    for t, c in zip(want, got):
        if c["group"]:
            group_end[c["gpu_end_ns"]] = max(group_end.get(c["gpu_end_ns"], 0), t["end_ns"])
    for t, c in zip(want, got):
        where = "%s seq %d" % (t["op"], t["seq"])
        if c["group"]:
            t = dict(t, end_ns=group_end[c["gpu_end_ns"]])
        if idmap[c["comm"]] != t["comm"]:
            problems.append("%s: communicator %x is not truth's %s" % (where, c["comm"], t["comm"]))
        if c["op"] != t["op"].lower():
            problems.append("%s: op %s" % (where, c["op"]))
        if c["seq"] != t["seq"] or c["count"] != t["count"] or c["bytes"] != t["bytes"]:
            problems.append("%s: seq/count/bytes %d/%d/%d, truth %d/%d/%d" % (
                where, c["seq"], c["count"], c["bytes"], t["seq"], t["count"], t["bytes"]))
        if NCCL_TYPES[c["datatype"]] != t["datatype"]:
            problems.append("%s: datatype %d, truth %s" % (where, c["datatype"], t["datatype"]))
        peer = t.get("root", t.get("peer", -1))
        if c["peer"] != (-1 if peer is None else peer):
            problems.append("%s: root/peer %d, truth %r" % (where, c["peer"], peer))
        cm = comms.get(c["comm"])
        if not cm:
            problems.append("%s: no CommEvent for communicator %x" % (where, c["comm"]))
        elif cm["rank"] != t["rank"] or cm["nranks"] != t["nranks"]:
            problems.append("%s: rank %d of %d, truth %d of %d" % (
                where, cm["rank"], cm["nranks"], t["rank"], t["nranks"]))
        if c["gpu_end_ns"] == 0:
            problems.append("%s: not timed" % where)
            continue
        if not end_ok(c, t):
            problems.append("%s: GPU end %d, truth %d, call ended %d" % (
                where, c["gpu_end_ns"], t["end_ns"], c["launch_ns"] + c["call_ns"]))
        if c["gpu_start_ns"] - t["start_ns"] > TOL_NS:
            problems.append("%s: GPU start %d ns after the truth" % (where, c["gpu_start_ns"] - t["start_ns"]))
    return problems, idmap
