#!/usr/bin/env python3
"""One run per report with Debian's real torchrun (python3-torch 1.13), the
agent in LD_PRELOAD in front of it as a user types it, and no --rdzv_id, so
that torchrun gives its ranks the run id "none". The truth is what the test
started and what the ranks themselves saw (their pid, parent, RANK and
TORCHELASTIC_RUN_ID, written to a file of their own):
- each run's two ranks and torchrun's own trace in one folder, the two runs
  in two folders, and one "ringside:" line per run naming that folder;
- `ringside report` on each folder: the run's two ranks; on the folder of
  both: the newest run alone, the other named; on both runs' files copied
  into one folder: exit status 1 and one line naming both runs;
- torchrun under a job an outer process named (a traced driver script: its
  RINGSIDE_JOB and RINGSIDE_JOB_PID): the ranks still in a folder of their
  own, named after torchrun (its pid), not in the driver's;
- torchrun --standalone (a run id it makes up) with RINGSIDE_JOB set by the
  user: torchrun's trace and both ranks' in that folder, and its report
  names the two ranks."""
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import (RINGSIDE, check, cleanup, finish, report_of, run, skip, tempdir, trace_files,  # noqa: E402
                    traced_env)

TORCH_PY = "/usr/bin/python3"   # Debian's torch is for Debian's interpreter
TORCHRUN = "/usr/bin/torchrun"

RANK = """
import os, sys
with open(os.path.join(sys.argv[1], "rank-%d.info" % os.getpid()), "w") as f:
    f.write("%s %s %d\\n" % (os.environ["RANK"], os.environ["TORCHELASTIC_RUN_ID"], os.getppid()))
with open(os.path.join(sys.argv[1], "data-%s" % os.environ["RANK"]), "wb") as f:
    f.write(b"x" * 100000)
"""


def have_torchrun():
    try:
        return os.path.exists(TORCHRUN) and \
            run([TORCH_PY, "-c", "import torch.distributed.run"], cwd="/", timeout=120).returncode == 0
    except OSError:
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(work, out, name, standalone=False, **extra):
    """One torchrun of two ranks without --rdzv_id (standalone: with
    --standalone): (result, torchrun's pid, {rank pid: (rank, run id, parent
    pid)}, trace files new after it)."""
    before = set(trace_files(out))
    info = os.path.join(work, name)
    os.mkdir(info)
    script = os.path.join(work, "rank.py")
    with open(script, "w") as f:
        f.write(RANK)
    env = traced_env(out, **extra)
    for k in ("MASTER_PORT", "RINGSIDE_METRICS_HZ"):
        env.pop(k, None)
    # Debian's torchrun 1.13 on Python 3.11 fails without -r/-t (test_torch.py)
    where = ["--standalone"] if standalone else ["--master_addr", "127.0.0.1", "--master_port", str(free_port())]
    cmd = [TORCHRUN, "--nproc_per_node", "2"] + where + [
        "-r", "1", "-t", "1", "--log_dir", os.path.join(work, "logs-" + name), script, info]
    p = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    so, se = p.communicate(timeout=300)
    ranks = {}
    for fn in os.listdir(info):
        if fn.startswith("rank-"):
            with open(os.path.join(info, fn)) as f:
                r, run_id, ppid = f.read().split()
            ranks[int(fn.split("-")[1].split(".")[0])] = (int(r), run_id, int(ppid))
    new = sorted(set(trace_files(out)) - before)
    return subprocess.CompletedProcess(cmd, p.returncode, so, se), p.pid, ranks, new


def pid_of(trace):
    return int(os.path.basename(trace).split(".")[2])


def main():
    if not have_torchrun():
        skip("torchrun runs", "Debian's torchrun (%s, python3-torch) is not installed" % TORCHRUN)
        finish()
    work = tempdir("torch-runs")
    out = os.path.join(work, "trace")
    try:
        runs = []
        for i in range(2):
            res, launcher, ranks, new = torchrun(work, out, "run%d" % i)
            if not check("run %d: torchrun and both ranks exit 0" % i, res.returncode == 0 and len(ranks) == 2,
                         res.stderr.decode(errors="replace")[-600:]):
                return
            runs.append((res, launcher, ranks, new))
        folders = []
        for i, (res, launcher, ranks, new) in enumerate(runs):
            check("run %d: the ranks saw torchrun's placeholder run id and torchrun as their parent" % i,
                  all(v[1] == "none" and v[2] == launcher for v in ranks.values()), str(ranks))
            by_pid = {pid_of(t): t for t in new}
            dirs = {os.path.dirname(by_pid[p]) for p in list(ranks) + [launcher] if p in by_pid}
            check("run %d: both ranks' traces and torchrun's own in one folder" % i,
                  all(p in by_pid for p in list(ranks) + [launcher]) and len(dirs) == 1,
                  "pids %s, traces %s" % (sorted(ranks) + [launcher], new))
            folder = dirs.pop() if len(dirs) == 1 else ""
            folders.append(folder)
            lines = [l for l in res.stderr.decode(errors="replace").splitlines() if "ringside:" in l]
            check("run %d: one line says where its traces went" % i,
                  len(lines) == 1 and folder and lines[0].endswith(folder), str(lines))
            rc, err, procs = report_of(folder, work, "report%d" % i)
            got = procs and sorted((pr["rank"], pr["pid"]) for pr in procs if pr["rank"] is not None)
            want = sorted((v[0], pid) for pid, v in ranks.items())
            check("run %d: ringside report on its folder: its two ranks" % i, rc == 0 and got == want,
                  "status %d: %s against %s: %s" % (rc, got, want, err))
        check("two runs, two folders", len(set(folders)) == 2, str(folders))
        names = [os.path.basename(f) for f in folders]

        rc, err, procs = report_of(out, work, "parent")
        got = procs and sorted(pr["pid"] for pr in procs)
        want = sorted(pid_of(t) for t in runs[1][3])
        check("folder of both job folders: the newest run alone", rc == 0 and got == want,
              "status %d: %s against %s: %s" % (rc, got, want, err))
        check("folder of both job folders: the other run named", any(names[0] in l for l in err), str(err))

        mixed = os.path.join(work, "mixed")
        os.mkdir(mixed)
        for t in runs[0][3] + runs[1][3]:
            shutil.copy(t, mixed)
        rc, err, _ = report_of(mixed, work, "mixed")
        check("both runs' files in one folder: refused with one line naming both runs",
              rc == 1 and len(err) == 1 and all(n in err[0] for n in names), "status %d: %s" % (rc, err))

        res, launcher, ranks, new = torchrun(work, out, "driven", RINGSIDE_JOB="driver",
                                             RINGSIDE_JOB_PID=os.getpid())
        if check("under a driver's job: torchrun and both ranks exit 0", res.returncode == 0 and len(ranks) == 2,
                 res.stderr.decode(errors="replace")[-600:]):
            by_pid = {pid_of(t): os.path.basename(os.path.dirname(t)) for t in new}
            rank_dirs = {by_pid.get(p) for p in ranks}
            check("under a driver's job: torchrun's trace in the driver's folder, its ranks' in one named "
                  "after torchrun (pid %d)" % launcher,
                  by_pid.get(launcher) == "driver" and len(rank_dirs) == 1 and
                  str(rank_dirs.pop()).endswith("-%d" % launcher), str(by_pid))

        res, launcher, ranks, new = torchrun(work, out, "standalone", standalone=True, RINGSIDE_JOB="named")
        if check("--standalone under RINGSIDE_JOB: torchrun and both ranks exit 0",
                 res.returncode == 0 and len(ranks) == 2, res.stderr.decode(errors="replace")[-600:]):
            by_pid = {pid_of(t): os.path.basename(os.path.dirname(t)) for t in new}
            made_up = {v[1] for v in ranks.values()}
            check("--standalone under RINGSIDE_JOB: the ranks saw a run id torchrun made up (%s)" % made_up,
                  len(made_up) == 1 and made_up != {"none"} and made_up != {"named"}, str(ranks))
            check("--standalone under RINGSIDE_JOB: torchrun's trace and both ranks' in the user's folder",
                  all(by_pid.get(p) == "named" for p in list(ranks) + [launcher]), str(by_pid))
            rc, err, procs = report_of(os.path.join(out, "named"), work, "named")
            got = procs and sorted((pr["rank"], pr["pid"]) for pr in procs if pr["rank"] is not None)
            want = sorted((v[0], pid) for pid, v in ranks.items())
            check("--standalone under RINGSIDE_JOB: its report names the two ranks", rc == 0 and got == want,
                  "status %d: %s against %s: %s" % (rc, got, want, err))
    finally:
        cleanup(work)
    finish()


main()
