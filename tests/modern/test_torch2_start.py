#!/usr/bin/env python3
"""What the agent costs PyTorch 2.x (Debian's, Python 3.14) where it starts
and where it runs, in its chroot (docs/testing.md), and that it samples
there: a guard against the agent holding a process up (`import torch` once
took 40 s with it, eight 5-second waits of a hook for the writer).

- `python3 -c 'import torch'`, 5 runs with the agent and 5 without, in
  alternating order: the median with it within 1.2x of the median without;
  no notice, at RINGSIDE_LOG=2, that a flush or a start went unanswered;
- the 2-rank DDP job of tests/modern/torch2_job.py, 20 steps of batches
  of 64, 3 runs each way, alternating: the median job time within 1.2x; on
  both ranks no notice that CPU samples are off or that a flush went
  unanswered, and the CPU flame graph of each rank (CPU samples alone,
  --kind cpu; the chroot's symbols, --sysroot) names
  torch/nn/modules/linear.py:Linear.forward.

The ratios go to stderr, for the run's log."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch2env  # noqa: E402
from rstest import RINGSIDE, check, cleanup, finish, run  # noqa: E402

RATIO = 1.2
UNANSWERED = ("did not answer", "did not finish", "did not stop")


def within(what, times, runs):
    """Checks the median with the agent against the median without, and
    prints the ratio on stderr."""
    plain, traced = statistics.median(times["plain"]), statistics.median(times["agent"])
    ratio = traced / plain
    print("test_torch2_start: %s %.2f s with the agent, %.2f s without: %.2fx" % (what, traced, plain, ratio),
          file=sys.stderr)
    check("%s within %.1fx of without the agent (medians of %d)" % (what, RATIO, runs), ratio <= RATIO,
          "%.2fx: %s with, %s without" % (ratio, ["%.2f" % t for t in times["agent"]],
                                         ["%.2f" % t for t in times["plain"]]))


def quiet(err):
    """The agent's notices in err that say it held the program up."""
    return [l for l in err.splitlines() if l.startswith("ringside:") and any(u in l for u in UNANSWERED)]


def import_torch(chroot, work):
    agent = os.path.join(work, "libagent.so")
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
    traced = dict(base, LD_PRELOAD=agent, RINGSIDE_OUT=os.path.join(work, "trace-import"), RINGSIDE_LOG="2")
    times = {"plain": [], "agent": []}
    held = []
    for i in range(5):
        for mode in (("plain", "agent") if i % 2 == 0 else ("agent", "plain")):
            t0 = time.monotonic()
            p = run(torch2env.in_chroot(chroot, ["python3", "-c", "import torch"], base if mode == "plain" else traced),
                    timeout=300)
            times[mode].append(time.monotonic() - t0)
            if not check("import torch (%s, run %d) exits 0" % (mode, i + 1), p.returncode == 0,
                         p.stderr.decode(errors="replace")[-500:]):
                return
            if mode == "agent":
                held += quiet(p.stderr.decode(errors="replace"))
    within("import torch", times, 5)
    check("import torch: no flush or start left unanswered", not held, "; ".join(held[:4]))


def ddp(chroot, work, job):
    # batches of 64: Linear.forward holds about 200 ms of CPU a rank (20
    # samples at 99 Hz); at the job's default 16 it held 1 to 4, and a rank
    # with none of them failed the check below one run in three
    args = [os.path.join(work, "ck"), "--steps", "20", "--save", "none", "--batch", "64"]
    os.makedirs(args[0], exist_ok=True)
    times = {"plain": [], "agent": []}
    last = None
    for i in range(3):
        for mode in (("plain", "agent") if i % 2 == 0 else ("agent", "plain")):
            out = os.path.join(work, "trace-ddp-%d" % i)
            env = {} if mode == "plain" else {"LD_PRELOAD": os.path.join(work, "libagent.so"), "RINGSIDE_OUT": out,
                                              "RINGSIDE_JOB": "ddp-start-%d" % i, "RINGSIDE_LOG": "2"}
            t0 = time.monotonic()
            ranks = torch2env.run_ranks(chroot, job, args, env)
            times[mode].append(time.monotonic() - t0)
            if not check("DDP job (%s, run %d) exits 0 on both ranks" % (mode, i + 1),
                         [r[0] for r in ranks] == [0, 0], ranks[0][2][-1000:]):
                return
            if mode == "agent":
                last = (out, ranks)
    within("the 20-step DDP job", times, 3)
    out, ranks = last
    for r, (_, _, err) in enumerate(ranks):
        lines = [l for l in err.splitlines() if l.startswith("ringside:")]
        check("rank %d: CPU samples stay on" % r, not any("CPU samples are off" in l for l in lines),
              "; ".join(lines[:6]))
        held = quiet(err)
        check("rank %d: no flush left unanswered" % r, not held, "; ".join(held[:4]))
        p = run([RINGSIDE, "flame", out, "--kind", "cpu", "--rank", str(r), "--sysroot", chroot, "-o", "-"])
        frames = set()
        for line in p.stdout.decode(errors="replace").splitlines():
            frames.update(line.rsplit(" ", 1)[0].split(";"))
        check("rank %d: CPU samples name Linear.forward" % r,
              p.returncode == 0 and any(f.split(":")[:2] == ["torch/nn/modules/linear.py", "Linear.forward"]
                                        for f in frames),
              "%d frames: %s" % (len(frames), p.stderr.decode(errors="replace")[-300:]))


def main():
    chroot, work, job = torch2env.start("test_torch2_start")
    try:
        import_torch(chroot, work)
        ddp(chroot, work, job)
    finally:
        cleanup(work)
    finish()


if __name__ == "__main__":
    main()
