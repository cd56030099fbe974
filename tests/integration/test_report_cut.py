#!/usr/bin/env python3
"""A trace file that ends early: simlaunch runs 4 ranks of simtrain (data
loading, checkpoints every 10 steps, the agent flushing every 100 ms) and
one rank's file is cut in the middle of a frame, as a full disk or a cut
copy leaves it (and at that frame's start, as a killed process leaves it):
the frame after the first one whose I/O reaches past the rank's third
checkpoint (simtrain's log), so that the kept part holds checkpoints to
look for however the bytes fall in time on the machine. The report must still succeed, say on the page (a banner) and
in the text summary which rank's file ends where and how much of the run
it covers, name that rank late in no collective it has no record of, and
keep the checkpoints its file holds. Truths from outside the reporter:
where the file ends, from its whole frames decoded by the `lz4` tool and
Debian's flatc (test_flatc.py's helpers); the job's span from simtrain's
own log (SIMTRAIN_EVENTS: each rank's main, each checkpoint); the rank the
simulator was told to slow down (--straggler). The same job uncut is the
control: no banner, no line, no file said to end early."""
import json
import math
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, RINGSIDE, check, cleanup, finish, run, tempdir, trace_files  # noqa: E402
from test_bad_input import lz4_frames  # noqa: E402
from test_flatc import flatc_decode, split_chunks  # noqa: E402

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
NRANKS = 4
CUT = 1
SLOW = 2
FLUSH_MS = 100
ARGS = ["--steps", "60", "--layers", "4", "--ckpt-every", "10", "--ckpt-mb", "8"]


def run_job(name, args):
    """Runs simtrain on NRANKS ranks under the agent; returns (dir, events) or (dir, None)."""
    d = tempdir("report-cut-" + name)
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "LD_PRELOAD",
              "RINGSIDE_JOB", "RINGSIDE_RANK_PID", "RINGSIDE_TEST_CLOCK_SKEW_US"):
        env.pop(k, None)
    env.update(LD_LIBRARY_PATH=SIM, SIMTRAIN_EVENTS=os.path.join(d, "events"), SIMNCCL_TIMEOUT_S="30",
               RINGSIDE_OUT=os.path.join(d, "trace"), RINGSIDE_FLUSH_MS=str(FLUSH_MS),
               AGENT_SO=os.path.join(BUILD, "libagent.so"))
    # only the ranks run under the agent, not the launcher
    cmd = [LAUNCH, "-n", str(NRANKS), "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", TRAIN,
           "--ckpt-dir", os.path.join(d, "ckpt")] + args
    p = run(cmd, env=env, timeout=180)
    if not check(name + ": simtrain runs", p.returncode == 0,
                 "exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-500:])):
        return d, None
    with open(os.path.join(d, "events")) as f:
        return d, [json.loads(line) for line in f if line.strip()]


def report(d, trace):
    """(exit status, summary text, report.json or None, index.html text) of `ringside report`."""
    out = os.path.join(d, "report")
    shutil.rmtree(out, ignore_errors=True)
    p = run([RINGSIDE, "report", trace, "-o", out])
    rep, page = None, ""
    if p.returncode == 0:
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
        with open(os.path.join(out, "index.html")) as f:
            page = f.read()
    return p.returncode, p.stdout.decode(errors="replace"), rep, page


def io_ends(data, tmp):
    """Per LZ4 frame of a trace's bytes, decoded alone by lz4 and flatc:
    (its start, its end, the latest end of an I/O call in it, or 0)."""
    at = lz4_frames(data)
    files, frame_of = [], []
    for i in range(len(at) - 1):
        part = os.path.join(tmp, "frame%d.lz4" % i)
        with open(part, "wb") as f:
            f.write(data[at[i]:at[i + 1]])
        for j, c in enumerate(split_chunks(part)):
            files.append(os.path.join(tmp, "frame%d.%d.bin" % (i, j)))
            frame_of.append(i)
            with open(files[-1], "wb") as f:
                f.write(c)
    io = [0] * (len(at) - 1)
    for i, c in zip(frame_of, flatc_decode(files, tmp)):
        io[i] = max([io[i]] + [e["start_ns"] + e["dur_ns"] for e in c.get("io", [])])
    return [(at[i], at[i + 1], io[i]) for i in range(len(at) - 1)]


def cut_point(path, t_ns):
    """Bytes of the trace at path to keep so that its whole frames hold an
    I/O call that ends at t_ns or later and the file ends inside the frame
    after: the middle of that frame."""
    with open(path, "rb") as f:
        data = f.read()
    tmp = tempdir("report-cut-frames")
    try:
        frames = io_ends(data, tmp)
    finally:
        cleanup(tmp)
    k = next(i for i, (_, _, io) in enumerate(frames) if io >= t_ns)
    start, end, _ = frames[min(k + 1, len(frames) - 1)]
    return (start + end) // 2


def cut_copy(d, rank, after_ns=None):
    """A copy of d's traces with rank's file cut: past its I/O at after_ns
    (cut_point), or to half its bytes. (folder, the cut file, the whole one,
    bytes kept)."""
    dst = os.path.join(d, "cut%d" % rank)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(os.path.join(d, "trace"), dst)
    path = [f for f in trace_files(dst) if os.path.basename(f).startswith("rank-%d." % rank)][0]
    whole = os.path.join(d, "trace", os.path.relpath(path, dst))
    keep = cut_point(whole, after_ns) if after_ns is not None else os.path.getsize(path) // 2
    os.truncate(path, keep)
    return dst, path, whole, keep


def last_times(whole, keep, tmp):
    """What the whole frames in the first keep bytes of the file whole hold,
    decoded by lz4 and flatc: (latest end of a GPU op, collective, I/O call
    or clock pair; latest time of any record; latest end of an I/O call)."""
    with open(whole, "rb") as f:
        data = f.read()
    whole = [s for s in lz4_frames(data)[1:] if s <= keep]
    prefix = os.path.join(tmp, "whole.lz4")
    with open(prefix, "wb") as f:
        f.write(data[:whole[-1]])
    files = []
    for i, c in enumerate(split_chunks(prefix)):
        files.append(os.path.join(tmp, "chunk%d.bin" % i))
        with open(files[-1], "wb") as f:
            f.write(c)
    ops = every = io = 0
    for c in flatc_decode(files, tmp):
        op_ends = [e["mono_ns"] for e in c.get("clocks", [])]
        op_ends += [e["start_ns"] + e["dur_ns"] for e in c.get("io", [])]
        op_ends += [max(e["gpu_end_ns"], e["launch_ns"] + e["call_ns"]) for k in ("gpu", "colls") for e in c.get(k, [])]
        io = max([io] + [e["start_ns"] + e["dur_ns"] for e in c.get("io", [])])
        ops = max([ops] + op_ends)
        rest = [e["start_ns"] + e["dur_ns"] for k in ("syncs", "comms", "mems") for e in c.get(k, [])]
        rest += [e["ts_ns"] for k in ("samples", "modules", "points") for e in c.get(k, [])]
        rest += [e["end_ns"] for e in c.get("ranges", [])]
        every = max([every, ops] + rest)
    return ops, every, io


def by_rank(rep):
    return {p["rank"]: p for p in rep["processes"] if p["rank"] is not None}


def named_stragglers(rep):
    """Ranks report.json names late: its stragglers and the straggler finding's."""
    named = {s["rank"] for s in rep["stragglers"]}
    for f in rep["findings"]:
        if f["id"] == "straggler_rank":
            named.update(int(r) for r in re.findall(r"\brank (\d+)", f["evidence"] + " " + f["title"]))
    return named


def check_control(name, d, events):
    rc, text, rep, page = report(d, os.path.join(d, "trace"))
    if not check(name + ": report of the whole job succeeds", rc == 0 and rep is not None, "exit %d" % rc):
        return
    check(name + ": no file said to end early", rep.get("ends_early") == [] and
          all(p["trace"].get("ends_early") is False for p in rep["processes"]), json.dumps(rep.get("ends_early")))
    check(name + ": no line for it in the summary", "ends early" not in text, text[:300])
    check(name + ": no banner on the page", 'id="ends-early"' not in page)


def third_checkpoint(events, rank):
    """When simtrain's log says rank finished its third checkpoint."""
    return sorted(x["end_ns"] for x in events if x["event"] == "checkpoint" and x["rank"] == rank)[2]


def check_cut(name, d, events):
    trace, path, whole, keep = cut_copy(d, CUT, third_checkpoint(events, CUT))
    rc, text, rep, page = report(d, trace)
    if not check(name + ": report of the cut job succeeds", rc == 0 and rep is not None, "exit %d" % rc):
        return
    tmp = tempdir("report-cut-flatc")
    try:
        t_ops, t_any, t_io = last_times(whole, keep, tmp)
    finally:
        cleanup(tmp)
    procs = by_rank(rep)
    tr = procs[CUT]["trace"]
    listed = [e for e in rep.get("ends_early", []) if e["rank"] == CUT]
    check(name + ": the cut rank's file, and only it, is said to end early",
          len(rep.get("ends_early", [])) == 1 and listed and listed[0]["cut_short"] and tr.get("ends_early") and
          os.path.samefile(listed[0]["file"], path), json.dumps(rep.get("ends_early")))
    if not listed:
        return
    e = listed[0]
    # where it ends, on the rank's own clock (report.json's time line less
    # its offset), to the precision report.json prints (6 digits) and 1 us
    end_mono = rep["start_us"] * 1e3 + e["ends_s"] * 1e9 - procs[CUT]["clock"]["offset_ns"]
    digits = 1e3 + 0.5e9 * 10 ** (math.floor(math.log10(e["ends_s"])) - 5)
    check(name + ": it ends at its last whole frame's last record (lz4 + flatc)",
          t_ops - digits <= end_mono <= t_any + digits,
          "report %.0f ns, records end at %d ns (operations) to %d ns (any record), +-%.0f ns"
          % (end_mono, t_ops, t_any, digits))
    # the programs' own span: simtrain's main on every rank. The report's
    # job runs from the ranks' first records to their last (the agent's
    # start-up and exit around main); with a = S - S_r and b = E_r - E, the
    # share up to t differs from the truth's by at most (2|a| + |b|) / W_r
    mains = [x for x in events if x["event"] == "main"]
    s, end = min(x["start_ns"] for x in mains), max(x["end_ns"] for x in mains)
    s_r = rep["start_us"] * 1e3 - procs[CUT]["clock"]["offset_ns"]
    w_r = rep["wall_s"] * 1e9
    a, b = s - s_r, (s_r + w_r) - end
    check(name + ": the report's job is the programs' own span, within 5%", abs(a) + abs(b) <= 0.05 * (end - s),
          "report starts %+.3f ms before main, ends %+.3f ms after" % (a / 1e6, b / 1e6))
    truth = 100.0 * (t_ops - s) / (end - s)
    margin = 100.0 * (2 * abs(a) + abs(b) + (t_any - t_ops)) / w_r + 0.01
    check(name + ": covers_pct agrees with the truth", abs(e["covers_pct"] - truth) <= margin,
          "report %.2f%%, truth %.2f%% (margin %.2f points)" % (e["covers_pct"], truth, margin))
    check(name + ": the process's trace says the same",
          abs(tr["covers_pct"] - e["covers_pct"]) < 1e-6 and abs(tr["ends_s"] - e["ends_s"]) < 1e-9)
    cover = "covering %.1f%% of the run" % e["covers_pct"]
    ends = "rank %d's file ends at %.2f s of %.2f s" % (CUT, e["ends_s"], rep["wall_s"])
    lines = [ln for ln in text.splitlines() if "ends early" in ln]
    check(name + ": one line in the summary names the rank, where and how much",
          len(lines) == 1 and ends in lines[0] and cover in lines[0] and "cut short" in lines[0], "\n".join(lines))
    i = page.find('id="ends-early"')
    banner = page[i:page.find("</section>", i)] if i >= 0 else ""
    check(name + ": the page's banner names the rank, where and how much",
          ends in banner and cover in banner and "cut short" in banner, banner[:400])
    check(name + ": no straggler named for the missing time", CUT not in named_stragglers(rep),
          json.dumps(rep["stragglers"]))
    # checkpoints: every one the cut rank finished before its file's last I/O call
    logged = {r: [x for x in events if x["event"] == "checkpoint" and x["rank"] == r] for r in range(NRANKS)}
    before = [x for x in logged[CUT] if x["end_ns"] <= t_io]
    got = {r: [c for c in rep["checkpoints"] if c["rank"] == r] for r in range(NRANKS)}
    check(name + ": the cut file holds checkpoints to look for", len(before) >= 2,
          "%d checkpoints before the cut" % len(before))
    check(name + ": the checkpoints before the cut are reported",
          len(before) <= len(got[CUT]) <= len(before) + 1 and len(got[CUT]) < len(logged[CUT]),
          "reported %d, %d finished before the cut, %d in all" % (len(got[CUT]), len(before), len(logged[CUT])))
    check(name + ": the other ranks' checkpoints are all there",
          all(len(got[r]) == len(logged[r]) for r in range(NRANKS) if r != CUT),
          str({r: (len(got[r]), len(logged[r])) for r in range(NRANKS)}))


def check_killed(name, d, events):
    """The file cut at a frame's start, as a killed process leaves it: no end
    mark, nothing unread; it still ends more than a flush interval early."""
    trace, path, whole, keep = cut_copy(d, CUT, third_checkpoint(events, CUT))
    with open(whole, "rb") as f:
        data = f.read()
    at = max(s for s in lz4_frames(data) if s <= keep)
    with open(path, "wb") as f:
        f.write(data[:at])
    rc, text, rep, page = report(d, trace)
    if not check(name + ": report succeeds", rc == 0 and rep is not None, "exit %d" % rc):
        return
    ends = rep.get("ends_early", [])
    check(name + ": said to end early, with no end mark, nothing unread",
          [(e["rank"], e["cut_short"], e["unread_bytes"]) for e in ends] == [(CUT, False, 0)], json.dumps(ends))
    lines = [ln for ln in text.splitlines() if "ends early" in ln]
    check(name + ": the summary says the process was killed",
          len(lines) == 1 and "rank %d's file" % CUT in lines[0] and "no end mark" in lines[0], "\n".join(lines))


def check_straggler(name, d):
    """A real straggler: still named when another rank's file is cut, and
    the cut rank never; when its own file is cut, no other rank is named
    for the time after."""
    for rank in (CUT, SLOW):
        trace = cut_copy(d, rank)[0]
        rc, _, rep, _ = report(d, trace)
        if not check("%s, rank %d cut: report succeeds" % (name, rank), rc == 0 and rep is not None):
            continue
        named = named_stragglers(rep)
        if rank == CUT:
            check("%s, rank %d cut: the slowed rank is named, the cut one is not" % (name, rank),
                  SLOW in named and CUT not in named, json.dumps(rep["stragglers"]))
        else:
            check("%s, rank %d cut: no other rank is named" % (name, rank), named <= {SLOW},
                  json.dumps(rep["stragglers"]))


def main():
    d, events = run_job("equal", ARGS + ["--data-us", "2000"])
    if events is not None:
        check_control("equal ranks", d, events)
        check_cut("equal ranks, rank %d cut" % CUT, d, events)
        check_killed("equal ranks, rank %d cut at a frame's start" % CUT, d, events)
    cleanup(d)
    # no checkpoints: the waiting for the slowed rank is then most of each
    # part of the job (collectives.h), well above the bar
    d, events = run_job("straggler", ["--steps", "60", "--layers", "4", "--straggler", "%d:2" % SLOW])
    if events is not None:
        check_straggler("rank %d slowed" % SLOW, d)
    cleanup(d)
    finish()


if __name__ == "__main__":
    main()
