#!/usr/bin/env python3
"""Communication groups by role: simtrain on 8 ranks with tensor, pipeline
and data parallel groups (--tp 2 --pp 2: 2 replicas), with tensor and
pipeline only (--tp 4 --pp 2), and the first as 2 nodes of 4 (simlaunch
--nodes: a host name each) in Megatron's order and with the pipeline inside
the data parallel replicas (--order tp-pp-dp), under the agent. report.json's groups must
name each role with its communicators' count and size, an example whose
ranks are one of the groups simtrain made, their operations and calls per
step; the summary and the page list them; a plain data-parallel job gets
one data-parallel group and no line or table. Truth from outside the
reporter: the groups follow from the command line and Megatron's layout
(rank = tp + T x (dp + D x pp)), which simtrain documents; the calls per
calls from its schedule (a tensor-parallel AllReduce after each layer's
forward and backward kernels for every micro-batch, one data-parallel
AllReduce per layer of the stage, every step)."""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import check, finish  # noqa: E402
from simjob import sim_job  # noqa: E402

MIB = 1 << 20
STEPS, LAYERS, ACT_MB, BUCKET_MB = 12, 4, 2, 8


def job(name, world, tp, pp, nodes=0, order=None):
    """Runs the job; (report.json, summary text, page) or None."""
    args = ["--steps", str(STEPS), "--layers", str(LAYERS), "--act-mb", str(ACT_MB), "--bucket-mb", str(BUCKET_MB),
            "--fwd-us", "100", "--bwd-us", "200"]
    args += ["--tp", str(tp)] if tp > 1 else []
    args += ["--pp", str(pp)] if pp > 1 else []
    args += ["--order", order] if order else []
    got = sim_job(name, world, args, nodes=nodes)
    return got[:3] if got else None


def places(world, tp, pp, order=None):
    """Each rank's (tensor, data, pipeline) index (Megatron's order, or
    tp-pp-dp)."""
    dp = world // (tp * pp)
    if order == "tp-pp-dp":
        return {r: (r % tp, r // (tp * pp), r // tp % pp) for r in range(world)}
    return {r: (r % tp, r // tp % dp, r // (tp * dp)) for r in range(world)}


def layout(world, tp, pp, order=None):
    """simtrain's groups as sets of ranks, by role."""
    place = places(world, tp, pp, order)
    groups = {"tensor": {}, "data": {}, "pipeline": {}}
    for r, (t, d, p) in place.items():
        groups["tensor"].setdefault((p, d), set()).add(r)
        groups["data"].setdefault((p, t), set()).add(r)
        groups["pipeline"].setdefault((d, t), set()).add(r)
    return {role: [g for g in gs.values()] for role, gs in groups.items() if len(next(iter(gs.values()))) > 1}


def check_job(name, world, tp, pp, nodes=0, order=None):
    got = job(name, world, tp, pp, nodes, order)
    if not got:
        return
    rep, text, page = got
    want = layout(world, tp, pp, order)
    per = world // nodes if nodes else world
    groups = {g["role"]: g for g in rep["groups"]}
    check(name + ": one group per role, the roles simtrain made", sorted(groups) == sorted(want)
          and len(rep["groups"]) == len(want), json.dumps([(g["role"], g["count"], g["size"]) for g in rep["groups"]]))
    micro = 2 * pp
    per_stage = LAYERS // pp
    for role, sets in want.items():
        g = groups.get(role)
        if not g:
            continue
        check("%s: %s: %d communicators of %d ranks" % (name, role, len(sets), len(sets[0])),
              g["count"] == len(sets) and g["size"] == len(sets[0]), "%d x %d" % (g["count"], g["size"]))
        check("%s: %s: the example is one of simtrain's groups" % (name, role),
              set(g["members_example"]) in sets, str(g["members_example"]))
        ops = {o["op"]: o for o in g["ops"]}
        # where the groups are: inside a node, or across with one local rank
        # on each (a rail) when every member has the same
        inside = all(len({r // per for r in s}) == 1 for s in sets)
        hosts = max(len({r // per for r in s}) for s in sets)
        rails = not inside and all(len({r % per for r in s}) == 1 for s in sets)
        check("%s: %s: %s, with a reason and how sure" % (name, role, "inside a node" if inside else
                                                            "across %d hosts" % hosts),
              g["intra_node"] is inside and g["hosts"] == hosts and g["why"] and 0 < g["confidence"] <= 1 and
              g["rail_aligned"] is rails and g["rail"] == (min(g["members_example"]) % per if rails else None),
              json.dumps(g)[:400])
        if role == "pipeline":
            check(name + ": pipeline: sends and receives only, of the activations",
                  ops and set(ops) <= {"Send", "Recv", "SendRecv"} and
                  all(o["mean_bytes"] == ACT_MB * MIB for o in ops.values()), json.dumps(g["ops"]))
        if role == "tensor":
            check(name + ": tensor: AllReduces of the activations, one per layer, micro-batch and pass",
                  list(ops) == ["AllReduce"] and ops["AllReduce"]["mean_bytes"] == ACT_MB * MIB and
                  g["calls"] == g["count"] * per_stage * micro * 2 * STEPS, json.dumps(g)[:400])
        if role == "data":
            check(name + ": data: AllReduces of the buckets, one per layer of the stage",
                  list(ops) == ["AllReduce"] and ops["AllReduce"]["mean_bytes"] == BUCKET_MB * MIB and
                  g["calls"] == g["count"] * per_stage * STEPS, json.dumps(g)[:400])
        # per step: over the training steps the report found (none: 0)
        steps = rep["steps"].get("count") or 0
        check("%s: %s: calls per step agree with the steps found" % (name, role),
              abs(g["calls_per_step"] - (g["calls"] / g["count"] / steps if steps else 0)) < 1e-6,
              "%s per step, %d calls on %d communicators, %d steps" % (g["calls_per_step"], g["calls"], g["count"], steps))
        check("%s: %s: shares of time within bounds" % (name, role),
              0 < g["time_pct"] < 100 and 0 <= g["sync_wait_pct"] <= 100, json.dumps(g)[:300])
    # each rank's time by role: a role for every group it is in, and the
    # groups' shares the mean of the ranks' (the same calls, counted once)
    procs = [p for p in rep["processes"] if p["rank"] is not None]
    mine = {p["rank"]: p.get("comm_by_role", {}) for p in procs}
    check(name + ": every rank has a time for each role it plays, and only those",
          all(sorted(mine[r]) == sorted(role for role, sets in want.items() if any(r in s for s in sets))
              for r in range(world)), json.dumps(mine)[:400])
    for role, g in groups.items():
        mean = sum(m.get(role, {}).get("time_pct", 0) for m in mine.values()) / world
        check("%s: %s: the group's share is the mean of its ranks'" % (name, role),
              abs(mean - g["time_pct"]) <= 1e-4 * g["time_pct"] + 1e-6 and
              all(0 <= m[role]["wait_pct"] <= m[role]["time_pct"] and 0 <= m[role]["hidden_pct_of_transfer"] <= 100
                  for m in mine.values() if role in m), "%.5f against %.5f" % (mean, g["time_pct"]))
    line = [ln for ln in text.splitlines() if "communication groups:" in ln]

    def printed_pct(g):
        """The share the line prints for group g, or None. report.json
        writes six digits: 14.35 there may be printed 14.4 from the whole
        figure, where Python's %.1f of 14.35 gives 14.3."""
        m = re.search(r"%s %d x %d ranks \([^,]*, ([0-9.]+)%% of the ranks' time" %
                      (re.escape(g["role"]), g["count"], g["size"]), line[0])
        return float(m.group(1)) if m else None

    check(name + ": the summary's line names every group with its share of time",
          len(line) == 1 and all(printed_pct(g) is not None and abs(printed_pct(g) - g["time_pct"]) <= 0.05 + 1e-9
                                 for g in rep["groups"]),
          "\n".join(line) + " against " + json.dumps([(g["role"], g["time_pct"]) for g in rep["groups"]]))
    i = page.find('id="table-groups"')
    table = page[i:page.find("</table>", i)] if i >= 0 else ""
    check(name + ": the page's table has a row per group", table.count("<tr>") == 1 + len(rep["groups"]),
          table[:300])
    # each rank's place: its index in each of its groups, as Megatron lays
    # ranks out; the page's grid puts it there, shaded by its waiting
    place = places(world, tp, pp, order)
    names = ("tensor", "data", "pipeline")
    coords = {p["rank"]: p.get("coords") for p in procs}
    check(name + ": every rank's coordinates are its place in the layout",
          all(coords[r] == {names[k]: place[r][k] for k in range(3) if names[k] in want} for r in range(world)),
          json.dumps(coords)[:400])
    i = page.find('id="grid-layout"')
    grid = page[i:page.find("</table>", i)] if i >= 0 else ""
    cells = re.findall(r'<td data-rank="(\d+)" data-stage="(\d+)" data-data="(\d+)" data-tensor="(\d+)"', grid)
    rows = [re.findall(r'data-rank="(\d+)"', row) for row in grid.split("<tr>")[2:]]
    order_want = [[str(r) for r in sorted(range(world), key=lambda r: place[r][0]) if place[r][2] == p and place[r][1] == d]
                  for p in range(pp) for d in range(world // (tp * pp))]
    check(name + ": the page's grid has each rank once, at its place: stage and data index down, tensor across",
          sorted(int(c[0]) for c in cells) == list(range(world)) and
          all((int(t), int(d), int(st)) == place[int(r)] for r, st, d, t in cells) and rows == order_want,
          "%r against %r" % (rows, order_want))
    waits = {int(m.group(1)): float(m.group(2)) for m in re.finditer(r'data-rank="(\d+)"[^>]*>\d+<br>([\d.]+)%', grid)}
    check(name + ": each cell shows the rank's waiting, summed over its roles",
          all(abs(waits.get(r, -1) - sum(v["wait_pct"] for v in mine[r].values())) < 0.051 for r in range(world)),
          "%r" % waits)
    i = page.find('id="table-roles"')
    table = page[i:page.find("</table>", i)] if i >= 0 else ""
    check(name + ": the page's time by role has a row per rank, two columns per role",
          table.count("<tr>") == 1 + world and all("%s %% of time" % g["role"] in table for g in rep["groups"]),
          table[:300])


def main():
    check_job("tp2 pp2 dp2", 8, 2, 2)
    check_job("tp4 pp2", 8, 4, 2)
    # 2 nodes of 4: Megatron's order keeps tensor and data parallel inside a
    # node and runs the pipeline across; tp-pp-dp the data parallel groups
    check_job("tp2 pp2 dp2 on 2 nodes", 8, 2, 2, nodes=2)
    check_job("tp2 pp2 dp2 tp-pp-dp on 2 nodes", 8, 2, 2, nodes=2, order="tp-pp-dp")
    # a slow rank of one tensor-parallel group: named, with its group, and
    # not the replica behind it, which only passes its stage's delay on
    got = sim_job("rank 5 slowed", 8, ["--tp", "2", "--pp", "2", "--steps", "20", "--layers", str(LAYERS),
                                       "--fwd-us", "400", "--bwd-us", "800", "--straggler", "5:2"])
    if got:
        rep, text = got[0], got[1]
        st = rep["stragglers"]
        # the groups it holds back: its tensor group at each layer, its data
        # group at the step's end (not the pipeline: that is the bubble)
        held = sorted((g["role"], g["members"]) for g in st[0].get("groups", [])) if st else []
        check("rank 5 slowed: rank 5 alone named, holding back its tensor and data groups",
              [s["rank"] for s in st] == [5] and held == [("data", [5, 7]), ("tensor", [4, 5])] and
              abs(sum(g["caused_pct"] for g in st[0]["groups"]) - 100) < 0.01,
              json.dumps([(s["rank"], s.get("groups")) for s in st])[:500])
        line = [ln for ln in text.splitlines() if "slowest rank:" in ln]
        check("rank 5 slowed: the summary says which groups it holds back",
              len(line) == 1 and "tensor group (ranks 4, 5:" in line[0] and "data group (ranks 5, 7:" in line[0],
              "\n".join(line))
    got = job("data parallel", 2, 1, 1)
    if got:
        rep, text, page = got
        check("data parallel: one data-parallel group of both ranks",
              [(g["role"], g["count"], g["members_example"]) for g in rep["groups"]] == [("data", 1, [0, 1])],
              json.dumps(rep["groups"])[:300])
        check("data parallel: no groups line, no groups table, no pipeline, no layout",
              "communication groups:" not in text and 'id="table-groups"' not in page and "pipeline" not in rep and
              "pipeline:" not in text and 'id="grid-layout"' not in page and
              not any("coords" in p for p in rep["processes"]))
    finish()


if __name__ == "__main__":
    main()
