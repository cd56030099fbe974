#!/usr/bin/env python3
"""fork and exec under the agent: a python3 multiprocessing pool of 4
workers (forked) each writing its own files, ended by Pool.terminate
(tests/programs/py_pool.py, which make stress also runs hundreds of
times), gives one trace per process,
children with role child and their parent's rank, and the bytes each
process wrote; a program that execs another gets a new file for the new
image, and the old one ends cleanly; a child forked late starts at its
fork (its meta's clock pair), not at its parent's start."""
import os

from rstest import PYTHON, check, cleanup, dump, finish, report, run, tempdir, trace_files, traced_env

POOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs", "py_pool.py")


LATE_FORK = r"""
import os, sys, time
time.sleep(0.5)
t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
r0 = time.time_ns()
pid = os.fork()
if pid == 0:
    open(os.path.join(sys.argv[1], "child.out"), "wb").write(b"c" * 4096)
    os._exit(0)
os.waitpid(pid, 0)
t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
print(pid, t0, t1, r0)
"""


def late_fork():
    """A child forked half a second after its parent started: its meta's
    start pair lies between the parent's clock readings around the fork."""
    out, work = tempdir("trace-late-fork"), tempdir("late-fork")
    script = os.path.join(work, "late.py")
    with open(script, "w") as f:
        f.write(LATE_FORK)
    p = run([PYTHON, script, work], env=traced_env(out))
    if check("late fork: program runs", p.returncode == 0, p.stderr.decode()[-300:]):
        pid, t0, t1, r0 = (int(x) for x in p.stdout.split())
        metas = {}
        for t in trace_files(out):
            recs, rc, _ = dump(t)
            for r in recs:
                if r["type"] == "meta":
                    metas[r["pid"]] = r
        m = metas.get(pid)
        start = m["start"]["mono_ns"] if m else None
        check("late fork: the child's start is its fork, on both clocks",
              m and t0 <= start <= t1 and abs(m["start"]["real_ns"] - (r0 + start - t0)) < 50_000_000,
              "child start %r, fork between %d and %d; parents' starts %r"
              % (m and m["start"], t0, t1, [x["start"] for k, x in metas.items() if k != pid]))
    cleanup(out, work)


def main():
    late_fork()
    out, work = tempdir("trace-fork"), tempdir("fork")
    p = run([PYTHON, POOL, work], env=traced_env(out, RANK=2, LOCAL_RANK=0, WORLD_SIZE=4))
    if check("pool runs", p.returncode == 0, p.stderr.decode()[-500:]):
        workers = set(int(x) for x in p.stdout.split())
        rep = report(out)
        procs = {pr["pid"]: pr for pr in rep["processes"]}
        check("one trace file per process", len(trace_files(out)) == len(procs), "files %d, processes %d"
              % (len(trace_files(out)), len(procs)))
        check("the parent is rank 2", any(pr["rank"] == 2 and pr["role"] == "rank" for pr in procs.values()),
              str([(pr["pid"], pr["rank"], pr["role"]) for pr in procs.values()]))
        check("every worker has a trace", workers <= set(procs), "workers %s, traced %s" % (workers, set(procs)))
        check("workers are children of rank 2",
              all(procs[w]["role"] == "child" and procs[w]["parent_rank"] == 2 and procs[w]["rank"] is None
                  for w in workers if w in procs),
              str([(w, procs.get(w, {}).get("role"), procs.get(w, {}).get("parent_rank")) for w in workers]))
        written = {}
        for pr in rep["processes"]:
            for f in pr["io"]["files"]:
                if os.path.dirname(f["path"]) == work and f["path"].endswith(".out"):
                    written[f["path"]] = written.get(f["path"], 0) + f["write_bytes"]
        truth = {os.path.join(work, n): os.path.getsize(os.path.join(work, n))
                 for n in os.listdir(work) if n.endswith(".out")}
        check("bytes written per file", written == truth,
              "recorded %s, truth %s" % (sorted(written.items())[:3], sorted(truth.items())[:3]))
        # (the agent's notices, on the program's stderr, say why a file has
        # no end mark: a final flush that timed out, a writer that failed)
        check("all traces complete", all(pr["trace"]["complete"] for pr in rep["processes"]),
              "%s; the program's stderr: %s" % (
                  [(pr["pid"], pr["role"], pr["trace"]["file"]) for pr in rep["processes"]
                   if not pr["trace"]["complete"]], p.stderr.decode(errors="replace")[-600:]))
    cleanup(out, work)

    # exec: a python process writes a file, then execs dd (same pid).
    out, work = tempdir("trace-exec"), tempdir("exec")
    code = ("import os\n"
            "open('before.out', 'wb').write(b'x' * 5000)\n"
            "os.execvp('dd', ['dd', 'if=/dev/zero', 'of=after.out', 'bs=1000', 'count=7', 'status=none'])\n")
    p = run([PYTHON, "-c", code], env=traced_env(out), cwd=work)
    if check("exec runs", p.returncode == 0, p.stderr.decode()[-500:]):
        files = trace_files(out)
        check("one file per image", len(files) == 2, str(files))
        ends, pids = [], set()
        for t in files:
            recs, rc, _ = dump(t)
            chunks = [r for r in recs if r["type"] == "chunk"]
            ends.append(bool(chunks) and chunks[-1]["end"])
            pids |= {r["pid"] for r in recs if r["type"] == "meta"}
        check("both images end cleanly", all(ends), str(ends))
        check("same pid for both images", len(pids) == 1, str(pids))
        got = report(out)
        w = {f["path"]: f["write_bytes"] for pr in got["processes"] for f in pr["io"]["files"]}
        check("bytes before and after exec", w.get(os.path.join(work, "before.out")) == 5000
              and w.get(os.path.join(work, "after.out")) == 7000, str(w))
    cleanup(out, work)

    # A file opened before fork: the child's writes to it carry its path.
    out, work = tempdir("trace-inherit"), tempdir("inherit")
    code = ("import os\n"
            "f = open('shared.out', 'wb', buffering=0)\n"
            "f.write(b'p' * 1000)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    f.write(b'c' * 3000)\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "f.write(b'q' * 500)\n"
            "f.close()\n")
    p = run([PYTHON, "-c", code], env=traced_env(out), cwd=work)
    if check("inherited file: program runs", p.returncode == 0, p.stderr.decode()[-500:]):
        target = os.path.join(work, "shared.out")
        got = report(out)
        by_role = {pr["role"]: {f["path"]: f["write_bytes"] for f in pr["io"]["files"]}
                   for pr in got["processes"]}
        check("inherited file: the child's writes are named and counted",
              by_role.get("child", {}).get(target) == 3000 and os.path.getsize(target) == 4500,
              str(by_role))
        check("inherited file: the parent's writes are counted",
              by_role.get("rank", by_role.get("other", {})).get(target) == 1500, str(by_role))
    cleanup(out, work)
    finish()


main()
