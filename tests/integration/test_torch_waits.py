#!/usr/bin/env python3
"""Off-CPU time on a real framework (Debian's python3-torch) and on real
CPython interpreters, against the programs' own clocks
(tests/programs/torch/waits.py):

- a loop over a DataLoader with one worker where it needs three: the wait
  flame graph's time under torch/utils/data/dataloader.py in the loop's
  process, and report.json's wait_causes.dataloader_s, within 15% of the
  time the loop measured around iter() and next(); the data_loading
  finding fires. With eight workers it does not;
- a 2-rank gloo DDP job whose rank 1 spins in slow_down(): rank 0's waits
  under c10d/gloo frames (rendezvous left out) in its wait flame graph and
  its wait_causes.collective_s within 15% of the time rank 1 spent there
  (its wall time: on a busy machine more than the CPU time it spun); the
  cpu_collective_wait finding names rank 1;
- pure Python threads fighting for the GIL, under Debian's python3 and each
  CPython 3.10-3.13 found: gil_contention fires, and the GIL waits are at
  least half the wall time the threads could not run (threads x wall - CPU:
  that also holds the time a thread was woken and not yet scheduled, long
  on a busy machine, and switch waits shorter than RINGSIDE_WAIT_US); one thread
  alone: no GIL wait and no finding;
- report.json's waits, threads and the page's off-CPU section are there."""
import glob
import json
import os
import socket
import subprocess

from rstest import RINGSIDE, ROOT, check, cleanup, finish, run, skip, tempdir, traced_env

TORCH_PY = "/usr/bin/python3"   # Debian's torch is for Debian's interpreter
SCRIPT = os.path.join(ROOT, "tests", "programs", "torch", "waits.py")
TOL = 0.15
SLOW = 0.03


def have_torch():
    try:
        return run([TORCH_PY, "-c", "import torch"], timeout=120).returncode == 0
    except OSError:
        return False


def program_output(p):
    lines = [l for l in p.stdout.decode().splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def report(label, job, page=False):
    rep_dir = job + "-report"
    r = run([RINGSIDE, "report", job, "-o", rep_dir, "-q"])
    if not check(label + ": ringside report", r.returncode == 0, r.stderr.decode()[-300:]):
        return None, rep_dir
    with open(os.path.join(rep_dir, "report.json")) as f:
        return json.load(f), rep_dir


def folded(job, rank=None):
    """The wait flame graph as (frames, ns) pairs, from `ringside flame`."""
    out = job + "-wait.folded"
    cmd = [RINGSIDE, "flame", job, "--kind", "wait", "-o", out]
    if rank is not None:
        cmd += ["--rank", str(rank)]
    if run(cmd).returncode != 0:
        return []
    rows = []
    with open(out) as f:
        for line in f:
            stack, _, w = line.rstrip("\n").rpartition(" ")
            rows.append((stack.split(";"), int(w)))
    return rows


def finding_ids(rep):
    return [f["id"] for f in rep["findings"]]


def within(got, want, tol=TOL):
    return want > 0 and abs(got - want) <= tol * want


def loader_case(work, workers, starved):
    label = "DataLoader with %d worker%s" % (workers, "" if workers == 1 else "s")
    out = os.path.join(work, "loader-%d" % workers)
    p = run([TORCH_PY, SCRIPT, "loader", str(workers)], env=traced_env(out), timeout=300)
    got = program_output(p)
    if not check(label + ": runs", p.returncode == 0 and got, p.stderr.decode()[-400:]):
        return
    job = glob.glob(os.path.join(out, "*"))[0]
    rep, rep_dir = report(label, job, page=starved)
    if not rep:
        return
    mine = [pr for pr in rep["processes"] if pr["ppid"] == os.getpid()]
    if not check(label + ": the loop's process is in the report", len(mine) == 1, str(len(mine))):
        return
    loop = mine[0]
    if starved:
        # The flame graph itself: the loop's process's waits under the
        # DataLoader's frames (a worker's own frames are its, not the loop's).
        single = os.path.join(work, "loader-one")
        os.makedirs(single)
        for tf in glob.glob(os.path.join(job, "*.%d.trace.lz4" % loop["pid"])):
            os.link(tf, os.path.join(single, os.path.basename(tf)))
        under = sum(w for st, w in folded(single) if any(s.startswith("torch/utils/data/dataloader.py:") for s in st)
                    and not any(s.startswith("torch/utils/data/_utils/") for s in st)) / 1e9
        check(label + ": the wait flame graph's time under dataloader.py within 15%% of the loop's own (%.3f s "
              "against %.3f s)" % (under, got["waited"]), within(under, got["waited"]))
        ds = loop["wait_causes"]["dataloader_s"]
        check(label + ": wait_causes.dataloader_s within 15%% of the loop's own (%.3f s against %.3f s)"
              % (ds, got["waited"]), within(ds, got["waited"]))
        check(label + ": data_loading fires", "data_loading" in finding_ids(rep), str(finding_ids(rep)))
        reasons = {w["reason"] for w in loop["waits"]}
        check(label + ": the loop's waits have reasons (poll among them)", "poll" in reasons, str(reasons))
        check(label + ": threads carry running and blocked time",
              loop["threads"] and any(t["cpu_s"] > 0 for t in loop["threads"]) and
              any(t["wait_s"] > 0 for t in loop["threads"]), str(loop.get("threads")))
        with open(os.path.join(rep_dir, "index.html")) as f:
            page = f.read()
        check(label + ": the page has the off-CPU section and the by-reason wait graph",
              'id="offcpu"' in page and "flame-wait_by_reason.svg" in page and
              os.path.exists(os.path.join(rep_dir, "flame-wait_by_reason.svg")))
    else:
        check(label + ": data_loading does not fire (the loop waited %.3f s of %.3f s)"
              % (got["waited"], got["wall"]), "data_loading" not in finding_ids(rep), str(finding_ids(rep)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddp_case(work):
    label = "gloo DDP, rank 1 slowed"
    out = os.path.join(work, "ddp")
    port = free_port()
    procs = []
    for r in (0, 1):
        env = traced_env(out, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=r, WORLD_SIZE=2, LOCAL_RANK=r,
                         TORCHELASTIC_RUN_ID="rs-waits-%d" % os.getpid())
        procs.append(subprocess.Popen([TORCH_PY, SCRIPT, "ddp", str(SLOW)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    res = []
    for p in procs:
        o, e = p.communicate(timeout=300)
        res.append((p.returncode, o, e))
    outs = [json.loads(o.decode().splitlines()[-1]) if rc == 0 and o.strip() else None for rc, o, e in res]
    if not check(label + ": both ranks run", all(outs), str([e.decode()[-300:] for _, _, e in res])):
        return
    slow = [o for o in outs if o["rank"] == 1][0]["slow_wall"]
    job = glob.glob(os.path.join(out, "*"))[0]
    rep, _ = report(label, job)
    if not rep:
        return
    ranks = {pr["rank"]: pr for pr in rep["processes"] if pr["role"] == "rank"}
    coll = ranks[0]["wait_causes"]["collective_s"]
    check(label + ": rank 0's collective waits within 15%% of rank 1's time in slow_down (%.3f s against %.3f s)"
          % (coll, slow), within(coll, slow))
    under = sum(w for st, w in folded(job, 0)
                if any(s.startswith(("c10d::", "gloo::")) for s in st) and any(s.startswith("waits.py:") for s in st)
                and not any("init_process_group" in s or s.startswith("c10d::TCPStore::TCPStore") for s in st)) / 1e9
    check(label + ": rank 0's wait flame graph under c10d/gloo within 15%% of it (%.3f s against %.3f s)"
          % (under, slow), within(under, slow))
    check(label + ": rank 1 waits far less (%.3f s)" % ranks[1]["wait_causes"]["collective_s"],
          ranks[1]["wait_causes"]["collective_s"] < 0.3 * coll)
    f = [x for x in rep["findings"] if x["id"] == "cpu_collective_wait"]
    check(label + ": cpu_collective_wait names rank 1", f and "the others wait for rank 1" in f[0]["evidence"],
          str(finding_ids(rep)))


def pythons():
    found = [("debian python3", TORCH_PY)]
    for v in ("3.10", "3.11", "3.12", "3.13"):
        exe = sorted(glob.glob("/root/.pyenv/versions/%s.*/bin/python%s" % (v, v)))
        if exe:
            found.append(("CPython " + v, exe[-1]))
        else:
            skip("GIL under CPython " + v, "no pyenv build of it here")
    return found


def gil_case(work, name, exe, nthreads):
    label = "%s, %d thread%s" % (name, nthreads, "" if nthreads == 1 else "s")
    out = os.path.join(work, "gil-%s-%d" % (name.replace(" ", "-"), nthreads))
    p = run([exe, SCRIPT, "gil", str(nthreads)], env=traced_env(out), timeout=120)
    got = program_output(p)
    if not check(label + ": runs", p.returncode == 0 and got, p.stderr.decode()[-300:]):
        return
    rep, _ = report(label, glob.glob(os.path.join(out, "*"))[0])
    if not rep:
        return
    gil = sum(pr.get("wait_causes", {}).get("gil_s", 0) for pr in rep["processes"])
    if nthreads == 1:
        check(label + ": no GIL wait (%.3f s), no gil_contention" % gil,
              gil < 0.01 and "gil_contention" not in finding_ids(rep), str(finding_ids(rep)))
        return
    check(label + ": gil_contention fires", "gil_contention" in finding_ids(rep), str(finding_ids(rep)))
    # The threads could run (threads x wall - CPU) of their wall time and
    # did not, each waiting for the GIL or, on a busy machine, for a CPU
    # (their run delay, the kernel's count, left out); the main thread
    # waits in join().
    blocked = nthreads * got["wall"] - got["cpu"] - got.get("run_delay", 0)
    check(label + ": GIL waits %.3f s, of the %.3f s the threads could not run and did not wait for a CPU"
          % (gil, blocked), gil >= blocked * 0.5 and gil <= nthreads * got["wall"])


def main():
    work = os.path.realpath(tempdir("waits"))
    try:
        for name, exe in pythons():
            for n in (4, 1):
                gil_case(work, name, exe, n)
        if not have_torch():
            skip("torch waits", "%s cannot import torch (Debian's python3-torch)" % TORCH_PY)
            finish()
        loader_case(work, 1, True)
        loader_case(work, 8, False)
        ddp_case(work)
    finally:
        cleanup(work)
    finish()


main()
