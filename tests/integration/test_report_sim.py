#!/usr/bin/env python3
"""ringside report on simtrain jobs (4 ranks under the agent, simulated GPU
and NCCL) against truths it did not compute: the simulator's truth file
(every operation's real start and end on the machine's one CLOCK_MONOTONIC),
simtrain's own log of its checkpoints (SIMTRAIN_EVENTS), the bandwidth the
simulator was given, and the straggler it was told to make. Checks: comm-comp
overlap and exposed communication per rank within 1 point, AllReduce busbw
within 5%, the straggler named first, checkpoint share of wall time within
1 point, and ranks whose clocks are skewed on purpose (the agent's test-only
RINGSIDE_TEST_CLOCK_SKEW_US) put back on one time line within 20 us. And no
straggler named where there is none: 2 and 4 equal simtrain ranks (run a
few times: their waiting is the host's scheduling noise) and a gen_job job
(every rank leaves each collective at the same time), while the rank that
--straggler R:1.5 slows down is named."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import (AGENT, BUILD, RINGSIDE, check, cleanup, dump, finish, report, run, skip,  # noqa: E402
                    tempdir, trace_files)
from simtruth import checkpoint_pct_logged, truth_gpu  # noqa: E402

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
GEN_JOB = os.path.join(BUILD, "gen_job")
SIM = os.path.join(BUILD, "sim")
NRANKS = 4
BW_GBS = 40.0
ALPHA_NS = 10000           # simnccl's default SIMNCCL_ALPHA_US
BUCKET_MB = 32
SKEW_US = {0: 5000, 1: -5000, 2: 2500, 3: -1200}


def run_job(name, args, skew=False, nranks=NRANKS):
    """Runs simtrain on nranks ranks; returns (dir, report, truth lines, events, ok)."""
    d = tempdir("report-sim-" + name)
    out = os.path.join(d, "trace")
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "LD_PRELOAD",
              "RINGSIDE_TEST_CLOCK_SKEW_US", "RINGSIDE_JOB", "RINGSIDE_RANK_PID"):
        env.pop(k, None)
    env.update(LD_LIBRARY_PATH=SIM, SIMGPU_TRUTH=os.path.join(d, "truth"),
               SIMTRAIN_EVENTS=os.path.join(d, "events"), SIMNCCL_TIMEOUT_S="30", RINGSIDE_OUT=out)
    # only the ranks run under the agent (not the launcher), each with its skew
    script = 'export LD_PRELOAD="$AGENT_SO"; '
    if skew:
        script += "case $RANK in %s esac; " % " ".join(
            "%d) export RINGSIDE_TEST_CLOCK_SKEW_US=%d;;" % (r, s) for r, s in SKEW_US.items())
    script += 'exec "$@"'
    env["AGENT_SO"] = AGENT
    cmd = [LAUNCH, "-n", str(nranks), "--", "sh", "-c", script, "sh", TRAIN,
           "--bw-gbs", str(BW_GBS), "--bucket-mb", str(BUCKET_MB), "--ckpt-dir", os.path.join(d, "ckpt")] + args
    p = run(cmd, env=env, timeout=180)
    if p.returncode != 0:
        check(name + "_runs", False, "simtrain failed (%d): %s" % (p.returncode, p.stderr.decode()[-500:]))
        return d, None, [], [], False
    rep = report(out)
    with open(os.path.join(d, "truth")) as f:
        # the simulator's operations (simtrain's own step lines are test_steps.py's)
        truth = [t for t in (json.loads(line) for line in f if line.strip()) if t.get("kind") != "step"]
    events = []
    if os.path.exists(os.path.join(d, "events")):
        with open(os.path.join(d, "events")) as f:
            events = [json.loads(line) for line in f if line.strip()]
    return d, rep, truth, events, True


def truth_host_wait_pct(truth, rank):
    """GPU idle waiting for the host, % of the GPU span, from the truth file,
    on the stream with the most operations: the gaps before an operation
    launched after the previous one on the stream had ended (HTA's host
    wait)."""
    ops = [t for t in truth if t.get("rank") == rank]
    by_stream = {}
    for t in ops:
        by_stream.setdefault(t["stream"], []).append(t)
    lst = max(by_stream.values(), key=len)
    lst.sort(key=lambda t: (t["start_ns"], t["end_ns"]))
    wait = 0
    for a, b in zip(lst, lst[1:]):
        if b["launch_ns"] > a["end_ns"] and b["start_ns"] > a["end_ns"]:
            wait += b["start_ns"] - a["end_ns"]
    span = max(t["end_ns"] for t in ops) - min(t["start_ns"] for t in ops)
    return 100.0 * wait / span


def has_gpu(rep):
    return rep is not None and any("gpu" in p for p in rep["processes"])


def gpu_checks(name, rep, truth, overlap):
    problems = []
    for p in rep["processes"]:
        if p["rank"] is None:
            continue
        ov, ex = truth_gpu(truth, p["rank"], overlap)
        g = p.get("gpu", {})
        if abs(g.get("comm_comp_overlap_pct", -100) - ov) > 1:
            problems.append("rank %d overlap %.2f%%, truth %.2f%%" % (p["rank"], g.get("comm_comp_overlap_pct", -1), ov))
        if abs(g.get("exposed_comm_pct", -100) - ex) > 1:
            problems.append("rank %d exposed %.2f%%, truth %.2f%%" % (p["rank"], g.get("exposed_comm_pct", -1), ex))
    check(name + "_overlap_and_exposed_comm", not problems, "; ".join(problems))
    bucket = int(BUCKET_MB * 1048576) & ~3
    factor = 2.0 * (NRANKS - 1) / NRANKS
    want = bucket * factor / (ALPHA_NS + bucket * factor / BW_GBS)   # bytes/ns = GB/s
    rows = [c for c in rep["collectives"] if c["op"] == "AllReduce" and c["bytes"] == bucket]
    got = rows[0]["busbw_gbs"] if rows else None
    check(name + "_busbw", got is not None and abs(got - want) <= 0.05 * want,
          "busbw %r GB/s, the simulator's model gives %.2f" % (got, want))


def checkpoint_check(name, rep, events):
    """Checkpoint share of wall time against simtrain's log; returns the
    share the log gives (None when it cannot)."""
    want, nck, nmain = checkpoint_pct_logged(events)
    if not nck or nmain != NRANKS:
        check(name + "_checkpoint_pct", False, "simtrain logged %d checkpoints, %d ranks" % (nck, nmain))
        return None
    got = rep.get("checkpoint_pct")
    check(name + "_checkpoint_pct", got is not None and abs(got - want) <= 1,
          "checkpoint_pct %r, simtrain's log gives %.2f" % (got, want))
    return want


def alignment_check(name, rep, truth, d):
    """Each rank's kernels, as the agent recorded them (skewed clocks) moved
    by the offset the report applied, against their true start: the
    difference must be the same on every rank within 20 us."""
    offs = {}
    for p in rep["processes"]:
        if p["rank"] is not None and "clock" in p:
            offs[p["pid"]] = (p["rank"], p["clock"]["offset_ns"])
    diffs, short, files = {}, {}, []
    for tf in trace_files(os.path.join(d, "trace")):
        recs, rc, _ = dump(tf)
        meta = [r for r in recs if r.get("type") == "meta"]
        chunks = [r for r in recs if r.get("type") == "chunk"]
        # what each file is, for a failure's message (a rank once went missing)
        files.append((os.path.basename(tf), os.path.getsize(tf), rc, meta[0].get("pid") if meta else None,
                      meta[0].get("rank") if meta else None, bool(chunks) and chunks[-1].get("end")))
        if not meta or meta[0]["pid"] not in offs:
            continue
        rank, off = offs[meta[0]["pid"]]
        got, want = {}, {}
        for r in recs:
            if r.get("type") == "gpu" and r.get("kind") == "kernel" and r["gpu_start_ns"] \
                    and not str(r.get("name_text", "")).startswith("nccl"):
                got.setdefault(r.get("name_text"), []).append(r["gpu_start_ns"])
        for t in truth:
            if t.get("rank") == rank and t["kind"] == "kernel":
                want.setdefault(t["name"], []).append(t["start_ns"])
        # the k-th run of each kernel name on both sides (a name whose count
        # differs, should the agent have missed a run, is left out)
        ds = sorted(g + off - w for name in want if len(got.get(name, [])) == len(want[name])
                    for g, w in zip(sorted(got[name]), sorted(want[name])))
        if len(ds) < 100:
            short[rank] = {n: (len(got.get(n, [])), len(w)) for n, w in want.items()}
            continue
        diffs[rank] = ds[len(ds) // 2]
    ok = len(diffs) == NRANKS and max(diffs.values()) - min(diffs.values()) <= 20000
    check(name + "_clock_alignment", ok, "per-rank offsets from truth, less the smallest (us): %s; skew_us %r; "
          "ranks without kernels to match (agent, truth runs per name): %r; trace files (name, bytes, dump's "
          "status, pid, rank, ended): %r; the report's processes (pid, rank, clock): %r; truth ranks: %r" %
          ({r: round((v - min(diffs.values())) / 1e3, 3) for r, v in diffs.items()}, rep.get("skew_us"), short,
           files, [(p["pid"], p["rank"], "clock" in p) for p in rep["processes"]],
           sorted({t.get("rank") for t in truth if "rank" in t})))
    check(name + "_skew_reported", rep.get("skew_us") is not None and rep["skew_us"] >= 1000,
          "skew_us %r for ranks skewed by %s us" % (rep.get("skew_us"), SKEW_US))


def report_with_summary(out):
    """(report.json as a dict, the printed summary) of the traces under out."""
    p = run([RINGSIDE, "report", out, "--json", "-"])
    if p.returncode != 0:
        raise RuntimeError("ringside report failed: %s" % p.stderr.decode(errors="replace"))
    return json.loads(p.stdout), p.stderr.decode(errors="replace")


def no_straggler_checks(name, out):
    """Names no straggler in report.json, its findings or its summary."""
    rep, summary = report_with_summary(out)
    s = rep.get("stragglers")
    f = [x["id"] for x in rep.get("findings", [])]
    check(name + "_names_no_straggler", s == [] and "straggler_rank" not in f,
          "stragglers %r; findings %r; %r" % ((s or [])[:2], f, rep.get("straggler_check")))
    line = [l.strip() for l in summary.splitlines() if "slowest rank" in l]
    check(name + "_summary_says_none_stands_out", len(line) == 1 and "none stands out" in line[0],
          "summary: %r" % line)


def straggler_checks():
    """Equal ranks: none named; a rank with --straggler 2:1.5: named, alone.
    NCCL's default bandwidth and 25 MiB buckets (as `make demo`), kernels of
    400 and 800 us: the waiting that equal ranks cause by the host's
    scheduling alone (a rank last in most steps) stays under 7% of the time
    beyond an equal rank's share, the straggler causes over 30%, and the bar
    is 10% (reporter/analyse/collectives.h)."""
    args = ["--steps", "30", "--layers", "4", "--fwd-us", "400", "--bwd-us", "800", "--bw-gbs", "100",
            "--bucket-mb", "25"]
    for n in (2, 4):
        for k in range(3):
            name = "equal%d_%d" % (n, k)
            d, rep, truth, events, ok = run_job(name, args, nranks=n)
            if ok:
                no_straggler_checks(name, os.path.join(d, "trace"))
            cleanup(d)
    d, rep, truth, events, ok = run_job("straggler15", args + ["--straggler", "2:1.5"])
    if ok:
        s = rep.get("stragglers") or []
        check("straggler15_named", [x["rank"] for x in s] == [2], "stragglers %r; %r" %
              ([(x["rank"], x.get("excess_pct")) for x in s], rep.get("straggler_check")))
    cleanup(d)
    if not os.path.exists(GEN_JOB):
        skip("gen_job_names_no_straggler", GEN_JOB + " is missing (make test-build)")
        return
    d = tempdir("report-sim-gen")
    p = run([GEN_JOB, "-n", "8", "-e", "20000", "-o", os.path.join(d, "job")])
    if check("gen_job_runs", p.returncode == 0, p.stderr.decode()[-300:]):
        no_straggler_checks("gen_job", d)
    cleanup(d)


def main():
    for exe in (LAUNCH, TRAIN, os.path.join(SIM, "libcuda.so.1"), AGENT):
        if not os.path.exists(exe):
            check("report_sim_built", False, exe + " is missing (make all)")
            finish()
    common = ["--steps", "100", "--layers", "4", "--fwd-us", "400", "--bwd-us", "800"]
    # The GPU checks run on jobs without checkpoints, and long enough that
    # one-time effects at the start weigh little: an operation whose launch
    # call blocks on the host (a large copy; NCCL's first call, which sets
    # up its connections) is timed by the agent's event pair until the call
    # returned, later than the simulator's model ends it; so does a launch
    # call the scheduler holds up on a busy machine. Kernels and buckets
    # large enough that such a stall weighs little against the time in
    # communication (overlap % is a share of it).
    # 1: overlap, clocks skewed per rank
    d, rep, truth, events, ok = run_job("overlap", common + ["--overlap"], skew=True)
    if ok:
        if has_gpu(rep):
            gpu_checks("overlap", rep, truth, True)
            alignment_check("overlap", rep, truth, d)
        else:
            check("overlap_gpu_capture", False, "the agent recorded no GPU work (CUDA/NCCL capture missing)")
    cleanup(d)
    # 2: no overlap, rank 2 twice as slow
    d, rep, truth, events, ok = run_job("straggler", common + ["--no-overlap", "--straggler", "2:2"])
    if ok:
        if has_gpu(rep):
            gpu_checks("straggler", rep, truth, False)
            s = rep.get("stragglers") or []
            check("straggler_named_first", s and s[0]["rank"] == 2, "stragglers %r" % s[:2])
            f = {x["id"]: x for x in rep.get("findings", [])}
            check("straggler_finding", "straggler_rank" in f and f["straggler_rank"]["evidence"].startswith("rank 2 "),
                  "findings %r" % list(f))
            # exposed communication: a finding when the truth file shows 10% or more
            worst = max(truth_gpu(truth, r, False)[1] for r in range(NRANKS))
            if abs(worst - 10) > 1:
                check("straggler_exposed_comm_finding", ("exposed_communication" in f) == (worst > 10),
                      "worst exposed communication in the truth file %.1f%%, findings %r" % (worst, list(f)))
            else:
                skip("straggler_exposed_comm_finding",
                     "exposed communication %.1f%% is too near the 10%% threshold to judge" % worst)
        else:
            check("straggler_gpu_capture", False, "the agent recorded no GPU work (CUDA/NCCL capture missing)")
    cleanup(d)
    # 3: kernels of a few microseconds: the GPU waits for the launches
    d, rep, truth, events, ok = run_job("hostbound", ["--steps", "50", "--layers", "4", "--fwd-us", "3",
                                                      "--bwd-us", "3", "--no-overlap", "--bucket-mb", "0.01"])
    if ok and has_gpu(rep):
        worst = max(truth_host_wait_pct(truth, r) for r in range(NRANKS))
        f = [x["id"] for x in rep.get("findings", [])]
        if abs(worst - 20) > 2:   # the finding's threshold is 20%
            check("hostbound_finding", ("host_bound_launches" in f) == (worst > 20),
                  "worst host wait in the truth file %.1f%%, findings %r" % (worst, f))
        else:
            skip("hostbound_finding", "host wait %.1f%% is too near the threshold to judge" % worst)
    cleanup(d)
    # 4: checkpoints, clocks skewed (the windows of all ranks are put
    # together on the aligned time line). The report's wall time is the
    # processes' (the agent's start to its last flush), simtrain's log has
    # main's: a run long enough that the difference (process start and exit,
    # slow on a busy machine) weighs little.
    d, rep, truth, events, ok = run_job("checkpoint", ["--steps", "150", "--ckpt-every", "25", "--ckpt-mb", "12"],
                                        skew=True)
    if ok:
        want = checkpoint_check("checkpoint", rep, events)
        f = [x for x in rep.get("findings", []) if x["id"] == "checkpoint_stall"]
        if want is not None and abs(want - 5) > 1:   # the finding's threshold is 5%
            check("checkpoint_finding", bool(f) == (want > 5), "simtrain's log gives %.1f%%, findings %r" %
                  (want, [x["id"] for x in rep.get("findings", [])]))
        elif want is not None:
            skip("checkpoint_finding", "a checkpoint stall of %.1f%% is too near the 5%% threshold to judge" % want)
    cleanup(d)
    # 5: stragglers named only where there is one
    straggler_checks()
    finish()


if __name__ == "__main__":
    main()
