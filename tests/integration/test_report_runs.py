#!/usr/bin/env python3
"""One run per report, with simlaunch and simtrain (no torch needed). The
truth is how this test started the runs: which launcher pid, in which order,
at what time on its own clock, and which trace files appeared after each.
- simlaunch run twice with torchrun's placeholder run id
  (TORCHELASTIC_RUN_ID=none), the ranks alone under the agent: each run's
  ranks in one folder named host-YYYYMMDD-HHMMSS-<launcher pid>, the time
  within the run's own start, the two runs in two folders, and one
  "ringside:" line per run saying where its traces went;
- `ringside report` on the folder of both job folders reports the newest run
  only and names the other; on the two runs' files copied into one folder it
  exits 1 with one line naming both job ids; on the two job folders named
  one by one it exits 1, writing nothing, with one line naming each run and
  how to pick one; on one run's files split into two folders (two nodes),
  named one by one, it reports both ranks;
- two runs under one run id (a launcher's fixed id, as old agents filed every
  torchrun run under `none`): refused, naming rank 0's two files;
- two processes 1.5 s apart under one RINGSIDE_JOB: refused, naming both
  files (their lifetimes are more than 1 s apart);
- two ranks started by hand at the same time, each in a job folder of its
  own: one run, reported whole from their parent folder;
- a rank started through a wrapper that reads a file and execs the program:
  one file per image, one run, the rank the program's."""
import calendar
import json
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import (AGENT, BUILD, PROG, PYTHON, RINGSIDE, check, cleanup, finish, report_of, run,  # noqa: E402
                    tempdir, trace_files, traced_env)

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
RANK_IO = os.path.join(PROG, "rank_io")
HOST = socket.gethostname().split(".")[0]


def sim_env(out, work, run_id):
    env = traced_env(out, LD_LIBRARY_PATH=SIM, SIMNCCL_TIMEOUT_S="30", AGENT_SO=AGENT)
    # simlaunch itself untraced: the ranks' job comes from their parent alone
    del env["LD_PRELOAD"]
    env.pop("MASTER_PORT", None)
    if run_id is not None:
        env["TORCHELASTIC_RUN_ID"] = run_id
    return env


def sim_run(out, work, run_id):
    """simlaunch -n 2 simtrain, the ranks traced; (result, launcher pid,
    start and end on this test's clock, trace files new after it)."""
    before = set(trace_files(out))
    cmd = [LAUNCH, "-n", "2", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", TRAIN,
           "--steps", "4", "--ckpt-dir", work]
    t0 = time.time()
    p = subprocess.Popen(cmd, env=sim_env(out, work, run_id), cwd=work, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    so, se = p.communicate(timeout=180)
    t1 = time.time()
    new = sorted(set(trace_files(out)) - before)
    return subprocess.CompletedProcess(cmd, p.returncode, so, se), p.pid, t0, t1, new


def two_runs(out, work, run_id, label):
    """sim_run twice under run_id; their results, or None when one failed."""
    runs = []
    for i in range(2):
        res, pid, t0, t1, new = sim_run(out, work, run_id)
        if not check("%s %d: simlaunch and simtrain exit 0" % (label, i), res.returncode == 0,
                     res.stderr.decode(errors="replace")[-500:]):
            return None
        runs.append((res, pid, t0, t1, new))
    return runs


def placeholder_runs(work):
    out = os.path.join(work, "trace")
    runs = two_runs(out, work, "none", "placeholder run")
    if not runs:
        return
    folders = []
    for i, (res, pid, t0, t1, new) in enumerate(runs):
        dirs = {os.path.dirname(f) for f in new}
        ranks = [f for f in new if os.path.basename(f).startswith("rank-")]
        check("placeholder run %d: its two ranks' files in one folder" % i,
              len(dirs) == 1 and len(ranks) == 2, str(new))
        name = os.path.basename(dirs.pop()) if len(dirs) == 1 else ""
        folders.append(name)
        # host-YYYYMMDD-HHMMSS-pid (UTC): the launcher's pid, its start; /proc gives
        # the boot time in whole seconds, so the name may say up to 2 s early
        head, _, tail = name.rpartition("-")
        stamp = head[len(HOST) + 1:]
        try:
            started = calendar.timegm(time.strptime(stamp, "%Y%m%d-%H%M%S"))
        except ValueError:
            started = None
        check("placeholder run %d: folder named after simlaunch (host, start, pid %d)" % (i, pid),
              head.startswith(HOST + "-") and tail == str(pid) and started is not None and
              t0 - 2 <= started <= t1, "%s (run from %.0f to %.0f)" % (name, t0, t1))
        lines = [l for l in res.stderr.decode(errors="replace").splitlines() if l.startswith("ringside:")]
        check("placeholder run %d: one line says where the traces went" % i,
              len(lines) == 1 and lines[0].endswith(os.path.join(out, name)), str(lines))
    check("placeholder runs: two runs, two folders", len(set(folders)) == 2, str(folders))

    rc, err, procs = report_of(out, work, "parent")
    files = procs and sorted(pr["trace"]["file"] for pr in procs)
    second = sorted(f for f in runs[1][4])
    check("folder of job folders: the newest run reported, and it alone", rc == 0 and files == second,
          "status %d, %s against %s: %s" % (rc, files, second, err))
    check("folder of job folders: the other run named on one line",
          sum(folders[0] in l for l in err) == 1 and any("not reported" in l and folders[0] in l for l in err),
          str(err))

    mixed = os.path.join(work, "mixed")
    os.mkdir(mixed)
    for f in runs[0][4] + runs[1][4]:
        shutil.copy(f, mixed)
    rc, err, _ = report_of(mixed, work, "mixed")
    check("files of two runs in one folder: refused with one line naming both runs",
          rc == 1 and len(err) == 1 and all(name in err[0] for name in folders), "status %d: %s" % (rc, err))

    rc, err, _ = report_of([os.path.join(out, f) for f in folders], work, "named")
    check("two runs' folders named: refused with one line naming each run and how to pick one, nothing written",
          rc == 1 and len(err) == 1 and all(name in err[0] for name in folders) and "give the folders of one run"
          in err[0] and not os.path.exists(os.path.join(work, "named")), "status %d: %s" % (rc, err))
    nodes = [os.path.join(work, "node%d" % k) for k in (0, 1)]
    ranks = sorted(f for f in runs[1][4] if os.path.basename(f).startswith("rank-"))
    for node, f in zip(nodes, ranks):
        os.mkdir(node)
        shutil.copy(f, node)
    rc, err, procs = report_of(nodes, work, "nodes")
    files = procs and sorted(os.path.basename(pr["trace"]["file"]) for pr in procs)
    check("one run's files in two folders, named one by one: one report of both ranks",
          rc == 0 and not err and files == sorted(os.path.basename(f) for f in ranks),
          "status %d, %s: %s" % (rc, files, err))


def same_id_runs(work):
    out = os.path.join(work, "trace-same")
    runs = two_runs(out, work, "same", "one run id twice, run")
    if not runs:
        return
    runs = [r[4] for r in runs]
    check("one run id twice: both runs in its folder", {os.path.dirname(f) for f in runs[0] + runs[1]} ==
          {os.path.join(out, "same")}, str(runs))
    rank0 = [[os.path.basename(f) for f in new if os.path.basename(f).startswith("rank-0.")] for new in runs]
    rc, err, _ = report_of(os.path.join(out, "same"), work, "same")
    check("one run id twice: refused, naming rank 0's file of each run",
          rc == 1 and len(err) == 1 and all(len(r) == 1 and r[0] in err[0] for r in rank0),
          "status %d: %s (rank 0: %s)" % (rc, err, rank0))


def one_after_the_other(work):
    out = os.path.join(work, "trace-seq")
    pids = []
    for i in range(2):
        # the second starts 1.5 s after the first ended: more than the 1 s
        # gap that parts two runs in one folder (reporter/load/runs.h)
        if i:
            time.sleep(1.5)
        env = traced_env(out, RINGSIDE_JOB="seq")
        p = run([RANK_IO, work, "1000", "RANK"], env=env, cwd=work, timeout=60)
        line = p.stdout.decode(errors="replace").split()
        if not check("one job, two processes in turn, run %d: exit 0" % i, p.returncode == 0 and line,
                     p.stderr.decode(errors="replace")):
            return
        pids.append(line[0].split("=")[1])
    rc, err, _ = report_of(os.path.join(out, "seq"), work, "seq")
    check("one job, two processes in turn: refused, naming both",
          rc == 1 and len(err) == 1 and all(".%s.trace.lz4" % pid in err[0] for pid in pids),
          "status %d: %s (pids %s)" % (rc, err, pids))


# Each rank waits until the other has started: their lifetimes overlap.
TOGETHER = """
import os, sys, time
mine, other = sys.argv[1], sys.argv[2]
open(mine, "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(other) and time.monotonic() < deadline:
    time.sleep(0.01)
"""


def by_hand(work):
    out = os.path.join(work, "trace-hand")
    marks = [os.path.join(work, "mark-%d" % r) for r in (0, 1)]
    procs = []
    for r in (0, 1):
        env = traced_env(out, RINGSIDE_RANK=r, RINGSIDE_WORLD_SIZE=2)
        procs.append(subprocess.Popen([PYTHON, "-c", TOGETHER, marks[r], marks[1 - r]], env=env, cwd=work))
    status = [p.wait(timeout=120) for p in procs]
    dirs = {os.path.dirname(f) for f in trace_files(out)}
    if not check("ranks by hand: both exit 0, each in a job folder of its own", status == [0, 0] and len(dirs) == 2,
                 "%s %s" % (status, dirs)):
        return
    rc, err, ps = report_of(out, work, "hand")
    got = ps and sorted((pr["rank"], pr["pid"]) for pr in ps if pr["rank"] is not None)
    check("ranks by hand: one run, both ranks reported from the parent folder",
          rc == 0 and not err and got == [(0, procs[0].pid), (1, procs[1].pid)], "status %d, %s: %s" % (rc, got, err))


def through_a_wrapper(work):
    """A rank started through a wrapper that reads a file and execs the
    program (a pyenv shim, `sh -c 'cd ...; exec python ...'`): a file per
    image, both claiming rank 0; one run, rank 0 the program, the wrapper's
    image its child."""
    out = os.path.join(work, "trace-shim")
    env = traced_env(out, RINGSIDE_RANK=0, RINGSIDE_WORLD_SIZE=1)
    p = run(["sh", "-c", 'read x < /etc/hostname; exec "$0" "$@"', RANK_IO, work, "1000", "RANK"], env=env,
            cwd=work, timeout=60)
    files = trace_files(out)
    if not check("rank through a wrapper: exit 0, a file for each image", p.returncode == 0 and len(files) == 2,
                 "%d: %s %s" % (p.returncode, files, p.stderr.decode(errors="replace")[-300:])):
        return
    pid = int(p.stdout.decode(errors="replace").split()[0].split("=")[1])
    rc, err, ps = report_of(out, work, "shim")
    got = [(pr["rank"], pr["role"], pr["pid"]) for pr in ps or [] if pr["pid"] == pid]
    check("rank through a wrapper: one run, rank 0 the program, the wrapper's image its child",
          rc == 0 and not err and (0, "rank", pid) in got and
          any(pr["role"] == "child" and pr["pid"] == pid and pr["parent_rank"] == 0 for pr in ps or []),
          "status %d, %s: %s" % (rc, ps and [(pr["rank"], pr["role"], pr["pid"]) for pr in ps], err))


def main():
    work = tempdir("report-runs")
    try:
        placeholder_runs(work)
        same_id_runs(work)
        one_after_the_other(work)
        by_hand(work)
        through_a_wrapper(work)
    finally:
        cleanup(work)
    finish()


main()
