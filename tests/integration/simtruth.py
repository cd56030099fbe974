"""What simulated jobs' own records say, for the tests that hold reports
against them: interval arithmetic, a rank's overlap and exposed
communication from the simulator's truth file (SIMGPU_TRUTH), and the
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


def comm_occupancy(ops, overlap):
    """The intervals one rank's collectives occupy their streams (ops: that
    rank's truth lines): from when the stream reaches one (its launch, the
    end of the previous operation on the stream, and, with --overlap, the
    end of the backward kernel it waits for) to its end: what a GPU shows
    for an NCCL kernel that spins until its peers arrive."""
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
    comm = []
    for i, c in enumerate(colls):
        arrive = max(c["launch_ns"], prev_end.get(id(c), 0))
        if overlap and i < len(bwd):
            arrive = max(arrive, bwd[i]["end_ns"])
        comm.append((min(arrive, c["start_ns"]), c["end_ns"]))
    return comm


def truth_gpu(truth, rank, overlap):
    """(overlap %, exposed %) of one rank from the truth file, its
    collectives as comm_occupancy has them."""
    ops = [t for t in truth if t.get("rank") == rank]
    comm = comm_occupancy(ops, overlap)
    compute = [(t["start_ns"], t["end_ns"]) for t in ops if t["kind"] == "kernel"]
    starts = [s for s, _ in comm] + [t["start_ns"] for t in ops if t["kind"] != "collective"]
    span = max(t["end_ns"] for t in ops) - min(starts)
    uc, uk = union(comm), union(compute)
    inter = intersect(uc, uk)
    return 100.0 * inter / length(uc), 100.0 * (length(uc) - inter) / span




def kernel_time_ns(truth, rank, overlap):
    """One rank's kernels' GPU time added up, as a GPU measures each: the
    compute kernels' durations and the collectives' comm_occupancy."""
    ops = [t for t in truth if t.get("rank") == rank]
    return sum(t["end_ns"] - t["start_ns"] for t in ops if t["kind"] == "kernel") + \
        sum(e - s for s, e in comm_occupancy(ops, overlap))


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
