#!/usr/bin/env python3
"""Communication groups by role: simtrain on 8 ranks with tensor, pipeline
and data parallel groups (--tp 2 --pp 2: 2 replicas), and with tensor and
pipeline only (--tp 4 --pp 2), under the agent. report.json's groups must
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
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import check, finish  # noqa: E402
from simjob import sim_job  # noqa: E402

MIB = 1 << 20
STEPS, LAYERS, ACT_MB, BUCKET_MB = 12, 4, 2, 8


def job(name, world, tp, pp):
    """Runs the job; (report.json, summary text, page) or None."""
    args = ["--steps", str(STEPS), "--layers", str(LAYERS), "--act-mb", str(ACT_MB), "--bucket-mb", str(BUCKET_MB),
            "--fwd-us", "100", "--bwd-us", "200"]
    args += ["--tp", str(tp)] if tp > 1 else []
    args += ["--pp", str(pp)] if pp > 1 else []
    got = sim_job(name, world, args)
    return got[:3] if got else None


def layout(world, tp, pp):
    """simtrain's groups as sets of ranks, by role (Megatron's order)."""
    dp = world // (tp * pp)
    place = {r: (r % tp, r // tp % dp, r // (tp * dp)) for r in range(world)}
    groups = {"tensor": {}, "data": {}, "pipeline": {}}
    for r, (t, d, p) in place.items():
        groups["tensor"].setdefault((p, d), set()).add(r)
        groups["data"].setdefault((p, t), set()).add(r)
        groups["pipeline"].setdefault((d, t), set()).add(r)
    return {role: [g for g in gs.values()] for role, gs in groups.items() if len(next(iter(gs.values()))) > 1}


def check_job(name, world, tp, pp):
    got = job(name, world, tp, pp)
    if not got:
        return
    rep, text, page = got
    want = layout(world, tp, pp)
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
        check("%s: %s: inside the one host, with a reason and how sure" % (name, role),
              g["intra_node"] is True and g["hosts"] == 1 and g["why"] and 0 < g["confidence"] <= 1,
              json.dumps(g)[:300])
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
    line = [ln for ln in text.splitlines() if "communication groups:" in ln]
    check(name + ": the summary's line names every group with its share of time",
          len(line) == 1 and all("%s %d x %d ranks" % (g["role"], g["count"], g["size"]) in line[0] and
                                 "%.1f%% of the ranks' time" % g["time_pct"] in line[0] for g in rep["groups"]),
          "\n".join(line))
    i = page.find('id="table-groups"')
    table = page[i:page.find("</table>", i)] if i >= 0 else ""
    check(name + ": the page's table has a row per group", table.count("<tr>") == 1 + len(rep["groups"]),
          table[:300])


def main():
    check_job("tp2 pp2 dp2", 8, 2, 2)
    check_job("tp4 pp2", 8, 4, 2)
    got = job("data parallel", 2, 1, 1)
    if got:
        rep, text, page = got
        check("data parallel: one data-parallel group of both ranks",
              [(g["role"], g["count"], g["members_example"]) for g in rep["groups"]] == [("data", 1, [0, 1])],
              json.dumps(rep["groups"])[:300])
        check("data parallel: no groups line, no groups table, no pipeline",
              "communication groups:" not in text and 'id="table-groups"' not in page and "pipeline" not in rep and
              "pipeline:" not in text)
    finish()


if __name__ == "__main__":
    main()
