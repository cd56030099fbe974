#!/usr/bin/env python3
"""make stress: the same short jobs launched hundreds of times under the
agent (STRESS_N launches, default 500; STRESS_SEED; STRESS_JOBS=pool,short
for some kinds only), each held against what its processes did, from
outside the agent: simlaunch ranks of simtrain (the
simulator's truth file per pid, the ranks' own step lines), fork and exec
(py_fork_exec.py), a multiprocessing pool ended by Pool.terminate
(py_pool.py), Python's ways of starting a child (py_subproc.py and
its truth file), a child sharing memory (vm_child), and short-lived C
processes ending every way they can (short_exit: the pids and bytes they
print), with RINGSIDE_FLUSH_MS varied and SIGTERM sent at random moments to
a rank, a launcher or a short process. Every process that did something has
its trace file; every one that ended by itself or by SIGTERM has its end
mark; bytes, writes, kernels and collectives equal what it did. Prints one
summary line; exits 1 on any problem, listing them and keeping the folders
of the launches that had one."""
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
from rstest import AGENT, BUILD, PROG, PYTHON, RINGSIDE, children, traced_env, trace_files  # noqa: E402

PROGRAMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs")
SIM = os.path.join(BUILD, "sim")
FLUSH_MS = (None, 50, 200, 1000)
SHORT_MODES = ("return", "exit", "_exit", "thread-exit", "atexit", "fork", "fork-exit", "exec")
SUBPROC_MODES = ("run", "system", "posix_spawn", "mp_fork")
VM_MODES = ("vfork", "vfork-fail", "clone", "spawn")  # clone-vm: tracing ends by design
TERM_SHARE = 0.25                 # launches that get a SIGTERM at a random moment


class Launch:
    """One launch: its folders, what it ran, and what went wrong."""

    def __init__(self, n, kind):
        self.n, self.kind = n, kind
        self.root = tempfile.mkdtemp(prefix="rs-stress-%d-" % n)
        self.out = os.path.join(self.root, "trace")
        self.work = os.path.join(self.root, "work")
        os.makedirs(self.work)
        self.problems = []
        self.note = ""

    def problem(self, what):
        self.problems.append("launch %d (%s%s): %s" % (self.n, self.kind, self.note, what))


def dump(path):
    """What a trace file holds: pid, role, rank, whether its last chunk is
    the end mark, bytes and calls per path and op, GPU kernels, collectives,
    records; None when the dump fails."""
    p = subprocess.run([RINGSIDE, "dump", path], capture_output=True)
    if p.returncode != 0:
        return None
    t = {"pid": None, "end": False, "io": collections.Counter(), "calls": collections.Counter(),
         "kernels": 0, "colls": 0, "records": 0, "path": path}
    for line in p.stdout.decode(errors="replace").splitlines():
        r = json.loads(line)
        kind = r["type"]
        if kind == "chunk":
            t["end"] = r["end"]
            t["records"] = r["counters"]["recorded"]
        elif kind == "meta":
            t["pid"], t["role"], t["rank"] = r["pid"], r["role"], r["rank"]
        elif kind == "io":
            t["io"][(r.get("path"), r["op"])] += max(r["result"], 0)
            t["calls"][(r.get("path"), r["op"])] += 1
        elif kind == "gpu" and r.get("kind") == "kernel":
            t["kernels"] += 1
        elif kind == "coll":
            t["colls"] += 1
    return t


def traces(launch):
    """{pid: [dump, ...]} of every trace file of the launch (an exec'd image
    has a file of its own under the same pid)."""
    by_pid = collections.defaultdict(list)
    for f in trace_files(launch.out):
        t = dump(f)
        if t is None or t["pid"] is None:
            launch.problem("%s: unreadable" % f)
            continue
        by_pid[t["pid"]].append(t)
    return by_pid


def run(launch, cmd, env, term_to=None, timeout=120):
    """Runs cmd; with term_to (a function of the Popen giving a pid), sends
    that pid SIGTERM at a random moment. Returns (status, stdout)."""
    p = subprocess.Popen(cmd, env=env, cwd=launch.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if term_to:
        time.sleep(random.uniform(0, launch.term_window))
        pid = term_to(p)
        if pid:
            launch.note += ", SIGTERM to %d" % pid
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        launch.problem("still running after %d s" % timeout)
    if b"ringside:" in err:
        launch.problem("agent notice: %s" % err.decode(errors="replace")[-300:])
    return p.returncode, out.decode(errors="replace")


def require(launch, by_pid, pid, what, end=True):
    """The traces of pid, which must exist (and end with the end mark)."""
    got = by_pid.get(pid, [])
    if not got:
        launch.problem("pid %d (%s): no trace file" % (pid, what))
    for t in got:
        if end and not t["end"]:
            launch.problem("pid %d (%s): %s has no end mark" % (pid, what, os.path.basename(t["path"])))
    return got


def io_total(got, path, op):
    return sum(t["io"][(path, op)] for t in got), sum(t["calls"][(path, op)] for t in got)


def job_simlaunch(launch, env, term):
    """simlaunch -n 2..4 simtrain: each pid of the truth files (a rank that
    launched kernels) has its rank file with the end mark (ranks end by
    themselves, by a peer's failure or by SIGTERM, never SIGKILL); a rank
    that finished its steps has the truth's kernels and collectives."""
    n = random.randint(2, 4)
    steps = random.randint(2, 20)
    env.update(LD_LIBRARY_PATH=SIM, SIMGPU_TRUTH=os.path.join(launch.work, "truth.%p"),
               SIMNCCL_TIMEOUT_S="20", TMPDIR=launch.work)
    env.pop("MASTER_PORT", None)
    cmd = [os.path.join(BUILD, "simlaunch"), "-n", str(n), "--", os.path.join(BUILD, "simtrain"), "--steps",
           str(steps), "--layers", "2", "--fwd-us", "200", "--bwd-us", "400", "--bucket-mb", "1"]
    launch.term_window = 0.6
    victim = None
    if term:
        victim = random.choice(["launcher", "rank"])
        term = (lambda p: p.pid) if victim == "launcher" else \
            (lambda p: random.choice(children(p.pid) or [None]))
    status, out = run(launch, cmd, env, term)
    done = {int(line.split()[2]) for line in out.splitlines() if line.startswith("simtrain: rank ")}
    if not term and (status != 0 or len(done) != n):
        launch.problem("job status %d, %d of %d ranks finished" % (status, len(done), n))
    by_pid = traces(launch)
    truths = [f for f in os.listdir(launch.work) if f.startswith("truth.")]
    pids = set()
    for f in truths:
        with open(os.path.join(launch.work, f)) as fh:
            lines = [json.loads(x) for x in fh if x.strip()]
        kinds = collections.Counter(x["kind"] for x in lines)
        if not kinds["kernel"]:
            continue
        pid, rank = lines[0]["pid"], lines[0]["rank"]
        pids.add(pid)
        got = require(launch, by_pid, pid, "rank %d" % rank)
        if got and got[0]["rank"] != rank:
            launch.problem("pid %d: trace says rank %s, truth %d" % (pid, got[0]["rank"], rank))
        if rank in done and got:
            # the stand-in's NCCL kernels are kernels launched as well
            want = (kinds["kernel"] + kinds["collective"], kinds["collective"])
            have = (sum(t["kernels"] for t in got), sum(t["colls"] for t in got))
            if want != have:
                launch.problem("rank %d: kernels, collectives %s; truth %s" % (rank, have, want))
    # a rank stopped before its first kernel may have a file (its
    # allocations, NCCL's set-up); the launcher, which only waits, has none
    stray = [t["path"] for ts in by_pid.values() for t in ts if t["role"] != "rank"]
    if stray:
        launch.problem("files of processes that are not ranks: %s" % stray)
    return len(pids)


def job_short(launch, env, term):
    """short_exit MODE: every pid that printed "wrote" has its file, the end
    mark and the bytes and writes it printed, whatever way it ended; a
    SIGTERM'd one that printed "start" and has a file has the end mark."""
    mode = random.choice(SHORT_MODES)
    launch.note = ", " + mode
    launch.term_window = 0.02
    term = (lambda p: p.pid) if term else None
    status, out = run(launch, [os.path.join(PROG, "short_exit"), mode, launch.work, str(random.randint(1, 64))],
                      env, term)
    by_pid = traces(launch)
    started, wrote = set(), collections.defaultdict(list)
    for line in out.splitlines():
        w = line.split()
        if w[:1] == ["start"]:
            started.add(int(w[1]))
        elif w[:1] == ["wrote"]:
            wrote[int(w[1])].append((int(w[2]), int(w[3]), w[4]))
    if not term and (status != 0 or not wrote):
        launch.problem("status %d, output %r" % (status, out[-200:]))
    for pid, lines in wrote.items():
        got = require(launch, by_pid, pid, mode)
        if not got:
            continue
        for path in {p for _, _, p in lines}:
            want = (sum(b for b, _, p in lines if p == path), sum(c for _, c, p in lines if p == path))
            have = io_total(got, path, "write")
            if have != want:
                launch.problem("pid %d: %s: bytes, writes %s; printed %s" % (pid, path, have, want))
    for pid in started - set(wrote):
        if pid in by_pid:
            require(launch, by_pid, pid, mode + ", cut short")
    stray = [t["path"] for p, ts in by_pid.items() if p not in started for t in ts]
    if stray:
        launch.problem("files of processes it did not start: %s" % stray)
    return len(started)


def data_file(launch):
    path = os.path.join(launch.work, "data.bin")
    size = random.randint(70000, 300000)
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    return path, size


def job_subproc(launch, env, term):
    """py_subproc.py MODE: its pid (from its truth file) has its file with
    the end mark, and read the data file's size."""
    mode = random.choice(SUBPROC_MODES)
    launch.note = ", " + mode
    data, size = data_file(launch)
    truth = os.path.join(launch.work, "truth.json")
    status, out = run(launch, [PYTHON, os.path.join(PROGRAMS, "py_subproc.py"), mode, "0.01", data, truth], env)
    if status != 0 or not os.path.exists(truth):
        launch.problem("status %d, output %r" % (status, out[-200:]))
        return 1
    with open(truth) as f:
        pid = json.load(f)["pid"]
    got = require(launch, traces(launch), pid, mode)
    if got and io_total(got, data, "read")[0] != size:
        launch.problem("pid %d read %d of %s; its size %d" % (pid, io_total(got, data, "read")[0], data, size))
    return 1


def job_vm_child(launch, env, term):
    """vm_child MODE: the parent (the pid started) has its file with the end
    mark and read the data file's size; the child's /bin/true leaves none."""
    mode = random.choice(VM_MODES)
    launch.note = ", " + mode
    data, size = data_file(launch)
    with open(os.path.join(launch.work, "rel.dat"), "wb") as f:
        f.write(b"r" * 100)
    p = subprocess.Popen([os.path.join(PROG, "vm_child"), mode, data, "0.01"], env=env, cwd=launch.work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=120)
    if p.returncode != 0 or b"ringside:" in err:
        launch.problem("status %d: %s" % (p.returncode, err.decode(errors="replace")[-200:]))
    by_pid = traces(launch)
    got = require(launch, by_pid, p.pid, mode)
    if got and io_total(got, data, "read")[0] != size:
        launch.problem("pid %d read %d of %s; its size %d" % (p.pid, io_total(got, data, "read")[0], data, size))
    return 2


def job_fork_exec(launch, env, term):
    """py_fork_exec.py: the pid started has two files (before and after its
    exec), its forked child one, each with the end mark."""
    p = subprocess.Popen([PYTHON, os.path.join(PROGRAMS, "py_fork_exec.py")], env=env, cwd=launch.work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=120)
    if p.returncode != 0 or b"exec'd ok" not in out:
        launch.problem("status %d: %s" % (p.returncode, err.decode(errors="replace")[-200:]))
    by_pid = traces(launch)
    got = require(launch, by_pid, p.pid, "before and after exec")
    if len(got) != 2:
        launch.problem("pid %d: %d files, want 2 (its exec)" % (p.pid, len(got)))
    others = [q for q in by_pid if q != p.pid]
    if len(others) != 1:
        launch.problem("forked children's files: %s, want 1" % others)
    for q in others:
        require(launch, by_pid, q, "forked child")
    return 3


def job_pool(launch, env, term):
    """py_pool.py: a pool of four forked workers ended by Pool.terminate
    (SIGTERM to workers idle in their queue): the parent and every worker
    that did a task have their files with the end mark; the bytes each
    worker wrote are on record. The program's stderr is kept with a
    problem (the agent's notices say why an end mark is missing)."""
    p = subprocess.Popen([PYTHON, os.path.join(PROGRAMS, "py_pool.py"), launch.work], env=env, cwd=launch.work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(timeout=120)
    if p.returncode != 0 or b"ringside:" in err:
        launch.problem("status %d: %s" % (p.returncode, err.decode(errors="replace")[-300:]))
        return 1
    workers = [int(x) for x in out.split()]
    by_pid = traces(launch)
    require(launch, by_pid, p.pid, "pool parent")
    for q in workers:
        require(launch, by_pid, q, "pool worker")
    for q, got in by_pid.items():
        if q != p.pid and q not in workers and not all(t["end"] for t in got):
            launch.problem("pid %d (idle pool worker): no end mark; stderr: %s"
                           % (q, err.decode(errors="replace")[-300:]))
    for name in os.listdir(launch.work):
        if name.endswith(".out"):
            path = os.path.join(launch.work, name)
            done = sum(io_total(got, path, "write")[0] for got in by_pid.values())
            if done != os.path.getsize(path):
                launch.problem("%s: %d bytes written on record, %d on disk" % (name, done, os.path.getsize(path)))
    return 1 + len(workers)


JOBS = ((job_simlaunch, 8), (job_short, 8), (job_subproc, 2), (job_vm_child, 2), (job_fork_exec, 1),
        (job_pool, 2))


def main():
    n = int(os.environ.get("STRESS_N", "500"))
    seed = int(os.environ.get("STRESS_SEED", str(int(time.time()))))
    random.seed(seed)
    for exe in (AGENT, RINGSIDE, os.path.join(BUILD, "simlaunch"), os.path.join(PROG, "short_exit")):
        if not os.path.exists(exe):
            print("stress: %s is missing (make test-build)" % exe)
            sys.exit(1)
    only = [j for j in os.environ.get("STRESS_JOBS", "").split(",") if j]
    jobs = [(job, wt) for job, wt in JOBS if not only or job.__name__[len("job_"):] in only]
    if not jobs:
        print("stress: STRESS_JOBS=%s names none of %s" % (",".join(only),
                                                          ", ".join(j.__name__[len("job_"):] for j, _ in JOBS)))
        sys.exit(1)
    kinds, weights = zip(*jobs)
    problems, kept = [], []
    counts = collections.Counter()
    t0 = time.monotonic()
    for i in range(n):
        job = random.choices(kinds, weights)[0]
        launch = Launch(i, job.__name__[len("job_"):])
        flush = random.choice(FLUSH_MS)
        env = traced_env(launch.out, **({"RINGSIDE_FLUSH_MS": flush} if flush else {}))
        if flush:
            launch.note = ", flush %d ms" % flush
        term = job in (job_simlaunch, job_short) and random.random() < TERM_SHARE
        counts["processes"] += job(launch, env, term)
        files = [dump(f) for f in trace_files(launch.out)]
        counts["files"] += len(files)
        counts["ends"] += sum(1 for t in files if t and t["end"])
        counts["records"] += sum(t["records"] for t in files if t)
        counts["terms"] += term
        counts[launch.kind] += 1
        if launch.problems:
            problems += launch.problems
            kept.append(launch.root)
        else:
            shutil.rmtree(launch.root, ignore_errors=True)
        if (i + 1) % 50 == 0:
            print("    %d launches, %d problems, %.0f s" % (i + 1, len(problems), time.monotonic() - t0), flush=True)
    for p in problems[:30]:
        print("    " + p)
    if kept:
        print("    kept: %s" % " ".join(kept[:20]))
    print("stress: seed %d, %d launches (%s), %d SIGTERMs, %d processes, %d trace files, %d end marks, "
          "%d records, %d problems, %.0f s" %
          (seed, n, ", ".join("%s %d" % (k.__name__[len("job_"):], counts[k.__name__[len("job_"):]])
                              for k in kinds), counts["terms"], counts["processes"], counts["files"],
           counts["ends"], counts["records"], len(problems), time.monotonic() - t0))
    sys.exit(1 if problems else 0)


main()
