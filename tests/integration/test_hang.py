#!/usr/bin/env python3
"""A stuck job: simtrain --stall 1:5:600 on 4 ranks, rank 1
sleeping before step 5's first AllReduce while the others wait inside it,
the job killed with SIGTERM after 12 s as a scheduler's time limit would.
report.json's hang names it, held to what the job itself says:
- kind hang, missing rank 1 (the rank --stall names), waiting ranks 0, 2, 3,
  the AllReduce, step 5 (the truth: rank 0 finished the 20 AllReduces of
  steps 0 to 4);
- waited within 1 s of the truth: from rank 0's entry into the call (the
  simulator's truth: its launch of step 5's first backward kernel, just
  before; CLOCK_MONOTONIC) to the moment the test sent SIGTERM (its own
  clock, the same);
- rank 1's frames end in its sleep under sim_train_step, the waiting
  ranks' in their step's sync (a blocking CUDA call, as SIGTERM found them);
- the first finding is the hang, and the headline says the job hung at
  step 5; the terminal's summary leads with it; no slow step's cause is
  unknown (the last step found holds the hung step's start: cause hang).
The same job with RINGSIDE_HANG_S=3 (and RINGSIDE_FLUSH_MS=200), its ranks
killed with SIGKILL after 10 s (nothing of theirs runs at the kill: what
the watchdog wrote once the AllReduce had waited 3 s, and the flushes
since, are all there is): the same verdict. And with each rank's SIGTERM
sent to a thread other than its main one (tgkill; the kernel gives a
kill() to such a thread when the main one has a signal pending, as on a
loaded host): the same verdict, the waiting ranks' frames still their sync
(the agent hands the signal to the main thread).
Then, each killed with SIGTERM once stuck:
- --desync 2:5 (rank 2 calls step 5's first AllReduce with half the
  elements; the stand-in's NCCL never matches it, as NCCL does not): kind
  desync, rank 2's call named as differing, half the others' bytes, and
  both calls in the verdict's text;
- --crash 3:5 (rank 3 writes through a null pointer before step 5's first
  AllReduce; the process dies of SIGSEGV, as without the agent): kind
  crash, missing rank 3, SIGSEGV, its frames ending in sim_train_crash;
- --stall 1:5:600 --timeout-s 5 (the waiting ranks abort after 5 s, as
  PyTorch's watchdog does): the aborts recorded (SIGABRT on ranks 0, 2, 3),
  the verdict names the stalled rank 1, kind hang.
A generated job of 1,024 ranks (gen_job -H 700: rank 700 never enters the
last all-reduce): the verdict names rank 700 and the 1,023 others waiting.
A job that ran to its end has no hang."""
import ctypes
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import check  # noqa: E402

LAUNCH = os.path.join(rstest.BUILD, "simlaunch")
TRAIN = os.path.join(rstest.BUILD, "simtrain")
KILL_AFTER_S = 12


def rank_threads(pid):
    """The launcher pid's ranks' threads other than their main ones that
    may take a signal (the agent's block every one), {rank pid: [tid]}."""
    got = {}
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            ranks = [int(x) for x in f.read().split()]
    except OSError:
        return got
    for r in ranks:
        for t in os.listdir("/proc/%d/task" % r):
            try:
                with open("/proc/%d/task/%s/status" % (r, t)) as f:
                    blocked = int(f.read().split("SigBlk:")[1].split()[0], 16)
            except (OSError, IndexError, ValueError):
                continue
            if int(t) != r and not blocked & (1 << (signal.SIGTERM - 1)):
                got.setdefault(r, []).append(int(t))
    return got


def stuck_job(tmp, name, args, kill_after_s, must_live=True, sigkill=False, to_thread=False, **env_extra):
    """Runs simtrain on 4 ranks with args, kills it with SIGTERM after
    kill_after_s (sigkill: its ranks with SIGKILL, nothing of theirs runs;
    to_thread: each rank's SIGTERM sent to a thread other than its main
    one, as the kernel may deliver a kill() when the main thread has a
    signal pending); (trace folder, truth folder, the kill's
    CLOCK_MONOTONIC ns) or None. must_live: it must still be running when
    killed."""
    out, tdir = os.path.join(tmp, name, "out"), os.path.join(tmp, name, "truth")
    os.makedirs(out)
    os.makedirs(tdir)
    env = capture.sim_env(out, tdir)
    env["SIMNCCL_TIMEOUT_S"] = "600"    # NCCL waits as long as the job runs
    env.update({k: str(v) for k, v in env_extra.items()})
    p = subprocess.Popen([LAUNCH, "-n", "4", "--", TRAIN, "--steps", "40", "--layers", "4", "--ckpt-dir",
                          os.path.join(tmp, name)] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(kill_after_s)
    alive = p.poll() is None
    kill_ns = time.monotonic_ns()
    threads = rank_threads(p.pid) if to_thread else {}
    if to_thread:
        check(name + ": each rank has a thread besides its main one to take the signal",
              len(threads) == 4, str(threads))
        libc = ctypes.CDLL(None, use_errno=True)
        for r, tids in threads.items():
            libc.tgkill(r, tids[0], signal.SIGTERM)
    elif sigkill:
        try:
            with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
                ranks = [int(x) for x in f.read().split()]
        except OSError:
            ranks = []
        for pid in ranks:
            os.kill(pid, signal.SIGKILL)
    else:
        p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    if not check("%s: %s, %s after %g s ended it" % (name, "still running" if must_live else "ran",
                                                     "SIGKILL" if sigkill else "SIGTERM", kill_after_s),
                 (alive or not must_live) and p.returncode != 0,
                 "status %r: %s" % (p.returncode, err.decode(errors="replace")[-300:])):
        return None
    return out, tdir, kill_ns


def per_rank(h, rank):
    got = [r for r in h.get("per_rank", []) if r.get("rank") == rank]
    return got[0] if got else {}


def kinds(tmp):
    """--desync, --crash, --timeout-s: their verdicts."""
    got = stuck_job(tmp, "desync", ["--desync", "2:5"], 4)
    if got:
        h = rstest.report(got[0]).get("hang") or {}
        r2, r0 = per_rank(h, 2), per_rank(h, 0)
        check("desync: kind desync", h.get("kind") == "desync", json.dumps(h)[:300])
        check("desync: rank 2's call differs, half rank 0's bytes, the others' do not",
              r2.get("differs") is True and r0.get("differs") is False and r2.get("bytes", 0) * 2 == r0.get("bytes"),
              json.dumps(h.get("per_rank"))[:400])
        check("desync: the text names rank 2 and both calls",
              "rank 2 called AllReduce of 12.5 MiB" in h.get("text", "") and "AllReduce of 25.0 MiB" in h.get("text", ""),
              h.get("text", ""))
    got = stuck_job(tmp, "crash", ["--crash", "3:5"], 2, must_live=False)
    if got:
        rep = rstest.report(got[0])
        h = rep.get("hang") or {}
        r3 = per_rank(h, 3)
        frames = r3.get("where", {}).get("frames", [])
        check("crash: kind crash, missing rank 3", h.get("kind") == "crash" and h.get("missing_ranks") == [3],
              json.dumps(h)[:300])
        check("crash: rank 3 died of SIGSEGV, its faulting frame sim_train_crash",
              r3.get("signal") == "SIGSEGV" and frames[-1:] == ["sim_train_crash"], "%r %r" % (r3.get("signal"), frames))
        fs = rep.get("findings", [])
        check("crash: the first finding is the crash", bool(fs) and fs[0]["id"] == "rank_crashed",
              str([f["id"] for f in fs][:3]))
    got = stuck_job(tmp, "timeout", ["--stall", "1:5:600", "--timeout-s", "5"], 7)
    if got:
        h = rstest.report(got[0]).get("hang") or {}
        sigs = {r["rank"]: r.get("signal") for r in h.get("per_rank", [])}
        check("timeout: the aborts recorded (SIGABRT on ranks 0, 2, 3)",
              all(sigs.get(r) == "SIGABRT" for r in (0, 2, 3)), str(sigs))
        check("timeout: the verdict names the stalled rank 1, not the aborting ones, kind hang",
              h.get("kind") == "hang" and h.get("missing_ranks") == [1] and h.get("waiting_ranks") == [0, 2, 3],
              json.dumps(h)[:300])


def stall_checks(label, got, terminal=False):
    """The --stall 1:5:600 job's verdict (label the way it was killed)."""
    if not got:
        return
    out, tdir, kill_ns = got
    # the simulator's truth (its step lines are written at exit, which a
    # killed rank never reaches): rank 0's finished AllReduces, one a
    # layer, four a step; it entered step 5's first right after
    # launching that step's first backward kernel (layer 3's)
    ops = [t for t in capture.truth(tdir) if t.get("rank") == 0]
    colls = [t for t in ops if t["kind"] == "collective"]
    check(label + ": truth: rank 0 finished 20 AllReduces (4 a step: steps 0 to 4) and no more", len(colls) == 20,
          "%d" % len(colls))
    last = max((t["launch_ns"] for t in colls), default=0)
    entry = min((t["launch_ns"] for t in ops if t["kind"] == "kernel" and t["name"] == "bwd_gemm_l3" and
                 t["launch_ns"] > last), default=0)
    rep = rstest.report(out)
    h = rep.get("hang") or {}
    check(label + ": hang.kind is hang", h.get("kind") == "hang", json.dumps(h)[:300])
    check(label + ": missing rank 1", h.get("missing_ranks") == [1], str(h.get("missing_ranks")))
    check(label + ": waiting ranks 0, 2, 3", h.get("waiting_ranks") == [0, 2, 3], str(h.get("waiting_ranks")))
    check(label + ": the stuck call is an AllReduce", h.get("op") == "AllReduce", str(h.get("op")))
    check(label + ": at step 5", h.get("step") == 5, str(h.get("step")))
    truth_s = (kill_ns - entry) / 1e9
    check(label + ": waited %.2f s, the truth %.2f s (within 1 s)" % (h.get("waited_s", 0), truth_s),
          abs(h.get("waited_s", 0) - truth_s) <= 1.0, json.dumps(h)[:200])
    r1 = [r for r in h.get("per_rank", []) if r.get("rank") == 1]
    frames = r1[0]["where"]["frames"] if r1 else []
    check(label + ": rank 1's frames: its sleep under sim_train_step",
          "sim_train_step" in frames and frames[-1:] == ["[wait: sleep]"] and
          frames.index("sim_train_step") < len(frames) - 1, str(frames))
    if terminal:
        # SIGTERM found the waiting ranks in their step's sync (a blocking CUDA call)
        syncs = [r["where"]["frames"][-2:] for r in h.get("per_rank", []) if r.get("in_flight")]
        check(label + ": the waiting ranks were in their sync under sim_train_step as SIGTERM came",
              len(syncs) == 3 and all(f == ["sim_train_step", "[wait: cuda-sync]"] for f in syncs), str(syncs))
    slow = rep.get("steps", {}).get("slow", [])
    check(label + ": no slow step blamed on an unknown cause (the last, holding the hung step's start: hang)",
          all(x["cause"] != "unknown" for x in slow), str(slow))
    fs = rep.get("findings", [])
    check(label + ": the first finding is the hang, critical", bool(fs) and fs[0]["id"] == "job_hung" and
          fs[0]["severity"] == "critical", str([f["id"] for f in fs][:3]))
    check(label + ": the headline says the job hung at step 5", "hung" in rep.get("headline", "") and
          "step 5" in rep.get("headline", ""), rep.get("headline", ""))
    if terminal:
        tmp = os.path.dirname(os.path.dirname(out))
        p = rstest.run([rstest.RINGSIDE, "report", out, "-o", os.path.join(tmp, "rep2")])
        lines = p.stdout.decode(errors="replace").splitlines()
        check(label + ": the terminal's second line is the verdict", len(lines) > 1 and
              lines[1].startswith("  STUCK (hang)") and "rank 1 never entered AllReduce" in lines[1],
              "\n".join(lines[:3]))


def main():
    tmp = rstest.tempdir("hang")
    stall_checks("stall", stuck_job(tmp, "stall", ["--stall", "1:5:600"], KILL_AFTER_S), terminal=True)
    stall_checks("stall, SIGTERM to another thread", stuck_job(tmp, "stall-thread", ["--stall", "1:5:600"], KILL_AFTER_S,
                                                               to_thread=True), terminal=True)
    # the same job killed with SIGKILL once the watchdog fired (after 3 s)
    # (flushes every 200 ms: each file ends within that of the kill, as the truth's wait does)
    stall_checks("SIGKILL", stuck_job(tmp, "sigkill", ["--stall", "1:5:600"], 10, sigkill=True, RINGSIDE_HANG_S=3,
                                      RINGSIDE_FLUSH_MS=200))
    kinds(tmp)
    wide = os.path.join(tmp, "wide")
    p = rstest.run([os.path.join(rstest.BUILD, "gen_job"), "-n", "1024", "-e", "300", "-o", wide, "-H", "700"])
    if check("gen_job: 1,024 ranks, rank 700 missing", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        h = rstest.report(wide).get("hang") or {}
        check("1,024 ranks: missing rank 700, the 1,023 others waiting",
              h.get("kind") == "hang" and h.get("missing_ranks") == [700] and
              h.get("waiting_ranks") == [r for r in range(1024) if r != 700], json.dumps(h)[:300])
    # a job that ran to its end
    done = os.path.join(tmp, "done")
    os.makedirs(done)
    env = capture.sim_env(done, done)
    p = rstest.run([LAUNCH, "-n", "2", "--", TRAIN, "--steps", "8", "--layers", "2", "--ckpt-dir", done], env=env,
                   timeout=120)
    if check("a job without a stall runs", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        rep = rstest.report(done)
        check("it has no hang", "hang" not in rep and not any(f["id"] == "job_hung" for f in rep["findings"]),
              str(rep.get("hang"))[:200])
    rstest.cleanup(tmp)
    rstest.finish()


main()
