#!/usr/bin/env python3
"""The path PyTorch takes, half (b), and Triton's: build/tests/cudart/replay reaches the
driver exactly as the recorded runtime does (dlopen libcuda.so.1, dlsym
cuGetProcAddress_v2, the 440-odd lookups of tests/data/cudart-X.Y-lookups.txt in order),
or by dlsym of the exported names as Triton does, and then launches kernels, copies,
sets, a graph and waits through what it got, on the simulator, under the agent. The
simulator's truth file and the program's own counts are the truth: every kernel, copy
and set is in the trace (counts, names, streams, bytes, directions, per-thread flags),
every wait too, and the timed ones within 2 us of the truth. The replay itself is
checked against the logging stand-in: its lookups are the recorded ones."""
import collections
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rstest  # noqa: E402

REPLAY = os.path.join(rstest.BUILD, "tests", "cudart", "replay")
LOGCUDA = os.path.join(rstest.BUILD, "tests", "logcuda")
SIM = os.path.join(rstest.BUILD, "sim")
DATA = os.path.join(rstest.ROOT, "tests", "data")
FLAG_PTDS, FLAG_CAPTURED, FLAG_SYNC = 1, 2, 4


def lookups_of(path):
    out = []
    with open(path) as f:
        for line in f:
            fld = line.rstrip("\n").split("\t")
            if fld[0] == "lookup":
                out.append(tuple(fld[2:7]))  # symbol, version, flags, via, status
    return out


def check_replays_list(data, tmp, agent):
    """The replay's lookups, as the logging stand-in records them, are the list's."""
    tag = ("agent" if agent else "plain") + os.path.basename(data)[len("cudart"):-len("-lookups.txt")]
    log = os.path.join(tmp, "stand-in-%s.log" % tag)
    env = rstest.traced_env(os.path.join(tmp, "stand-in-trace")) if agent else dict(os.environ)
    if not agent:
        env.pop("LD_PRELOAD", None)
    env.update(LD_LIBRARY_PATH=LOGCUDA, LOGCUDA_LOG=log)
    rstest.run([REPLAY, "--procaddr", data], env=env, timeout=120)  # stops at cuDeviceGet
    want, got = lookups_of(data), lookups_of(log) if os.path.exists(log) else []
    if agent:  # the getter the agent forwards through is its own business
        want, got = [w[:3] for w in want], [g[:3] for g in got]
    first = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    rstest.check("replay_lookups_are_recorded_ones_%s" % tag, want == got,
                 "%d recorded, %d replayed; first difference at %d: %r vs %r"
                 % (len(want), len(got), first, want[first:first + 1], got[first:first + 1]))


def counter_diff(a, b):
    return "trace %r, truth %r" % (dict(a - b), dict(b - a))


def check_mode(mode, args, tmp):
    out = os.path.join(tmp, mode + "-trace")
    truth_pat = os.path.join(tmp, mode + "-truth-%p.jsonl")
    env = rstest.traced_env(out, LD_LIBRARY_PATH=SIM, SIMGPU_TRUTH=truth_pat)
    p = rstest.run([REPLAY] + args, env=env, timeout=120)
    traces = rstest.trace_files(out)
    truths = glob.glob(truth_pat.replace("%p", "*"))
    if not rstest.check("%s_runs" % mode, p.returncode == 0 and len(traces) == 1 and len(truths) == 1,
                        "exit %d, %d traces, %d truth files: %s" % (
                            p.returncode, len(traces), len(truths), p.stderr.decode(errors="replace")[-300:])):
        return
    prog = json.loads(p.stdout.decode().strip().splitlines()[-1])
    with open(truths[0]) as f:
        truth = [json.loads(line) for line in f]
    recs, rc, err = rstest.dump(traces[0])
    if not rstest.check("%s_dump" % mode, rc == 0, err[-300:]):
        return
    gpu = [r for r in recs if r.get("type") == "gpu"]
    syncs = [r for r in recs if r.get("type") == "sync"]

    # The program's counts against the simulator's: the work really ran where it was sent
    # (a per-thread variant reaching the legacy function would put it on another stream).
    tk = collections.Counter(t["kind"] for t in truth if not t.get("graph"))
    on_ptsz = sum(1 for t in truth if t["stream"] == prog["ptsz_stream"])
    rstest.check("%s_truth_is_the_programs" % mode,
                 tk == collections.Counter(kernel=prog["kernel"], memcpy=prog["memcpy"], memset=prog["memset"])
                 and sum(1 for t in truth if t.get("graph")) == prog["graph_kernels"]
                 and on_ptsz == prog["kernel_ptds"] + prog["memcpy_ptds"] + prog["memset_ptds"],
                 "truth %r (%d on the per-thread stream), program %r" % (dict(tk), on_ptsz, prog))

    # Every kernel, copy and set in the trace; captured launches and graph launches apart.
    captured = [g for g in gpu if g["flags"] & FLAG_CAPTURED]
    ran = [g for g in gpu if not g["flags"] & FLAG_CAPTURED and g["kind"] != "graph"]
    rk = collections.Counter(g["kind"] for g in ran)
    rstest.check("%s_counts_per_kind" % mode, rk == tk, counter_diff(rk, tk))
    rstest.check("%s_graph_launches" % mode,
                 sum(1 for g in gpu if g["kind"] == "graph") == prog["graph_launch"]
                 and len(captured) == prog["captured"],
                 "%d graph events (want %d), %d captured launches (want %d)" % (
                     sum(1 for g in gpu if g["kind"] == "graph"), prog["graph_launch"], len(captured),
                     prog["captured"]))
    kt = collections.Counter((g["name_text"], g["stream"]) for g in ran if g["kind"] == "kernel")
    kw = collections.Counter((t["name"], t["stream"]) for t in truth if t["kind"] == "kernel" and not t.get("graph"))
    rstest.check("%s_kernel_names_and_streams" % mode, kt == kw, counter_diff(kt, kw))
    for kind in ("memcpy", "memset"):
        bt = sum(g["bytes"] for g in ran if g["kind"] == kind)
        bw = sum(t["bytes"] for t in truth if t["kind"] == kind)
        rstest.check("%s_%s_bytes" % (mode, kind), bt == bw, "trace %d bytes, truth %d" % (bt, bw))
    dt = collections.Counter(g["dir"] for g in ran if g["kind"] == "memcpy")
    dw = collections.Counter(t["direction"].lower() for t in truth if t["kind"] == "memcpy")
    rstest.check("%s_copy_directions" % mode, dt == dw, counter_diff(dt, dw))
    pt = sum(1 for g in ran if g["flags"] & FLAG_PTDS)
    rstest.check("%s_per_thread_flag" % mode, pt == on_ptsz,
                 "%d events flagged per-thread, %d operations on the per-thread stream" % (pt, on_ptsz))

    # Every wait, by kind.
    st = collections.Counter(s["kind"] for s in syncs if s["kind"] in ("stream", "event", "context", "memcpy"))
    sw = collections.Counter(stream=prog["sync_stream"], event=prog["sync_event"], context=prog["sync_context"],
                             memcpy=prog["sync_copy"])
    rstest.check("%s_waits" % mode, st == sw, counter_diff(st, sw))


def main():
    datas = sorted(glob.glob(os.path.join(DATA, "cudart-*-lookups.txt")))
    for path in (REPLAY, os.path.join(SIM, "libcuda.so.1"), os.path.join(LOGCUDA, "libcuda.so.1")):
        if not os.path.exists(path):
            rstest.check("replay_built", False, "%s not built (make test-build)" % path)
            rstest.finish()
    if not rstest.check("recorded_list", datas, "no tests/data/cudart-*-lookups.txt"):
        rstest.finish()
    tmp = rstest.tempdir("replay")
    try:
        for data in datas:
            check_replays_list(data, tmp, False)
            check_replays_list(data, tmp, True)
            release = os.path.basename(data)[len("cudart-"):-len("-lookups.txt")]
            check_mode("procaddr" if len(datas) == 1 else "procaddr" + release, ["--procaddr", data], tmp)
        check_mode("dlsym", ["--dlsym"], tmp)
    finally:
        rstest.cleanup(tmp)
    rstest.finish()


if __name__ == "__main__":
    main()
