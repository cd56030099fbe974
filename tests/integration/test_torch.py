#!/usr/bin/env python3
"""Real PyTorch (Debian's python3-torch, CPU, gloo) under the agent. The
job is tests/programs/torch/train.py: two ranks of DistributedDataParallel,
a DataLoader with two worker processes per rank reading one sample file per
sample (files this test writes), a torch.save checkpoint every 8 steps on
rank 0, `sha256sum` of the middle checkpoint run by every rank through
subprocess.run, then late_work(); rank 1 slowed by slow_down() every step.
It is started three ways, each under the agent: Debian's torchrun (fork
DataLoader workers; once more with its default run id "none"), by hand
with the env:// variables (rank 0's workers by 'spawn', rank 1's by
'forkserver'), and torch.multiprocessing.spawn;
and once more by torchrun without the agent, the reference.

Every figure is held against a truth ringside did not compute:
- the program's results: the losses it prints (float.hex), its final
  parameters' digest and the checkpoint's sha256sum equal the reference
  run's (fixed seed, one thread: the job is deterministic, whatever starts
  it), and the exit status is the reference's (torchrun) or the one asked
  for (--exit-status 3 by hand); the agent says nothing on stderr;
- processes: one trace for each process the job has, and no other: the
  launcher (the pid this test started), the ranks and their DataLoader
  workers (the pids the workload printed), each rank's sha256sum (its argv,
  its parent a rank), multiprocessing's resource tracker and forkserver
  (their argv); each with the parent pid it has and the role and parent
  rank the launch gives it (torchrun's and the env:// ranks are ranks,
  what they start their children; torch.multiprocessing.spawn sets no
  launcher variable, so its processes have no rank);
- bytes: each sample file's bytes read (report.json processes[].io.files[])
  equal its size, read by the DataLoader workers only; each checkpoint's
  bytes written equal its size (os.path.getsize), by rank 0 only, and its
  bytes read its size times the sha256sum runs on it, by those; report.json
  "checkpoints" has one burst per torch.save, in order, of that file's size;
- flame graphs (`ringside flame --rank R`, folded): every rank's names the
  model's forward (train.py:Net.forward, torch's Linear.forward), autograd's
  backward and late_work; rank 1's slow_down, rank 0's none of it. torch's
  names come from torch's own code objects: file relative to the sys.path
  entry it is under, then co_qualname;
- CPU shares: slow_down's share of rank 1's CPU time in its flame graph,
  and late_work's (it runs only after the subprocess call) of each rank's,
  within 5 points or 4 sd (sampled.py) of the thread CPU time the workload
  measured in them over its process CPU time (time.process_time at its
  end);
- the wait graph (torchrun): the ranks' main threads' waiting, between the
  kernel's count of their blocked time (less 10%) and of their time off a
  CPU (plus 10%), the workload's own reading of schedstat; the threads that
  only waited (workers, gloo's poll loop, helpers) set apart and counted;
- the page (index.html, torchrun, named and with the run id "none"):
  each DataLoader worker named under the rank that printed its pid (and
  the rank's sha256sum, the launcher where its trace is in the job); the
  checkpoints and sample files rows of their own, each sample file by its
  reader's rank, torch's start-up files (the folder Debian's interpreter
  loads torch from) one row; no empty column and none of the GPU's on
  this CPU job; every chart's axes titled with units; a job with no name
  of its own (run id none, env://) titled by its program and the minute it
  started by this test's clock."""
import calendar
import glob
import hashlib
import html
import json
import os
import random
import re
import signal
import socket
import subprocess
import time

from rstest import (RINGSIDE, ROOT, check, cleanup, dump, finish, report_problems, run, skip, tempdir,
                    trace_files, traced_env)
from sampled import cpu_samples, samples_in, share_check

TORCH_PY = "/usr/bin/python3"   # Debian's torch is for Debian's interpreter
TORCHRUN = "/usr/bin/torchrun"
SCRIPT = os.path.join(ROOT, "tests", "programs", "torch", "train.py")
NFILES, FEATURES, CLASSES = 1024, 64, 10
CKPT_EVERY, SLOW, LATE = 8, 0.03, 0.5
ARGS = ["--batch", "16", "--hidden", "1024", "--ckpt-every", str(CKPT_EVERY), "--slow", str(SLOW),
        "--late", str(LATE)]
SAMPLE_HZ = 999


def have_torch():
    """Whether Debian's interpreter finds a torch package (not whether it loads)."""
    try:
        return run([TORCH_PY, "-c", "import importlib.util, sys; sys.exit(not importlib.util.find_spec('torch'))"],
                   timeout=60).returncode == 0
    except OSError:
        return False


def torch_frame_names():
    """{key: frame name} of torch functions, from their code objects in
    Debian's interpreter: the file relative to the longest sys.path entry
    it lies under, then the qualified name; None when torch does not load."""
    code = r"""
import json, os, sys, torch
def name(fn):
    c = fn.__code__
    roots = [p for p in sys.path if p and c.co_filename.startswith(p.rstrip(os.sep) + os.sep)]
    return os.path.relpath(c.co_filename, max(roots, key=len)) + ":" + c.co_qualname
print(json.dumps({"linear": name(torch.nn.Linear.forward), "backward": name(torch.autograd.backward)}))
"""
    p = run([TORCH_PY, "-c", code], timeout=120)
    return json.loads(p.stdout) if p.returncode == 0 else None


def launch(cmd, env, cwd, timeout=240):
    """Runs cmd in a process group of its own; (its result, its pid). The
    whole group is killed if it outlives timeout (a rank stuck in a
    rendezvous outlives a killed launcher)."""
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        stdout, stderr = p.communicate()
        stderr += b"\nstill running after %d s: killed" % timeout
    wait_group(p.pid)
    return subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr), p.pid


def wait_group(pgid, limit=10.0):
    """Waits (up to limit seconds) until no process of group pgid is left:
    multiprocessing's helpers (resource tracker, forkserver) leave after the
    program, and their traces end when they do."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_samples(folder):
    """NFILES text samples "label x1 ... x64", sizes varying with the digits."""
    rnd = random.Random(7)
    for i in range(NFILES):
        y = rnd.randrange(CLASSES)
        xs = " ".join("%.6g" % (rnd.gauss(0, 1) + (0.5 if j % CLASSES == y else 0)) for j in range(FEATURES))
        with open(os.path.join(folder, "s%04d.txt" % i), "w") as f:
            f.write("%d %s\n" % (y, xs))


def job_env(out, **extra):
    """The environment of a run: under the agent when out is given. Gloo on
    the loopback interface (a container's host name need not resolve)."""
    env = traced_env(out or "", RINGSIDE_SAMPLE_HZ=SAMPLE_HZ)
    for k in ("MASTER_ADDR", "MASTER_PORT") + (() if out else ("LD_PRELOAD", "RINGSIDE_OUT", "RINGSIDE_SAMPLE_HZ")):
        env.pop(k, None)
    env.update({k: str(v) for k, v in dict(extra, GLOO_SOCKET_IFNAME="lo").items()})
    return env


class Output:
    """What the workload printed: losses {(rank, step): hex}, the times it
    printed them {(rank, step): s}, hashes [(rank, path, digest)], saved
    [path] in order, ends {rank: final line}."""

    def __init__(self, *texts):
        self.losses, self.times, self.hashes, self.saved, self.ends = {}, {}, [], [], {}
        for text in texts:
            for line in text.decode(errors="replace").splitlines():
                i = line.find("{")
                try:
                    obj = json.loads(line[i:]) if i >= 0 else None
                except ValueError:
                    obj = None
                if not isinstance(obj, dict):
                    continue
                if "loss" in obj:
                    self.losses[tuple(obj["loss"][:2])] = obj["loss"][2]
                    self.times[tuple(obj["loss"][:2])] = obj.get("t")
                elif "hash" in obj:
                    self.hashes.append(tuple(obj["hash"]))
                elif "saved" in obj:
                    self.saved.append(obj["saved"])
                elif "rank" in obj:
                    self.ends[obj["rank"]] = obj

    def complete(self):
        return sorted(self.ends) == [0, 1] and len(self.losses) > 0

    def digests(self):
        return sorted((r, os.path.basename(p), d) for r, p, d in self.hashes)


def same_results(label, got, ref):
    """The program's own results equal the reference run's."""
    diff = [k for k in sorted(set(got.losses) | set(ref.losses)) if got.losses.get(k) != ref.losses.get(k)]
    check(label + ": losses bit-identical to the untraced run", not diff and got.losses,
          "%d of %d differ, first %s: %s vs %s" % (len(diff), len(ref.losses), diff[:1],
                                                  got.losses.get(diff[0]) if diff else None,
                                                  ref.losses.get(diff[0]) if diff else None))
    params = {r: e["params"] for r, e in got.ends.items()}
    check(label + ": final parameters identical to the untraced run",
          params == {r: e["params"] for r, e in ref.ends.items()}, str(params))
    truth = []
    for r, p, d in got.hashes:
        with open(p, "rb") as f:
            truth.append(hashlib.sha256(f.read()).hexdigest() == d)
    check(label + ": sha256sum in the job as the untraced run's and the file's",
          got.digests() == ref.digests() and truth and all(truth), "%s vs %s" % (got.digests(), ref.digests()))


def metas(out):
    """{pid: [meta record of each trace of that pid]} of every trace under out."""
    got = {}
    for t in trace_files(out):
        recs, _, _ = dump(t)
        m = next((r for r in recs if r["type"] == "meta"), None)
        if m:
            m["file"] = t
            got.setdefault(m["pid"], []).append(m)
    return got


def argv_has(meta, text):
    return any(text in a for a in meta.get("argv", []))


def check_processes(label, out, expected):
    """expected: {pid: (what, rank, role, parent_rank, ppid)}, -1 for none.
    Every expected pid has exactly one trace, with that identity; no other
    trace is there."""
    ms = metas(out)
    problems = []
    for pid, (what, rank, role, prank, ppid) in sorted(expected.items()):
        got = ms.get(pid, [])
        if len(got) != 1:
            problems.append("%s (pid %d): %d traces" % (what, pid, len(got)))
            continue
        m = got[0]
        have = (m["rank"], m["role"], m["parent_rank"], m["ppid"])
        if have != (rank, role, prank, ppid):
            problems.append("%s (pid %d): rank, role, parent rank, ppid %s; want %s"
                            % (what, pid, have, (rank, role, prank, ppid)))
    for pid in sorted(set(ms) - set(expected)):
        m = ms[pid][0]
        problems.append("unexpected trace: pid %d ppid %d %s %s" % (pid, m["ppid"], m["role"], m["argv"][:4]))
    report_problems(label + ": one trace per process, with its role and parent rank", problems)
    return ms


def helpers(ms, ppid, text):
    """Pids of the traced processes started by ppid whose argv holds text."""
    return [pid for pid, m in ms.items() if m[0]["ppid"] == ppid and argv_has(m[0], text)]


def expected_ranks(label, o, launcher, ms, ranked, forkserver=()):
    """{pid: identity} of the ranks and what they start. ranked: the launch
    gives the ranks their rank (then whatever they start, forked or
    exec'd, is a child with their rank as its parent rank); else forked
    processes are children with no parent rank and exec'd ones other.
    forkserver: ranks whose DataLoader workers a forkserver forks."""
    exp = {}
    for r, e in sorted(o.ends.items()):
        pid = e["pid"]
        check("%s: rank %d's parent is the launcher (the program's own view)" % (label, r),
              e["ppid"] == launcher, "ppid %d, launcher %d" % (e["ppid"], launcher))
        forked = lambda what, ppid: (what, -1, "child", r if ranked else -1, ppid)
        execd = lambda what, ppid: (what, -1, "child", r, ppid) if ranked else (what, -1, "other", -1, ppid)
        exp[pid] = ("rank %d" % r, r, "rank", -1, launcher) if ranked else \
            ("rank %d (unknown to ringside)" % r, -1, "other", -1, launcher)
        parent = pid
        if r in forkserver:
            fs = helpers(ms, pid, "multiprocessing.forkserver")
            check("%s: rank %d's forkserver traced" % (label, r), len(fs) == 1, "%d traces" % len(fs))
            for f in fs:
                exp[f] = execd("rank %d's forkserver" % r, pid)
            parent = fs[0] if fs else None
        for w in e["workers"]:
            exp[w] = forked("rank %d's DataLoader worker" % r, parent)
        for t in helpers(ms, pid, "multiprocessing.resource_tracker"):
            exp[t] = execd("rank %d's resource tracker" % r, pid)
        sums = helpers(ms, pid, "sha256sum")
        check("%s: rank %d's sha256sum subprocess traced" % (label, r), len(sums) == 1, "%d traces" % len(sums))
        for t in sums:
            exp[t] = execd("rank %d's sha256sum" % r, pid)
    return exp


def check_bytes(label, rep, data, o, ckpt_rank, hashers):
    """Bytes per sample file and per checkpoint against the files' sizes.
    ckpt_rank: the rank report.json gives rank 0 (None where the launch
    names no rank); hashers: the pids of the sha256sum processes."""
    workers = {w for e in o.ends.values() for w in e["workers"]}
    per = {}   # path -> [(pid, read, written)]
    for p in rep["processes"]:
        for f in p["io"]["files"]:
            per.setdefault(f["path"], []).append((p["pid"], f["read_bytes"], f["write_bytes"]))
    problems, readers = [], set()
    for n in sorted(os.listdir(data)):
        path = os.path.join(data, n)
        rows = per.get(path, [])
        rd, wr = sum(r[1] for r in rows), sum(r[2] for r in rows)
        readers |= {r[0] for r in rows if r[1]}
        if (rd, wr) != (os.path.getsize(path), 0):
            problems.append("%s: read %d, written %d; size %d" % (n, rd, wr, os.path.getsize(path)))
    report_problems(label + ": bytes read per sample file equal its size", problems)
    check(label + ": sample files read by the DataLoader workers only", readers and readers <= workers,
          "readers %s, workers %s" % (sorted(readers), sorted(workers)))

    rank0 = o.ends[0]["pid"] if 0 in o.ends else None
    sums = {}
    for r, p, d in o.hashes:
        sums[os.path.abspath(p)] = sums.get(os.path.abspath(p), 0) + 1
    problems = []
    for p in o.saved:
        path = os.path.abspath(p)
        size = os.path.getsize(path)
        rows = per.get(path, [])
        wr = sum(r[2] for r in rows)
        writers = {r[0] for r in rows if r[2]}
        rd = sum(r[1] for r in rows)
        readers = {r[0] for r in rows if r[1]}
        if wr != size or writers != {rank0}:
            problems.append("%s: written %d by %s; size %d, by rank 0 (%s)" % (p, wr, sorted(writers), size, rank0))
        if rd != size * sums.get(path, 0) or not readers <= hashers:
            problems.append("%s: read %d by %s; size %d x %d sha256sum runs" % (p, rd, sorted(readers), size,
                                                                             sums.get(path, 0)))
    steps = max(s for r, s in o.losses if r == 0)
    if len(o.saved) != steps // CKPT_EVERY:
        problems.insert(0, "%d checkpoints saved in %d steps, want one every %d" % (len(o.saved), steps, CKPT_EVERY))
    report_problems(label + ": checkpoint bytes written equal its size, read its size x sha256sum runs", problems)
    cks = sorted(rep["checkpoints"], key=lambda c: c["start_s"])
    got = [(c["rank"], c["bytes"]) for c in cks]
    want = [(ckpt_rank, os.path.getsize(os.path.abspath(p))) for p in o.saved]
    check(label + ": report.json checkpoints: one per torch.save, of its size", got == want,
          "report %s, torch.save %s" % (got, want))


def flame_rows(target, rank=None):
    """{stack tuple: weight ns} of the CPU flame graph of target (a folder or
    a trace file), one rank's when rank is given; None if ringside fails."""
    cmd = [RINGSIDE, "flame", target, "--kind", "cpu", "-o", "-"]
    if rank is not None:
        cmd += ["--rank", str(rank)]
    p = run(cmd)
    if p.returncode != 0:
        return None
    rows = {}
    for line in p.stdout.decode().splitlines():
        stack, _, w = line.rpartition(" ")
        if stack:
            rows[tuple(stack.split(";"))] = rows.get(tuple(stack.split(";")), 0) + int(w)
    return rows


def check_flame(label, rows, r, end, names, target):
    """names: frame names every rank's graph must hold; target: the traces
    the graph came from (a folder or a file), for its count of samples."""
    if not check("%s: rank %d: CPU flame graph" % (label, r), rows, "ringside flame failed or empty"):
        return
    total = sum(rows.values())
    weight = lambda name: sum(w for f, w in rows.items() if name in f)
    want = list(names) + (["train.py:slow_down"] if r == 1 else [])
    missing = [n for n in want if weight(n) == 0]
    seen = sorted({n for f in rows for n in f if ".py:" in n and ("forward" in n or "backward" in n)})
    check("%s: rank %d's flame graph names %s" % (label, r, ", ".join(want)), not missing,
          "missing %s; forward/backward frames seen: %s" % (missing, seen[:8]))
    if r == 0:
        check("%s: rank 0's flame graph has no slow_down" % label, weight("train.py:slow_down") == 0,
              "%.3f s" % (weight("train.py:slow_down") / 1e9))
    cpu = end["cpu"]
    shares = [("train.py:late_work", end["late_cpu"])] + ([("train.py:slow_down", end["slow_cpu"])] if r == 1 else [])
    n = samples_in(total, cpu_samples(target))
    for name, spent in shares:
        share_check("%s: rank %d: %s's share of CPU (the workload's own clock)" % (label, r, name),
                    100.0 * weight(name) / total, 100.0 * spent / cpu, n, floor=5.0,
                    detail="%.2f s sampled; the workload: %.2f of %.2f s CPU" % (total / 1e9, spent, cpu))


def no_notice(label, *errs):
    text = b"".join(errs).decode(errors="replace")
    lines = [l for l in text.splitlines() if "ringside:" in l]
    check(label + ": the agent says nothing", not lines, "; ".join(sorted(set(lines)))[:300])


def torchrun_output(logs, run_id):
    """The ranks' stdout as torchrun's -r 1 kept it: LOGS/RUNID_*/attempt_0/LOCALRANK/stdout.log."""
    texts = []
    for path in sorted(glob.glob(os.path.join(logs, run_id + "_*", "attempt_0", "*", "stdout.log"))):
        with open(path, "rb") as f:
            texts.append(f.read())
    return Output(*texts)


def torchrun_cmd(port, run_id, logs, data, ckpt):
    # Debian's torchrun 1.13 on Python 3.11 fails without -r/-t: its
    # Std.from_str("0") gives None there. -r 1 -t 1: each rank's stdout to a
    # log file under --log_dir (read from there), and on to the launcher's.
    return [TORCHRUN, "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", str(port),
            "--rdzv_id", run_id, "-r", "1", "-t", "1", "--log_dir", logs, SCRIPT, "ddp", data, ckpt] + ARGS


def by_torchrun(work, data, names, ref):
    label = "torchrun"
    out, ckpt = tempdir("trace-torchrun"), os.path.join(work, "ckpt-torchrun")
    os.mkdir(ckpt)
    run_id, logs = "rs-torch-%d" % os.getpid(), os.path.join(work, "logs-torchrun")
    p, launcher = launch(torchrun_cmd(free_port(), run_id, logs, data, ckpt), job_env(out), work)
    o = torchrun_output(logs, run_id)
    try:
        if not check(label + ": job runs, exit status as untraced", p.returncode == ref.status and o.complete(),
                     "status %s (untraced %s): %s" % (p.returncode, ref.status, p.stderr.decode()[-500:])):
            return
        no_notice(label, p.stderr)
        same_results(label, o, ref.out)
        ms = metas(out)
        exp = expected_ranks(label, o, launcher, ms, ranked=True)
        exp[launcher] = ("torchrun", -1, "other", -1, os.getpid())
        hashers = {pid for pid, e in exp.items() if "sha256sum" in e[0]}
        ms = check_processes(label, out, exp)
        folder = {os.path.basename(os.path.dirname(m[0]["file"])) for pid, m in ms.items() if pid != launcher}
        check(label + ": the ranks' traces in one folder named by the run id", folder == {run_id}, str(folder))
        job = os.path.join(out, run_id)
        rep = job_report(label, job, os.path.join(work, "report-torchrun"), page=True)
        if rep is None:
            return
        check_bytes(label, rep, data, o, 0, hashers)
        rep_dir = os.path.join(work, "report-torchrun")
        check(label + ": the page's title is the run id", page_title(rep_dir) == run_id, str(page_title(rep_dir)))
        check_page(label, rep_dir, rep, o, None)
        check_cpu_path(label, rep, o)
        for rank in (0, 1):
            check_flame(label, flame_rows(job, rank), rank, o.ends[rank], names, job)
        check_wait_graph(label, job, rep, os.path.join(work, "report-torchrun"), o)
    finally:
        cleanup(out)


def by_torchrun_unnamed(work, data, ref):
    """torchrun with the run id "none" (its default): the agent names the
    job after torchrun, and the page calls it by torchrun and its start; the
    launcher's trace is in the job, and named as the launcher."""
    label = "torchrun, run id none"
    out, ckpt = tempdir("trace-torchrun-none"), os.path.join(work, "ckpt-none")
    os.mkdir(ckpt)
    logs = os.path.join(work, "logs-none")
    t0 = time.time()
    p, launcher = launch(torchrun_cmd(free_port(), "none", logs, data, ckpt), job_env(out), work)
    t1 = time.time()
    o = torchrun_output(logs, "none")
    try:
        if not check(label + ": job runs, exit status as untraced", p.returncode == ref.status and o.complete(),
                     "status %s (untraced %s): %s" % (p.returncode, ref.status, p.stderr.decode()[-500:])):
            return
        jobs = os.listdir(out)
        if not check(label + ": one job folder", len(jobs) == 1, str(jobs)):
            return
        job = os.path.join(out, jobs[0])
        rep_dir = os.path.join(work, "report-none")
        rep = job_report(label, job, rep_dir, page=True)
        if rep is None:
            return
        launcher_in = any(os.path.dirname(m[0]["file"]) == job for pid, m in metas(out).items() if pid == launcher)
        check(label + ": the launcher's trace is in the job", launcher_in, "launcher pid %d" % launcher)
        check_untitled(label, rep_dir, "torchrun", t0, t1)
        check_page(label, rep_dir, rep, o, "torchrun")
    finally:
        cleanup(out)


def folded_total_s(target, *extra):
    """(seconds in the wait flame graph of target, ringside's stderr)."""
    p = run([RINGSIDE, "flame", target, "--kind", "wait", "-o", "-"] + list(extra))
    total = 0
    for line in p.stdout.decode(errors="replace").splitlines():
        total += int(line.rsplit(" ", 1)[1])
    return total / 1e9, p.stderr.decode(errors="replace")


def check_wait_graph(label, job, rep, rep_dir, o):
    """The default wait graph holds the ranks' main threads' waiting: the
    threads that only waited (the DataLoader workers, gloo's poll loop,
    the pin-memory and queue-feeder threads) are set apart and counted in a
    line. The truth: each main thread's blocked time by the kernel's count
    (the train.py's own reading of /proc/thread-self/schedstat: off a CPU
    and not waiting for one), and its time off a CPU (which also holds the
    wake-ups a busy machine delays, inside the calls the agent times)."""
    graph, err = folded_total_s(job)
    every, _ = folded_total_s(job, "--threads")
    blocked = sum(o.ends[r]["main_blocked_s"] for r in (0, 1))
    off_cpu = sum(o.ends[r]["main_off_cpu_s"] for r in (0, 1))
    check("%s: the wait graph holds the main threads' waiting: %.2f s, the kernel's %.2f s blocked (%.2f s off a CPU)"
          % (label, graph, blocked, off_cpu), 0.9 * blocked <= graph <= 1.1 * off_cpu, err[-300:])
    apart = rep.get("wait_graph_set_apart") or {}
    check("%s: the threads that only waited are set apart and counted: %s threads, %.1f s, with --threads %.1f s"
          % (label, apart.get("threads"), apart.get("wait_s", 0), every),
          apart.get("threads", 0) >= 8 and apart["wait_s"] > 5 * graph and
          abs(every - graph - apart["wait_s"]) <= 0.01 * every and "set apart: %d threads" % apart["threads"] in err,
          json.dumps(apart)[:300])
    with open(os.path.join(rep_dir, "index.html")) as f:
        page = f.read()
    check(label + ": the page says what the wait graph leaves out", 'id="wait-set-apart"' in page)


def page_tables(page):
    """{table id: (header texts, [[(text, data-v or None) per cell] per row])}
    of the tables index.html writes with their rows (not those its script
    fills), and the processes D.procs lists (each row's first entry its
    name)."""
    tables = {}
    for m in re.finditer(r'<table[^>]*id="([^"]+)"[^>]*>(.*?)</table>', page, re.S):
        head = [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", m.group(2), re.S)]
        rows = []
        for tr in re.findall(r"<tbody>(.*?)</tbody>", m.group(2), re.S)[:1]:
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", tr, re.S):
                rows.append([(html.unescape(re.sub(r"<[^>]+>", "", c.group(2))),
                              float(c.group(1)) if c.group(1) is not None else None)
                             for c in re.finditer(r'<td(?:[^>]*?data-v="([^"]*)")?[^>]*>(.*?)</td>', row, re.S)])
        tables[m.group(1)] = (head, rows)
    return tables


def page_procs(page):
    """D.procs of index.html: [name, role, ...] per process of report.json."""
    m = re.search(r'"procs":(\[.*?\]\]),\n"figs"', page, re.S)
    return json.loads(m.group(1)) if m else []


def page_title(rep_dir):
    with open(os.path.join(rep_dir, "index.html"), encoding="utf-8") as f:
        got = re.search(r"<title>ringside: (.*?)</title>", f.read())
    return html.unescape(got.group(1)) if got else None


def check_page(label, rep_dir, rep, o, launcher_prog, helpers_of=()):
    """The page without noise, each figure against what the workload did:
    workers named under the rank that printed their pids, the launcher as
    one where its trace is in the job (launcher_prog; None where not), and
    multiprocessing's helpers (helpers_of: (rank, "forkserver" or "resource
    tracker") of each, from their argv and parent); every
    file the workload wrote or read as data (checkpoints, sample files) a
    row of its own, the start-up code of torch (the folder Debian's
    interpreter loads torch from) one row; no column with nothing in it and
    none of the GPU's (the job ran on CPUs); both axes of every chart
    titled, with units."""
    with open(os.path.join(rep_dir, "index.html"), encoding="utf-8") as f:
        page = f.read()
    # Workers and helpers under their rank; the truth: the pids each rank
    # printed as its DataLoader workers, the pids that read each sample file.
    rank_of = {w: r for r, e in o.ends.items() for w in e["workers"]}
    names = [pr[0] for pr in page_procs(page)]
    want = sorted(["rank %d" % r for r in o.ends] + ["rank %d \u00b7 DataLoader worker" % rank_of[w] for w in rank_of] +
                  ["rank %d \u00b7 sha256sum" % r for r, _, _ in o.hashes] +
                  (["%s \u00b7 launcher" % launcher_prog] if launcher_prog else []) +
                  ["rank %d \u00b7 %s" % h for h in helpers_of])
    check(label + ": processes named by rank and what they are", sorted(names) == want,
          "page %s; want %s" % (sorted(names), want))
    tables = page_tables(page)
    head, rows = tables.get("table-io", ([], []))
    col = {h: i for i, h in enumerate(head)}
    reader = {f["path"]: p["pid"] for p in rep["processes"] for f in p["io"]["files"] if f["read_bytes"]}
    problems = []
    shown = {r[col["path"]][0]: r[col["process"]][0] for r in rows} if "path" in col else {}
    for path, name in sorted(shown.items()):
        pid = reader.get(path)
        if pid in rank_of and name != "rank %d \u00b7 DataLoader worker" % rank_of[pid]:
            problems.append("%s: %r, read by pid %d, rank %d's worker" % (path, name, pid, rank_of[pid]))
    samples = [p for p in shown if os.path.basename(os.path.dirname(p)) == "samples"]
    report_problems(label + ": %d sample files in the file table, each by its reader's rank" % len(samples),
                    problems + ([] if samples else ["no sample file shown"]))
    saved = sorted(os.path.abspath(p) for p in o.saved)
    check(label + ": every checkpoint a row of its own", saved and set(saved) <= set(shown),
          "missing %s" % sorted(set(saved) - set(shown)))
    code = [p for p in shown if p.endswith((".py", ".pyc")) or ".so" in os.path.basename(p)]
    check(label + ": no start-up file (.py, .pyc, .so) has a row of its own", not code, str(code[:5]))
    torch_dir = run([TORCH_PY, "-c", "import os, torch; print(os.path.dirname(torch.__file__))"],
                    timeout=120).stdout.decode().strip()
    in_torch = [(p["pid"], f["path"]) for p in rep["processes"] for f in p["io"]["files"]
                if f["path"].startswith(torch_dir + "/") and not f["write_bytes"]]
    grouped = re.findall(r'<td class="name" data-folder="%s">' % re.escape(html.escape(torch_dir)), page)
    row = [r for r in rows if r[col["path"]][0].startswith(torch_dir + "/ ")]
    check(label + ": torch's %d files read at start-up in one row of that folder" % len(in_torch),
          len(grouped) == 1 and row and row[0][col["files"]][1] == len(in_torch),
          "%d rows, files %s" % (len(grouped), [r[col["files"]] for r in row]))
    check(label + ": the page says how it groups files", 'id="io-startup"' in page)
    empty = []
    for tid, (head, rows) in tables.items():
        for i, h in enumerate(head):
            if rows and all(i < len(r) and (r[i][1] == 0 or r[i][0] in ("", "\u2013")) for r in rows) and h != "rank":
                empty.append("%s: %s" % (tid, h))
    proc_head = [html.unescape(h) for h in re.findall(r'<th[^>]*data-c="\d+">(.*?)</th>', page)]
    gpu = [h for h in proc_head if "GPU" in h or h in ("compute %", "comm %", "idle %", "SM activity %")]
    check(label + ": no column with nothing in it, none of the GPU's (a CPU job)", not empty and not gpu and proc_head,
          "empty %s; GPU columns %s" % (empty, gpu))
    charts = re.findall(r'<div class="n?chart" id="([^"]+)">(.*?)</svg></div>', page, re.S)
    steps = re.search(r'<section id="steps">(.*?)</section>', page, re.S)
    bad = [cid for cid, body in charts if 'class="axis-x"' not in body or
           not re.search(r'class="axis-y"[^>]*>[^<]*\([^)<]+\)</text>', body)]
    if steps and ('class="axis-x"' not in steps.group(1) or "step time (ms)" not in steps.group(1)):
        bad.append("steps")
    check(label + ": %d charts, each axis titled with its unit" % (len(charts) + bool(steps)), charts and not bad,
          str(bad))


def check_untitled(label, rep_dir, prog, t0, t1):
    """A job with no name of its own is titled by its program and the
    minute it started (UTC), between t0 and t1 on this test's clock."""
    got = page_title(rep_dir)
    m = got and re.fullmatch(re.escape(prog) + r" job \u00b7 (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", got)
    when = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M")) if m else None
    check("%s: a job with no name titled by its program and start: %r" % (label, got),
          when is not None and t0 - 60 < when <= t1, "started between %s and %s UTC" %
          (time.strftime("%H:%M:%S", time.gmtime(t0)), time.strftime("%H:%M:%S", time.gmtime(t1))))


def check_cpu_path(label, rep, o):
    """A job with no GPU work (gloo): its steps from the ranks' main-thread
    waits (a step from one all-reduce's end to the next's), counted and
    timed as the program's own clock has them (its loss lines: the median
    time between two of a rank's, within 10%); its critical path adds up
    to the time per step, and names the Python frames of rank 1's
    slow_down(), which holds the other rank back every step."""
    st = rep.get("steps") or {}
    n = len([k for k in o.losses if k[0] == 0])
    got = st.get("count")
    check(label + ": steps found from the ranks' waits, as many as the program ran",
          st.get("source") == "waits" and got is not None and n - 2 <= got <= n,
          "source %s, %s steps of the program's %d" % (st.get("source"), got, n))
    gaps = []
    for rank in (0, 1):
        ts = [o.times[(rank, s)] for s in range(1, n + 1) if o.times.get((rank, s)) is not None]
        gaps += [b - a for a, b in zip(ts, ts[1:])]
    truth = 1e3 * sorted(gaps)[len(gaps) // 2] if gaps else None
    med = st.get("median_ms")
    check(label + ": median step within 10% of the program's own clock",
          truth and med and abs(med - truth) <= 0.10 * truth, "report %s ms, program %s ms" % (med, truth))
    cp = rep.get("critical_path") or {}
    parts = cp.get("parts") or []
    per = cp.get("per_step_ms") or 0
    total = sum(p.get("ms_per_step") or 0 for p in parts)
    check(label + ": critical path's parts add up to the time per step (1%)",
          per > 0 and abs(total - per) <= 0.01 * per, "parts %.3f ms, per step %s ms" % (total, per))
    named = [p["cause"] for p in parts if p.get("frames_rank") == 1 and
             any("train.py:slow_down" in f for f in p.get("frames") or [])]
    top = max(parts, key=lambda p: p.get("recoverable_pct") or 0) if parts else {}
    check(label + ": the path's largest gain is rank 1's, and names its Python frames (slow_down)",
          top.get("cause") in named and top.get("rank") == 1,
          "largest gain %s on rank %s; parts naming slow_down on rank 1: %s" % (
              top.get("cause"), top.get("rank"), named))


def job_report(label, job, rep_dir, page=False):
    """report.json of `ringside report JOB -o REP_DIR` as a dict, with the
    checks that it ran (and wrote its page, with page) and read every trace
    whole; None when it failed."""
    r = run([RINGSIDE, "report", job, "-o", rep_dir, "-q"])
    if not check(label + ": ringside report", r.returncode == 0 and
                 (not page or os.path.exists(os.path.join(rep_dir, "index.html"))), r.stderr.decode()[-300:]):
        return None
    with open(os.path.join(rep_dir, "report.json")) as f:
        rep = json.load(f)
    check(label + ": every trace complete", all(pr["trace"]["complete"] for pr in rep["processes"]),
          str([pr["trace"]["file"] for pr in rep["processes"] if not pr["trace"]["complete"]]))
    return rep


def by_hand(work, data, names, ref):
    """The ranks started with the env:// variables, as a user's script would."""
    label = "env://"
    out, ckpt = tempdir("trace-envrdzv"), os.path.join(work, "ckpt-env")
    os.mkdir(ckpt)
    port, procs, files = free_port(), [], []
    t0 = time.time()
    try:
        for r in (0, 1):
            env = job_env(out, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=r, LOCAL_RANK=r, WORLD_SIZE=2)
            fo, fe = (open(os.path.join(work, "env-%d.%s" % (r, s)), "w+b") for s in ("out", "err"))
            files.append((fo, fe))
            procs.append(subprocess.Popen([TORCH_PY, SCRIPT, "ddp", data, ckpt] + ARGS +
                                          ["--context", "per-rank", "--exit-status", "3"],
                                          env=env, cwd=work, stdout=fo, stderr=fe, start_new_session=True))
        deadline = time.monotonic() + 240
        status = []
        for p in procs:
            try:
                status.append(p.wait(timeout=max(1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                status.append(p.wait())
            wait_group(p.pid)
        texts = []
        for fo, fe in files:
            fo.seek(0)
            fe.seek(0)
            texts.append((fo.read(), fe.read()))
        o = Output(*(t[0] for t in texts))
        if not check(label + ": ranks run, exit status 3 as asked", status == [3, 3] and o.complete(),
                     "status %s: %s" % (status, b"".join(t[1] for t in texts).decode()[-500:])):
            return
        no_notice(label, *(t[1] for t in texts))
        same_results(label, o, ref.out)
        ms = metas(out)
        exp = expected_ranks(label, o, os.getpid(), ms, ranked=True, forkserver=(1,))
        hashers = {pid for pid, e in exp.items() if "sha256sum" in e[0]}
        check_processes(label, out, exp)
        # No launcher names the job: each rank's folder is its own; report
        # and flame take the folder of job folders.
        rep = job_report(label, out, os.path.join(work, "report-env"))
        if rep is None:
            return
        check_untitled(label, os.path.join(work, "report-env"), "train.py", t0, time.time())
        helps = [re.fullmatch(r"rank (\d)'s (forkserver|resource tracker)", e[0]) for e in exp.values()]
        check_page(label, os.path.join(work, "report-env"), rep, o, None,
                   [(int(m.group(1)), m.group(2)) for m in helps if m])
        check_bytes(label, rep, data, o, 0, hashers)
        for rank in (0, 1):
            check_flame(label, flame_rows(out, rank), rank, o.ends[rank], names, out)
    finally:
        for fo, fe in files:
            fo.close()
            fe.close()
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        cleanup(out)


def by_mp_spawn(work, data, names, ref):
    label = "mp.spawn"
    out, ckpt = tempdir("trace-mpspawn"), os.path.join(work, "ckpt-spawn")
    os.mkdir(ckpt)
    env = job_env(out, MASTER_ADDR="127.0.0.1", MASTER_PORT=free_port())
    p, main = launch([TORCH_PY, SCRIPT, "spawn", data, ckpt] + ARGS + ["--context", "fork"], env, work)
    o = Output(p.stdout)
    try:
        if not check(label + ": job runs, exit status 0", p.returncode == 0 and o.complete(),
                     "status %s: %s" % (p.returncode, p.stderr.decode()[-500:])):
            return
        no_notice(label, p.stderr)
        same_results(label, o, ref.out)
        ms = metas(out)
        exp = expected_ranks(label, o, main, ms, ranked=False)
        hashers = {pid for pid, e in exp.items() if "sha256sum" in e[0]}
        exp[main] = ("torch.multiprocessing.spawn's parent", -1, "other", -1, os.getpid())
        for t in helpers(ms, main, "multiprocessing.resource_tracker"):
            exp[t] = ("resource tracker", -1, "other", -1, main)
        ms = check_processes(label, out, exp)
        rep = job_report(label, out, os.path.join(work, "report-spawn"))
        if rep is None:
            return
        check_bytes(label, rep, data, o, None, hashers)
        # No rank is known to ringside here: each process's own trace.
        for rank, e in sorted(o.ends.items()):
            trace = ms.get(e["pid"], [{}])[0].get("file")
            check_flame(label, flame_rows(trace) if trace else None, rank, e, names, trace)
    finally:
        cleanup(out)


class Reference:
    """torchrun without the agent: its exit status and output."""

    def __init__(self, work, data):
        ckpt = os.path.join(work, "ckpt-ref")
        os.mkdir(ckpt)
        logs = os.path.join(work, "logs-ref")
        p, _ = launch(torchrun_cmd(free_port(), "rs-torch-ref", logs, data, ckpt), job_env(None), work)
        self.status, self.out, self.err = p.returncode, torchrun_output(logs, "rs-torch-ref"), p.stderr


def main():
    if not have_torch():
        skip("torch", "%s finds no torch (Debian's python3-torch is not installed)" % TORCH_PY)
        finish()
    names = torch_frame_names()
    if not check("torch loads in %s" % TORCH_PY, names, "import torch failed"):
        finish()
    names = ["train.py:Net.forward", names["linear"], names["backward"], "train.py:late_work"]
    work = os.path.realpath(tempdir("torch"))
    data = os.path.join(work, "samples")
    os.mkdir(data)
    write_samples(data)
    t0 = time.monotonic()
    try:
        # python3-torch installs torchrun with torch
        if not check("torchrun at " + TORCHRUN, os.path.exists(TORCHRUN), "missing"):
            finish()
        ref = Reference(work, data)
        if not check("untraced torchrun run completes", ref.status == 0 and ref.out.complete(),
                     "status %s: %s" % (ref.status, ref.err.decode()[-500:])):
            finish()
        by_torchrun(work, data, names, ref)
        by_torchrun_unnamed(work, data, ref)
        by_hand(work, data, names, ref)
        by_mp_spawn(work, data, names, ref)
    finally:
        cleanup(work)
        print("    torch suite: %.1f s" % (time.monotonic() - t0))
    finish()


main()
