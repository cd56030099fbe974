#!/usr/bin/env python3
"""A rank SIGTERMed while its AllReduce waits for a late peer dies at once,
with its trace complete.

Two simtrain ranks; rank 1 stalls 12 s before step 2's collective, and rank
0 gets SIGTERM while its AllReduce waits for it. Its GPU work can never end
then; the agent's last flush used to wait 2 s for GPU times that could not
come (calling the driver from its writer meanwhile, while the signal's
handler held a thread of the program, which may be inside the driver), so a
rank asked to stop lived 2.0 s longer (4 of 4 runs). Now: rank 0 is gone
within 1 s of the signal (the flush itself takes milliseconds), killed by
SIGTERM as without the agent, and both ranks' traces have their end mark
with rank 0's collectives recorded (without GPU times for the unfinished
one)."""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import BUILD, RINGSIDE, check, children, finish, run, skip, tempdir  # noqa: E402

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")


def alive(pid):
    """Running, not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    if not os.path.exists(os.path.join(capture.SIM, "libnccl.so.2")):
        skip("term wait", "build/sim is not built")
        finish()
    work = tempdir("agent-term-wait")
    out, tdir = os.path.join(work, "out"), os.path.join(work, "truth")
    os.makedirs(out)
    os.makedirs(tdir)
    env = capture.sim_env(out, tdir)
    job = subprocess.Popen([LAUNCH, "-n", "2", "--", TRAIN, "--steps", "6", "--layers", "2", "--stall", "1:2:12"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # rank 0 waits in step 2's AllReduce once it has written the truth
    # lines of steps 0 and 1's work: give it the time those take
    deadline = time.monotonic() + 30
    ranks = []
    while len(ranks) < 2 and time.monotonic() < deadline:
        ranks = children(job.pid)
        time.sleep(0.05)
    if not check("two ranks started", len(ranks) == 2, str(ranks)):
        job.kill()
        finish()
    time.sleep(2.5)
    rank0 = ranks[0]
    os.kill(rank0, signal.SIGTERM)
    t0 = time.monotonic()
    while alive(rank0) and time.monotonic() - t0 < 10:
        time.sleep(0.01)
    took = time.monotonic() - t0
    _, err = job.communicate(timeout=120)
    err = err.decode(errors="replace")
    check("rank 0 gone %.3f s after SIGTERM (within 1 s; the old last flush waited 2 s)" % took, took < 1.0,
          err[-300:])
    # simlaunch exits with the worst status of its ranks, 128 + n for signal n
    check("rank 0 died of SIGTERM, as without the agent (the launcher's status 143)", job.returncode == 143,
          "launcher status %s: %s" % (job.returncode, err[-300:]))
    js = os.path.join(work, "report.json")
    p = run([RINGSIDE, "report", out, "-o", os.path.join(work, "report"), "--json", js, "-q"])
    procs = []
    if p.returncode == 0:
        with open(js) as f:
            procs = json.load(f)["processes"]
    by_pid = {q["pid"]: q for q in procs}
    r0 = by_pid.get(rank0, {})
    check("both ranks' traces have their end mark",
          len(procs) == 2 and all(q["trace"]["complete"] for q in procs),
          str([(q["pid"], q["trace"]) for q in procs]) + p.stderr.decode(errors="replace")[-300:])
    recs, _, _ = rstest.dump(r0["trace"]["file"]) if r0 else ([], 0, "")
    colls = [(r["seq"], r["gpu_end_ns"] > 0) for r in recs if r.get("type") == "coll"]
    # two layers: two AllReduces a step; steps 0 and 1 done, step 2's two
    # enqueued and waiting for rank 1
    check("rank 0's trace: its 6 AllReduces, the 4 done with GPU times, step 2's 2 without",
          colls == [(i, i < 4) for i in range(6)], str(colls))
    finish()


if __name__ == "__main__":
    main()
