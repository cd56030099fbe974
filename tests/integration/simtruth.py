"""What simulated jobs' own records say, for the tests that hold reports
against them: interval arithmetic, a rank's overlap and exposed
communication from the simulator's truth file (SIMGPU_TRUTH), each rank's
wait for the last rank and its transfer, and the
checkpoint share of wall time from simtrain's event log (SIMTRAIN_EVENTS).
Python standard library only."""


def union(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(iv):
    return sum(e - s for s, e in iv)


def intersect(a, b):
    i = j = tot = 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            tot += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tot


def _rank_ops(truth, rank, overlap):
    """(the rank's operations, its collectives in seq order each with its
    arrival). A collective occupies its stream from when the stream reaches
    it (its launch, the end of the previous operation on the stream, and,
    with --overlap, the end of the backward kernel it waits for) to its end:
    what a GPU shows for an NCCL kernel that spins until its peers arrive.
    The truth's start_ns is the last rank's arrival."""
    ops = [t for t in truth if t.get("rank") == rank]
    colls = sorted((t for t in ops if t["kind"] == "collective"), key=lambda t: t["seq"])
    bwd = sorted((t for t in ops if t["kind"] == "kernel" and t["name"].startswith("bwd_")),
                 key=lambda t: t["start_ns"])
    by_stream = {}
    for t in ops:
        by_stream.setdefault(t["stream"], []).append(t)
    prev_end = {}
    for s, lst in by_stream.items():
        lst.sort(key=lambda t: (t["start_ns"], t["end_ns"]))
        for a, b in zip(lst, lst[1:]):
            prev_end[id(b)] = a["end_ns"]
    out = []
    for i, c in enumerate(colls):
        arrive = max(c["launch_ns"], prev_end.get(id(c), 0))
        if overlap and i < len(bwd):
            arrive = max(arrive, bwd[i]["end_ns"])
        out.append((min(arrive, c["start_ns"]), c))
    return ops, out


def truth_split(truth, ranks, overlap):
    """Per rank, from the truth file: {"wait", "transfer", "exposed",
    "span"} in ns. wait: from its arrival to the last rank's (start_ns);
    transfer: from there to its end; exposed: of its transfer, what its own
    compute kernels do not cover, at most the share the last rank's compute
    left bare of the last rank's call (the transfer runs on all ranks at
    once, gated by the last to arrive; of ranks arriving together, the least
    bare)."""
    per = {r: _rank_ops(truth, r, overlap) for r in ranks}
    compute = {r: union([(t["start_ns"], t["end_ns"]) for t in per[r][0] if t["kind"] == "kernel"])
               for r in ranks}
    calls = {}
    for r in ranks:
        for arrive, c in per[r][1]:
            calls.setdefault((c["comm"], c["seq"]), []).append((arrive, r, c))
    out = {}
    for r in ranks:
        ops = per[r][0]
        starts = [a for a, _ in per[r][1]] + [t["start_ns"] for t in ops if t["kind"] != "collective"]
        out[r] = {"wait": 0, "transfer": 0, "exposed": 0.0,
                  "span": max(t["end_ns"] for t in ops) - min(starts)}
    for members in calls.values():
        la = max(m[0] for m in members)
        # of the ranks that came last together (within 1 us: those the
        # previous collective's end freed at once), the one whose compute
        # hid most of its call sets the pace
        bare_last = min(1 - intersect([[a, c["end_ns"]]], compute[r]) / (c["end_ns"] - a)
                        for a, r, c in members if la - a <= 1000 and c["end_ns"] > a) \
            if any(la - a <= 1000 and c["end_ns"] > a for a, r, c in members) else 1
        for arrive, r, c in members:
            x = max(0, c["end_ns"] - c["start_ns"])
            out[r]["wait"] += c["start_ns"] - arrive
            out[r]["transfer"] += x
            bare = x - intersect([[c["start_ns"], c["end_ns"]]], compute[r])
            out[r]["exposed"] += min(bare, x * bare_last)
    return out


def truth_gpu(truth, rank, overlap, ranks=None):
    """(overlap %, exposed %) of one rank from the truth file: the share of
    its communication (the union of its collectives' intervals, above) that
    compute covers, and its exposed transfer (truth_split) as % of its GPU
    span. ranks: the job's ranks (default: those in the truth file)."""
    if ranks is None:
        ranks = sorted({t["rank"] for t in truth if t.get("rank") is not None})
    ops, colls = _rank_ops(truth, rank, overlap)
    comm = [(a, c["end_ns"]) for a, c in colls]
    compute = [(t["start_ns"], t["end_ns"]) for t in ops if t["kind"] == "kernel"]
    uc, uk = union(comm), union(compute)
    inter = intersect(uc, uk)
    sp = truth_split(truth, ranks, overlap)[rank]
    return 100.0 * inter / length(uc), 100.0 * sp["exposed"] / sp["span"]


def per_step_ms(steps, ops=None):
    """The program's own time per training step, job-wide, from simtrain's
    step lines (SIMGPU_TRUTH "kind":"step"): the last training step's end
    less the first one's start (any rank), over their count. With ops (the
    truth file's other lines), the first step starts at its first GPU
    operation instead: what a trace can see of it (the host's time before,
    the agent's start-up on its first record among it, is in no record)."""
    by = {}
    for t in steps:
        if t["phase"] == "train":
            by.setdefault(t["index"], []).append(t)
    ks = sorted(by)
    if not ks:
        return 0.0
    start = min(t["start_ns"] for t in by[ks[0]])
    if ops:
        start = min((t["start_ns"] for t in ops if t["start_ns"] >= start), default=start)
    return (max(t["end_ns"] for t in by[ks[-1]]) - start) / 1e6 / len(ks)


def kernel_time_ns(truth, rank, overlap):
    """One rank's kernels' GPU time added up, as a GPU measures each: the
    compute kernels' durations and the collectives' from their arrival
    (_rank_ops) to their end."""
    ops, colls = _rank_ops(truth, rank, overlap)
    return sum(t["end_ns"] - t["start_ns"] for t in ops if t["kind"] == "kernel") + \
        sum(c["end_ns"] - a for a, c in colls)


def checkpoint_pct_logged(events):
    """(checkpoint share of wall time %, checkpoints logged, ranks logged)
    from simtrain's event log: the union of its checkpoint writes over the
    time from the first rank's start to the last rank's end."""
    ck = union([(e["start_ns"], e["end_ns"]) for e in events if e["event"] == "checkpoint"])
    mains = [e for e in events if e["event"] == "main"]
    if not ck or not mains:
        return 0.0, len(ck), len(mains)
    wall = max(e["end_ns"] for e in mains) - min(e["start_ns"] for e in mains)
    return 100.0 * length(ck) / wall, len(ck), len(mains)


def step_wait_pct(truth, steps, ranks):
    """Per training step (by index), from the truth file: the ranks' waits
    for the last rank of each collective whose arrival falls in the step,
    summed, as % of the ranks' lengths of that step (simtrain's step lines,
    steps). Without overlap (collectives on the compute stream) no compute
    hides a wait, so this is the wait no compute hid."""
    win = {}
    for t in steps:
        if t["phase"] == "train":
            win.setdefault(t["index"], {})[t["rank"]] = (t["start_ns"], t["end_ns"])
    wait = {k: 0 for k in win}
    for r in ranks:
        for arrive, c in _rank_ops(truth, r, False)[1]:
            for k, w in win.items():
                if r in w and w[r][0] <= arrive < w[r][1]:
                    wait[k] += c["start_ns"] - arrive
                    break
    return {k: 100.0 * wait[k] / sum(e - s for s, e in w.values()) for k, w in win.items()}
