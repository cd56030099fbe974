"""What every launcher test checks (test_launch_*.py): a launcher started
with the agent in LD_PRELOAD runs four ranks of tests/programs/rank_io.c,
and the trace folder must hold four rank files, ranks 0..3 as the launcher
numbered them (the variables each rank printed), in one job folder named
from the launcher's job id, with the bytes each rank's file holds. The
launcher itself runs unharmed: exit status 0, the ranks' output intact, no
rank file of its own, no files from its children between fork and exec,
and no delay of its own."""
import collections
import os
import re
import statistics
import subprocess
import time

from rstest import BUILD, PROG, check, dump, report, report_problems, run, trace_files

RANK_IO = os.path.join(PROG, "rank_io")
BYTES = 100000   # rank R writes BYTES x (R + 1)
NRANKS = 4
TRACE_NAME = re.compile(r"^(rank-(\d+)|proc)\.[^.]+\.(\d+)(\.\d+)?\.trace\.lz4$")


def rank_io_cmd(work, rank_var, *more_vars):
    """The traced program's argv: it prints pid=, parent= and the named variables."""
    return [RANK_IO, work, str(BYTES), rank_var] + list(more_vars)


def launch(cmd, env, cwd, timeout=60):
    """Runs the launcher; (its result, its pid). Killed if it outlives timeout."""
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stdout, stderr = b"", b"launcher still running after %d s" % timeout
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr), p.pid


def parse_ranks(stdout):
    """[{'pid': ..., VAR: value...}] from rank_io's lines; None if any other
    line is there."""
    rows = []
    for line in stdout.decode(errors="replace").splitlines():
        if not line.startswith("pid="):
            return None
        rows.append(dict(kv.split("=", 1) for kv in line.split()))
    return rows


def meta_of(trace):
    recs, rc, _ = dump(trace)
    metas = [r for r in recs if r["type"] == "meta"]
    return metas[0] if rc == 0 and metas else None


def record_kinds(trace):
    """What a trace holds, counted by record type (samples by kind and
    reason, I/O by operation): what made a process leave a file."""
    recs, _, _ = dump(trace)
    kinds = collections.Counter()
    for r in recs:
        if r["type"] in ("chunk", "meta", "string", "stack", "module", "thread"):
            continue
        kinds[":".join(str(r.get(k)) for k in ("type", "kind", "reason", "op") if r.get(k) is not None)] += 1
    return dict(kinds)


def check_launch(name, p, out, work, rank_var, local_var, size_var, job_of, is_launcher, parent):
    """Checks one traced launch. p: the finished launcher (subprocess result);
    job_of(row): the job folder name the launcher's variables give;
    is_launcher(meta): whether a trace without a rank is one the launcher's
    own processes may leave (mpirun, orted and srun read their configuration
    and write the ranks' output to a file); None: no such trace (simlaunch
    touches no file). parent: the name of the process that must have started
    the ranks (the launcher, or its daemon)."""
    err = p.stderr.decode(errors="replace")
    if not check(name + ": launcher exits 0", p.returncode == 0, "status %d: %s" % (p.returncode, err[-800:])):
        return
    check(name + ": agent silent", "ringside:" not in err, err[-800:])
    rows = parse_ranks(p.stdout)
    ok = rows is not None and len(rows) == NRANKS and \
        sorted(int(r.get(rank_var, -1)) for r in rows) == list(range(NRANKS))
    if not check(name + ": ranks' output intact", ok, p.stdout.decode(errors="replace")[-800:]):
        return
    by_pid = {int(r["pid"]): r for r in rows}
    check(name + ": ranks started by " + parent, all(r["parent"] == parent for r in rows),
          str(sorted(r["parent"] for r in rows)))

    files = trace_files(out)
    rank_files, other_files = [], []
    for t in files:
        m = TRACE_NAME.match(os.path.basename(t))
        (rank_files if m and m.group(2) is not None else other_files).append(t)
    check(name + ": four rank files", len(rank_files) == NRANKS, str(files))
    dirs = {os.path.dirname(t) for t in rank_files}
    jobs = {job_of(r) for r in rows}
    check(name + ": one job folder, named from the launcher's job id",
          len(dirs) == 1 and len(jobs) == 1 and {os.path.basename(d) for d in dirs} == jobs,
          "folders %s, job ids %s" % (sorted(dirs), sorted(jobs)))

    problems = []
    for t in rank_files:
        m = TRACE_NAME.match(os.path.basename(t))
        pid, frank = int(m.group(3)), int(m.group(2))
        row = by_pid.get(pid)
        meta = meta_of(t)
        if row is None:
            problems.append("%s: pid %d is not one of the ranks %s" % (t, pid, sorted(by_pid)))
        elif meta is None:
            problems.append("%s: no meta record" % t)
        else:
            want = (int(row[rank_var]), int(row[local_var]), int(row[size_var]), "rank")
            got = (meta["rank"], meta["local_rank"], meta["world_size"], meta["role"])
            if want != got or frank != want[0]:
                problems.append("%s: rank/local/world/role %s (file name rank %d), launcher says %s"
                                % (os.path.basename(t), got, frank, want))
    report_problems(name + ": rank, local rank, world size as the launcher gave", problems)

    problems = []
    for t in other_files:
        meta = meta_of(t)
        if is_launcher is None or meta is None or not is_launcher(meta) or meta["rank"] != -1 \
                or meta["role"] != "other":
            problems.append("%s: %s, records %s" % (t, meta and {k: meta[k] for k in ("pid", "rank", "role", "argv")},
                                                    record_kinds(t)))
    report_problems(name + ": no other trace but the launcher's own", problems)

    if len(dirs) != 1:
        return
    rep = report(dirs.pop())
    procs = {pr["pid"]: pr for pr in rep["processes"]}
    check(name + ": report has the four ranks", sorted(procs) == sorted(by_pid) and
          sorted(pr["rank"] for pr in procs.values()) == list(range(NRANKS)),
          str([(pr["pid"], pr["rank"]) for pr in rep["processes"]]))
    check(name + ": every rank's trace complete",
          all(pr["trace"]["complete"] and not pr["trace"]["cut_short"] for pr in procs.values()),
          str([pr["trace"] for pr in procs.values()]))
    problems = []
    for pid in by_pid:
        path = os.path.join(work, "rank_io.%d.out" % pid)
        size = os.path.getsize(path) if os.path.exists(path) else None
        pr = procs.get(pid)
        if size is None or pr is None:
            problems.append("pid %d: file size %s, in report %s" % (pid, size, pr is not None))
            continue
        per_file = {f["path"]: (f["read_bytes"], f["write_bytes"]) for f in pr["io"]["files"]}
        got = (pr["io"]["read_bytes"], pr["io"]["write_bytes"], per_file.get(path))
        if got != (size, size, (size, size)):
            problems.append("pid %d: read, written, per file %s; file size %d" % (pid, got, size))
    report_problems(name + ": bytes read and written equal the file sizes", problems)


def check_no_delay(name, cmd, env_agent, env_none, cwd, rounds=3):
    """The whole launch under the agent is not slower than without it by more
    than noise: the median of `rounds` alternating runs within 2x + 0.5 s. A
    launcher that waits on the agent (a flush that never comes) fails."""
    t_agent, t_none, bad = [], [], []
    for _ in range(rounds):
        for env, acc in ((env_none, t_none), (env_agent, t_agent)):
            t0 = time.monotonic()
            p = run(cmd, env=env, cwd=cwd, timeout=60)
            acc.append(time.monotonic() - t0)
            if p.returncode != 0:
                bad.append("status %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-300:]))
    a, n = statistics.median(t_agent), statistics.median(t_none)
    print("    %s: median wall %.3f s with the agent, %.3f s without" % (name, a, n))
    check(name + ": no added delay", not bad and a <= 2 * n + 0.5,
          "; ".join(bad) if bad else "%.3f s with the agent, %.3f s without" % (a, n))


__all__ = ["BUILD", "RANK_IO", "BYTES", "NRANKS", "rank_io_cmd", "launch", "parse_ranks", "check_launch",
           "check_no_delay", "meta_of"]
