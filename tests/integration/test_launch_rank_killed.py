#!/usr/bin/env python3
"""A rank that dies: simlaunch -n 4 runs simtrain (checkpoints every 5 steps,
real files) under the agent, and rank 2 is killed with SIGKILL mid-run. The
simulated NCCL fails the survivors' next collective, so they exit on their
own: their traces end cleanly, with every checkpoint byte they wrote. The
killed rank's trace is read up to its last whole frame, reported as cut
short, not damaged, and holds every checkpoint it finished more than a
flush interval before the kill (RINGSIDE_FLUSH_MS). Truths: simlaunch's
exit status, the checkpoint files on disk."""
import os
import re
import signal
import subprocess
import time

from rstest import BUILD, check, cleanup, finish, report, report_problems, tempdir, trace_files, traced_env

VICTIM = 2
FLUSH_MS = 200
CKPT = re.compile(r"^ckpt-rank(\d+)-step(\d+)\.bin$")


def rank_pids(parent):
    """{RANK: pid} of parent's children, from their environment."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
            if b"RANK" in env:
                found[int(env[b"RANK"])] = int(pid)
        except (OSError, ValueError, IndexError):
            pass
    return found


def checkpoints(ck):
    """{rank: {step: path}} of the checkpoint files on disk."""
    got = {}
    for n in os.listdir(ck) if os.path.isdir(ck) else []:
        m = CKPT.match(n)
        if m:
            got.setdefault(int(m.group(1)), {})[int(m.group(2))] = os.path.join(ck, n)
    return got


def main():
    out, work = tempdir("trace-killed"), tempdir("killed")
    ck = os.path.join(work, "ck")
    env = traced_env(out, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), SIMNCCL_TIMEOUT_S=10,
                     RINGSIDE_FLUSH_MS=FLUSH_MS, TMPDIR=work)
    env.pop("MASTER_PORT", None)
    cmd = [os.path.join(BUILD, "simlaunch"), "-n", "4", "--", os.path.join(BUILD, "simtrain"), "--steps", "3000",
           "--layers", "2", "--fwd-us", "2000", "--bwd-us", "4000", "--bucket-mb", "1", "--ckpt-every", "5",
           "--ckpt-mb", "1", "--ckpt-dir", ck]
    p = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    whole, killed_at = [], None
    try:
        # Wait for the victim's third checkpoint to begin: the first two are whole.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and p.poll() is None:
            steps = checkpoints(ck).get(VICTIM, {})
            if len(steps) >= 3:
                break
            time.sleep(0.02)
        victim = rank_pids(p.pid).get(VICTIM)
        steps = checkpoints(ck).get(VICTIM, {})
        if check("rank %d running with checkpoints written" % VICTIM, victim and len(steps) >= 3 and p.poll() is None,
                 "pid %s, checkpoints %s, launcher status %s" % (victim, sorted(steps), p.poll())):
            whole = [steps[s] for s in sorted(steps)[:-1]]
            time.sleep(3 * FLUSH_MS / 1000)
            os.kill(victim, signal.SIGKILL)
            killed_at = time.monotonic()
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if killed_at is None:
        cleanup(out, work)
        finish()
    took = time.monotonic() - killed_at
    print("    rank %d killed after %d whole checkpoints; the launcher ended %.2f s later" % (VICTIM, len(whole), took))
    check("simlaunch: the rank died of SIGKILL", p.returncode == 128 + signal.SIGKILL,
          "status %d: %s" % (p.returncode, stderr.decode(errors="replace")[-500:]))
    check("survivors exit soon after", took < 20, "%.1f s after the kill" % took)

    files = trace_files(out)
    check("four rank files, one folder", len(files) == 4 and len({os.path.dirname(f) for f in files}) == 1 and
          all(os.path.basename(f).startswith("rank-") for f in files), str(files))
    rep = report(out)
    by_rank = {pr["rank"]: pr for pr in rep["processes"]}
    # a process without a rank (None) is one too many, not a crash here
    if not check("report has ranks 0..3", len(rep["processes"]) == 4 and set(by_rank) == {0, 1, 2, 3},
                 str([(pr["pid"], pr["rank"]) for pr in rep["processes"]])):
        cleanup(out, work)
        finish()

    survivors = [r for r in range(4) if r != VICTIM]
    check("survivors' traces end cleanly", all(by_rank[r]["trace"]["complete"] and not by_rank[r]["trace"]["cut_short"]
                                              and not by_rank[r]["trace"]["errors"] for r in survivors),
          str({r: by_rank[r]["trace"] for r in survivors}))
    vt = by_rank[VICTIM]["trace"]
    check("killed rank: cut short, not damaged", not vt["complete"] and vt["cut_short"] and not vt["errors"]
          and vt["chunks"] >= 1 and vt["recorded"] > 0 and vt["unread_bytes"] <= vt["bytes"], str(vt))

    on_disk = checkpoints(ck)
    problems = []
    for r in survivors:
        got = {f["path"]: f["write_bytes"] for f in by_rank[r]["io"]["files"] if CKPT.match(os.path.basename(f["path"]))}
        want = {path: os.path.getsize(path) for path in on_disk.get(r, {}).values()}
        if got != want or not want:
            problems.append("rank %d: recorded %s; on disk %s" % (r, sorted(got.items()), sorted(want.items())))
    report_problems("survivors: checkpoint bytes equal the files", problems)

    got = {f["path"]: f["write_bytes"] for f in by_rank[VICTIM]["io"]["files"]}
    problems = ["%s: recorded %s of %d" % (path, got.get(path), os.path.getsize(path))
                for path in whole if got.get(path) != os.path.getsize(path)]
    problems += ["%s: recorded %d, more than the file's %d" % (path, n, os.path.getsize(path))
                 for path, n in got.items() if CKPT.match(os.path.basename(path)) and n > os.path.getsize(path)]
    report_problems("killed rank: checkpoints finished before the last flush are whole", problems)
    cleanup(out, work)
    finish()


main()
