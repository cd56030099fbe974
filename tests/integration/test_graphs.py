#!/usr/bin/env python3
"""CUDA graphs (docs/design.md, CUDA graphs):
- the simulator's stream capture follows cuda.h's rules: what each capture
  mode forbids (a sync, an event query, another thread's allocation) and the
  invalidation it causes, streams joined through events, an unjoined fork, a
  wait across the capture's boundary, the wrong stream ending it, a captured
  event queried (tests/programs/graph_modes, codes as cuda.h documents them);
- `simtrain --graph --graph-nccl` on 2 ranks under the agent: each captured
  node recorded once with the capture's stack, the AllReduces as collectives
  with their bytes; the kernel table lists the graph's kernels with the truth
  file's counts; communication within 3 points of the same job without
  --graph (mean over the ranks); the page says how times inside graphs are had;
- the GPU flame graph shares each launch among its nodes as the kernel table
  does: the capture's stacks with the graph's kernels as leaves, adding up to
  the table's GPU time; the AllReduces replayed in the graph are rows of the
  collectives table: the truth's count, the bytes of the job without --graph
  (their busbw is not checked: the split's estimate moves with a slow
  launch in the warm-up steps)."""
import collections
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rstest
from rstest import check

BUILD = rstest.BUILD
SIM = os.path.join(BUILD, "sim")

# cuda.h's CUresult values
SUCCESS, UNSUPPORTED, INVALIDATED, UNMATCHED, UNJOINED, ISOLATION, CAPTURED_EVENT = 0, 900, 901, 903, 904, 905, 907

# case: (the call's result, cuStreamEndCapture's, a graph made)
EXPECT = {
    "global_sync_other": (UNSUPPORTED, INVALIDATED, 0),
    "global_event_query": (UNSUPPORTED, INVALIDATED, 0),
    "global_other_thread_alloc": (UNSUPPORTED, INVALIDATED, 0),
    "thread_local_sync_other": (UNSUPPORTED, INVALIDATED, 0),
    "thread_local_event_query": (UNSUPPORTED, INVALIDATED, 0),
    "thread_local_other_thread_alloc": (SUCCESS, SUCCESS, 1),
    "relaxed_sync_other": (SUCCESS, SUCCESS, 1),
    "relaxed_event_query": (SUCCESS, SUCCESS, 1),
    "relaxed_other_thread_alloc": (SUCCESS, SUCCESS, 1),
    "relaxed_sync_self": (UNSUPPORTED, INVALIDATED, 0),
    "unjoined": (SUCCESS, UNJOINED, 0),
    "isolation": (ISOLATION, INVALIDATED, 0),
    "after_unmatched": (SUCCESS, SUCCESS, 1),
    "captured_event_query": (CAPTURED_EVENT, SUCCESS, 1),
}


def modes():
    prog = os.path.join(rstest.PROG, "graph_modes")
    if not os.path.exists(prog):
        check("graph_modes_built", False, prog + " not built (make test-build)")
        return
    env = dict(os.environ, LD_LIBRARY_PATH=SIM)
    p = rstest.run([prog], env=env, timeout=60)
    check("graph_modes_runs", p.returncode == 0, p.stderr.decode(errors="replace"))
    got = {}
    for line in p.stdout.decode().splitlines():
        w = line.split()
        got[w[0]] = tuple(int(x) for x in w[1:])
    for case, want in EXPECT.items():
        check("capture_" + case, got.get(case) == want, "got %r, want %r" % (got.get(case), want))
    # a fork joined back: the side stream was in the capture (status active = 1),
    # 4 nodes in the graph, the side stream out of capture (0) after the end
    check("capture_fork_join", got.get("joined_status") == (1,) and got.get("fork_join") == (0, 4, 0),
          "joined %r, fork_join %r" % (got.get("joined_status"), got.get("fork_join")))
    check("capture_unmatched", got.get("unmatched") == (UNMATCHED,), repr(got.get("unmatched")))


STEPS, WARMUP = 20, 3      # simtrain --graph runs 3 steps before it captures
TRAIN = ["--steps", str(STEPS), "--fwd-us", "2000", "--bwd-us", "4000", "--bucket-mb", "100"]


def job(work, name, extra):
    out = os.path.join(work, name)
    truth = os.path.join(work, name + "-truth.%p")
    env = rstest.traced_env(out, SIMGPU_TRUTH=truth, SIMNCCL_TIMEOUT_S=60)
    env["LD_LIBRARY_PATH"] = SIM
    env.pop("LD_PRELOAD")
    p = rstest.run([os.path.join(BUILD, "simlaunch"), "-n", "2", "--", "env",
                    "LD_PRELOAD=" + rstest.AGENT, os.path.join(BUILD, "simtrain")] + TRAIN + extra,
                   env=env, timeout=300)
    if p.returncode != 0:
        check(name + "_runs", False, p.stderr.decode(errors="replace")[-2000:])
        return None
    lines = [json.loads(l) for f in glob.glob(os.path.join(work, name + "-truth.*")) for l in open(f)]
    rc, err, procs = rstest.report_of(out, work, name + "-report")
    check(name + "_report", rc == 0, "\n".join(err))
    if rc != 0:
        return None
    with open(os.path.join(work, name + "-report.json")) as f:
        rj = json.load(f)
    return lines, procs, out, rj


def graphs(work):
    plain = job(work, "plain", [])
    graph = job(work, "graph", ["--graph", "--graph-nccl"])
    if not plain or not graph or not plain[1] or not graph[1]:
        return
    truth, procs, out, _ = graph

    # every graph node's kernel ran from a graph (the truth's "graph" id)
    replayed = [t for t in truth if t.get("graph")]
    check("truth_replayed", replayed and {t["name"] for t in replayed} >= {"fwd_gemm_l0", "optimizer_step",
                                                                            "ncclDevKernel_AllReduce_RING_LL"},
          "%d replayed operations" % len(replayed))

    # the agent's records: each node once, with the capture's stack; collectives with their bytes
    for i, tf in enumerate(rstest.trace_files(out)):
        recs, rc, _ = rstest.dump(tf)
        nodes = [r for r in recs if r.get("type") == "graph_node"]
        edges = [r for r in recs if r.get("type") == "graph_edge"]
        gl = [r for r in recs if r.get("type") == "gpu" and r.get("kind") == "graph"]
        colls = [n for n in nodes if n["kind"] == "collective"]
        base = "file%d" % i
        check("nodes_once_" + base, len(nodes) == 13 and len({(n["graph"], n["node"]) for n in nodes}) == 13,
              "%d nodes" % len(nodes))
        check("nodes_stacks_" + base, all(n["stack"] for n in nodes), repr([n["stack"] for n in nodes]))
        check("nodes_collectives_" + base,
              len(colls) == 4 and all(c["op"] == "allreduce" and c["bytes"] == 100 << 20 for c in colls),
              repr(colls[:1]))
        # the fork and join: the first AllReduce after its backward kernel, the optimizer after the last one
        names = {n["node"]: n.get("name_text") for n in nodes}
        into = collections.defaultdict(set)
        for e in edges:
            into[e["to"]].add(names.get(e["from"]))
        opt = [n["node"] for n in nodes if n.get("name_text") == "optimizer_step"]
        check("edges_join_" + base, opt and "ncclDevKernel_AllReduce_RING_LL" in into[opt[0]] and
              "bwd_gemm_l0" in into[opt[0]], repr(dict(into)))
        check("launches_name_graph_" + base, len(gl) == STEPS - WARMUP and all(g.get("graph") == nodes[0]["graph"] for g in gl),
              "%d graph launches, graphs %r" % (len(gl), {g.get("graph") for g in gl}))

    # the kernel table against the truth, per rank and name
    for p in procs:
        rank = p["rank"]
        want = collections.Counter(t["name"] for t in truth
                                   if t.get("rank") == rank and t["kind"] in ("kernel", "collective"))
        got = {k["name"]: k["count"] for k in p["kernels"]}
        check("kernel_counts_rank%d" % rank, got == dict(want), "report %r, truth %r" % (got, dict(want)))

    # communication: the graph job's against the same job without --graph
    def comm(ps):
        return sum(p["gpu"]["comm_pct"] for p in ps) / len(ps)
    a, b = comm(plain[1]), comm(procs)
    check("comm_within_3_points", abs(a - b) <= 3, "without --graph %.1f%%, with %.1f%%" % (a, b))

    with open(os.path.join(work, "graph-report", "index.html")) as f:
        page = f.read()
    check("page_says_how", "Times inside CUDA graphs are the graph's measured time shared by its nodes" in page,
          "no note on the page")
    check("page_says_collectives_split", 'id="graph-colls-note"' in page, "no note on the collectives table")

    # the GPU flame graph: the capture's stacks with the graph's kernels as leaves,
    # adding up to the kernel table's GPU time
    folded = [l.rsplit(" ", 1) for l in open(os.path.join(work, "graph-report", "flame-gpu.folded")) if l.strip()]
    total = sum(int(w) for _, w in folded)
    table = sum(p["gpu_time_us"]["kernels"] + p["gpu_time_us"]["copies"] for p in procs) * 1e3
    check("flame_adds_up", table > 0 and abs(total - table) <= 1e-3 * table,
          "flame %.3f ms, table %.3f ms" % (total / 1e6, table / 1e6))
    captured = {s.split(";")[-1] for s, _ in folded if "sim_train_capture" in s.split(";")}
    want = {t["name"] for t in truth if t.get("graph")}
    check("flame_capture_leaves", captured == want, "leaves under sim_train_capture %r, truth %r" % (captured, want))

    # the collectives table: the AllReduces replayed in the graph counted, bytes and busbw as without --graph
    def allreduce(rj):
        rows = [c for c in rj["collectives"] if c["op"] == "AllReduce"]
        return rows[0] if len(rows) == 1 else None
    a, b = allreduce(plain[3]), allreduce(graph[3])
    calls = len([t for t in truth if t.get("rank") == 0 and "AllReduce" in t.get("name", "")])
    check("colls_count", b and b["count"] == calls, "row %r, truth %d calls" % (b, calls))
    check("colls_bytes", a and b and a["bytes"] == b["bytes"] == 100 << 20, "%r %r" % (a, b))


def main():
    modes()
    work = rstest.tempdir("graphs")
    try:
        graphs(work)
    finally:
        if not rstest.failures():
            rstest.cleanup(work)
    rstest.finish()


main()
