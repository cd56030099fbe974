#!/usr/bin/env python3
"""The run history's part of `make bench` (`make bench-history` alone).

A simulated 2-rank simtrain job (STEPS steps) under the agent, then, best
of ROUNDS alternating rounds:
  1. a new run indexed: `ringside history ROOT --db DB` (the run not in DB)
     against `ringside report RUN -o OUT` of the same run; the target is
     the report's time plus 100 ms;
  2. 1,000 runs in DB (rows copied from the indexed one, with sqlite3 here)
     and nothing new: `ringside history ROOT --db DB` (judging every series
     and writing the page); the target is under 1 s;
  3. `--check RUN` on that database.
Usage: tools/bench/bench_history.py [BUILD]   (env: ROUNDS=3, STEPS=600)"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
RINGSIDE = os.path.join(BUILD, "ringside")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
STEPS = int(os.environ.get("STEPS", "600"))


def timed(cmd):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode not in (0,):
        sys.exit("bench_history: %s: status %d: %s" % (" ".join(cmd), p.returncode, p.stderr.decode()[-300:]))
    return time.monotonic() - t0


def main():
    work = tempfile.mkdtemp(prefix="ringside-bench-history.")
    try:
        root = os.path.join(work, "trace")
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(os.path.join(BUILD, "sim")), RINGSIDE_OUT=root,
                   AGENT_SO=os.path.abspath(os.path.join(BUILD, "libagent.so")))
        for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "RINGSIDE_JOB"):
            env.pop(k, None)
        subprocess.run([os.path.join(BUILD, "simlaunch"), "-n", "2", "--", "sh", "-c",
                        'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", os.path.join(BUILD, "simtrain"),
                        "--steps", str(STEPS)], env=env, cwd=work, check=True, capture_output=True)
        run = os.path.join(root, os.listdir(root)[0])
        rep, idx, db = [], [], os.path.join(work, "h.db")
        for r in range(ROUNDS):
            shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
            rep.append(timed([RINGSIDE, "report", run, "-o", os.path.join(work, "out"), "-q"]))
            for f in (db, os.path.join(work, "ringside-history.html")):
                if os.path.exists(f):
                    os.unlink(f)
            shutil.rmtree(os.path.join(work, "ringside-history-reports"), ignore_errors=True)
            idx.append(timed([RINGSIDE, "history", root, "--db", db, "-q"]))
        con = sqlite3.connect(db)
        cols = [c[1] for c in con.execute("PRAGMA table_info(runs)")]
        one = dict(zip(cols, con.execute("SELECT * FROM runs").fetchone()))
        for i in range(1000):
            row = dict(one, run_key="bench-%d" % i, start_s=one["start_s"] + 60 * (i + 1),
                       per_step_ms=one["per_step_ms"] * (1 + 0.01 * (i % 7)), verdict=None, why=None)
            con.execute("INSERT INTO runs(%s) VALUES(%s)" % (",".join(row), ",".join("?" * len(row))),
                        list(row.values()))
        con.commit()
        con.close()
        page = [timed([RINGSIDE, "history", root, "--db", db, "-q"]) for _ in range(ROUNDS)]
        check = [timed([RINGSIDE, "history", root, "--db", db, "-q", "--check", run]) for _ in range(ROUNDS)]
        print("\n### The run history (ringside history; %d-rank simtrain, %d steps; best of %d)\n" % (2, STEPS, ROUNDS))
        print("| case | time | target |")
        print("|---|---|---|")
        print("| `report RUN -o OUT` | %.3f s | - |" % min(rep))
        print("| a new run indexed (`history ROOT`, its report included) | %.3f s (report + %.0f ms) | report + 100 ms |"
              % (min(idx), 1e3 * (min(idx) - min(rep))))
        print("| 1,001 runs, nothing new: series judged, page written | %.3f s | under 1 s |" % min(page))
        print("| 1,001 runs: `--check RUN` | %.3f s | - |" % min(check))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
