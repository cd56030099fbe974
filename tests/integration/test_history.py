#!/usr/bin/env python3
"""`ringside history`: runs indexed into SQLite, grouped into series, each
held against its series' band.

Ten simulated runs of one workload (simtrain, 2 ranks, 300 steps), the
sixth with a straggler (rank 1's kernels 1.3x) and the eighth with
checkpoints every 4 steps, both through SIMTRAIN_CONFIG (the run changes,
its command line does not: a configuration file's change), and three runs
of another workload (8 layers) between them. The database (read here with
Python's sqlite3, not ringside) holds 13 runs in two series; exactly the
sixth and eighth are regressions, the sixth's explanation naming rank 1 as
a straggler and the eighth's the checkpoints; `--check` exits 1 for those
two and 0 for the other eleven. The history page loads in headless
Chromium without errors: a section per series, every run linking to its
report (there), the two regressions to their diffs (there) and drawn red.
A second `history` reads nothing again; the root moved to another name
keeps every run and series. With 1,000 more runs in the database (rows
written here), the page still loads without errors and holds them all.
Runs with RINGSIDE_SERIES set are in the series it names, whatever their
command lines."""
import json
import os
import re
import shutil
import sqlite3
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, RINGSIDE, check, cleanup, finish, run, tempdir, traced_env  # noqa: E402
import headless  # noqa: E402

SIM = os.path.join(BUILD, "sim")


def launch(root, work, layers, config="", series=None):
    """One 2-rank simtrain run into root (two ranks: on a 2-core machine
    more would wait for a core, and their steps with them); returns its new
    job folder."""
    before = set(os.listdir(root)) if os.path.isdir(root) else set()
    env = traced_env(root, LD_LIBRARY_PATH=SIM, SIMTRAIN_CONFIG=config)
    env.pop("RINGSIDE_SERIES", None)
    if series:
        env["RINGSIDE_SERIES"] = series
    env["AGENT_SO"] = env.pop("LD_PRELOAD")
    p = run([os.path.join(BUILD, "simlaunch"), "-n", "2", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"',
             "sh", os.path.join(BUILD, "simtrain"), "--steps", "300", "--layers", str(layers), "--ckpt-dir", work],
            env=env, cwd=work, timeout=120)
    new = sorted(set(os.listdir(root)) - before)
    if p.returncode != 0 or len(new) != 1:
        return None, p.stderr.decode(errors="replace")[-300:]
    return os.path.join(root, new[0]), ""


def main():
    work = tempdir("history")
    root, db = os.path.join(work, "traces"), os.path.join(work, "h.db")
    os.makedirs(root)
    runs = []          # (job folder, workload, what was changed)
    for i in range(10):
        config = "--straggler 1:1.3" if i == 5 else "--ckpt-every 4 --ckpt-mb 8" if i == 7 else ""
        d, err = launch(root, work, 4, config)
        if not check("run %d of workload A%s" % (i + 1, " (%s)" % config if config else ""), d, err):
            finish()
        runs.append((d, "A", config))
        if i in (1, 4, 8):
            d, err = launch(root, work, 8)
            if not check("a run of workload B (8 layers)", d, err):
                finish()
            runs.append((d, "B", ""))
    p = run([RINGSIDE, "history", root, "--db", db])
    check("history indexes the root", p.returncode == 0, p.stderr.decode(errors="replace")[-400:])
    con = sqlite3.connect(db)
    rows = {os.path.basename(r[0]): r[1:] for r in con.execute(
        "SELECT trace_dir, series, verdict, why, report_dir FROM runs")}
    check("13 runs in the database", len(rows) == 13, str(sorted(rows)))
    # a row holds its report's figures (report.json, read here)
    ck = next(d for d, name, cfg in runs if cfg.startswith("--ckpt"))
    row = dict(zip(("report_dir", "per_step_ms", "sync_wait_pct", "transfer_pct", "checkpoint_pct", "findings"),
                   con.execute("SELECT report_dir, per_step_ms, sync_wait_pct, transfer_pct, checkpoint_pct, findings"
                               " FROM runs WHERE trace_dir=?", (ck,)).fetchone()))
    with open(os.path.join(row["report_dir"], "report.json")) as f:
        rj = json.load(f)
    ranks = [p["gpu"] for p in rj["processes"] if p.get("rank") is not None and p.get("gpu")]
    mean = {k: sum(g[k] for g in ranks) / len(ranks) for k in ("sync_wait_pct", "transfer_pct")}
    found = json.loads(row["findings"])

    def gain(x):
        # null in report.json (context) is left out of the row
        v = x.get("recoverable_pct")
        return -1 if v is None else v
    check("a run's row holds its report's figures: time per step, the late-rank wait, the transfer, "
          "checkpoints, the findings with what fixing them would give back",
          abs(row["per_step_ms"] - rj["steps"]["per_step_ms"]) < 1e-6 * rj["steps"]["per_step_ms"]
          and all(abs(row[k] - mean[k]) < 1e-3 for k in mean)
          and abs(row["checkpoint_pct"] - rj["checkpoint_pct"]) < 1e-6 and row["checkpoint_pct"] > 0
          and [x["id"] for x in found] == [x["id"] for x in rj["findings"]]
          and all(abs(gain(x) - gain(y)) < 1e-3 for x, y in zip(found, rj["findings"])),
          "%s %s" % (row, mean))
    series = {name: rows.get(os.path.basename(d), (None,))[0] for d, name, _ in runs}
    by_workload = {}
    for d, name, _ in runs:
        by_workload.setdefault(name, set()).add(rows.get(os.path.basename(d), (None,))[0])
    check("two series, one per workload", len(by_workload["A"]) == 1 and len(by_workload["B"]) == 1
          and by_workload["A"] != by_workload["B"], str(by_workload))
    flagged = [(name, cfg) for d, name, cfg in runs
               if rows.get(os.path.basename(d), (0, ""))[1] == "regression"]
    check("exactly the straggler's and the checkpoints' runs are regressions",
          sorted(flagged) == sorted([("A", "--straggler 1:1.3"), ("A", "--ckpt-every 4 --ckpt-mb 8")]),
          "flagged %s; verdicts %s" % (flagged, [(name, cfg, rows.get(os.path.basename(d), (0, "?"))[1])
                                                 for d, name, cfg in runs]))
    for d, name, cfg in runs:
        why = rows.get(os.path.basename(d), ("", "", ""))[2] or ""
        if cfg.startswith("--straggler"):
            check("the straggler's run is explained by rank 1", "rank 1 is a straggler" in why, why)
        if cfg.startswith("--ckpt"):
            check("the checkpoints' run is explained by checkpoints", "checkpoints" in why, why)
    for d, name, cfg in runs:
        q = run([RINGSIDE, "history", root, "--db", db, "-q", "--check", d])
        want = 1 if cfg else 0
        check("--check %s run%s: exit %d, one line" % (name, " (%s)" % cfg if cfg else "", want),
              q.returncode == want and len(q.stdout.decode().splitlines()) == 1,
              "status %d: %s %s" % (q.returncode, q.stdout.decode()[-300:], q.stderr.decode()[-200:]))
    q = run([RINGSIDE, "history", root, "--db", db, "-q", "--check", os.path.join(work, "nowhere")])
    check("--check of no run: status 1, saying so", q.returncode == 1 and b"no such run" in q.stderr,
          q.stderr.decode()[-200:])
    page = os.path.join(work, "ringside-history.html")
    with headless.Browser() as b:
        b.open(page)
        got = b.eval("(function(){var a=Array.prototype.map.call(document.querySelectorAll('a'),function(x){"
                     "return x.getAttribute('href');});return {sections:document.querySelectorAll('section').length,"
                     "links:a,red:document.querySelectorAll('circle[fill=\"#cc3311\"]').length};})()")
        problems = b.problems()
    links = [urllib.parse.unquote(x) for x in got.get("links", [])]
    reports = [x for x in links if x.endswith("/index.html")]
    diffs = [x for x in links if x.endswith("/diff.html")]
    check("the page: two series, loads without errors", got.get("sections") == 2 and not problems,
          "%s %s" % (got.get("sections"), problems))
    check("the page links every run's report, each there", len(reports) == 13 and
          all(os.path.exists(os.path.join(work, x)) for x in reports), str(reports)[:300])
    check("the page links the two regressions' diffs, each there, and draws them red",
          len(diffs) == 2 and all(os.path.exists(os.path.join(work, x)) for x in diffs) and got.get("red") == 2,
          "%s red %s" % (diffs, got.get("red")))
    p = run([RINGSIDE, "history", root, "--db", db])
    check("a second history reads nothing again", p.returncode == 0 and b"0 runs indexed, 13 unchanged"
          in p.stderr, p.stderr.decode()[-300:])
    moved = os.path.join(work, "renamed")
    shutil.move(root, moved)
    p = run([RINGSIDE, "history", moved, "--db", db])
    after = {r[0]: r[1] for r in con.execute("SELECT run_key, series FROM runs")}
    check("the root renamed: the same runs and series, nothing read again",
          p.returncode == 0 and len(after) == 13 and set(after.values()) == set(series.values())
          and b"0 runs indexed, 13 unchanged" in p.stderr, p.stderr.decode()[-300:])
    q = run([RINGSIDE, "history", moved, "--db", db, "-q", "--check",
             os.path.join(moved, os.path.basename(runs[0][0]))])
    check("--check finds a run under its new folder", q.returncode == 0, q.stdout.decode()[-200:])
    # 1,000 more runs of a third series, as rows (a copy of one run's, its start moved on)
    cols = [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    one = dict(zip(cols, con.execute("SELECT * FROM runs LIMIT 1").fetchone()))
    for i in range(1000):
        row = dict(one, run_key="many-%d" % i, series="w4: many", start_s=one["start_s"] + 60 * (i + 1),
                   per_step_ms=one["per_step_ms"] * (1 + 0.01 * (i % 7)))
        con.execute("INSERT INTO runs(%s) VALUES(%s)" % (",".join(row), ",".join("?" * len(row))), list(row.values()))
    con.commit()
    p = run([RINGSIDE, "history", moved, "--db", db, "-q"])
    with headless.Browser() as b:
        b.open(page)
        rows = b.eval("document.querySelectorAll('#series-0 tbody tr').length")
        problems = b.problems()
    check("1,013 runs: the page loads without errors, the big series' 1,000 runs in it",
          p.returncode == 0 and rows == 1000 and not problems, "%s rows; %s; %s" % (rows, problems,
                                                                                    p.stderr.decode()[-200:]))
    # RINGSIDE_SERIES names a series whatever the command line
    named = [launch(moved, work, layers, series="nightly")[0] for layers in (4, 8)]
    p = run([RINGSIDE, "history", moved, "--db", db, "-q"])
    got = [con.execute("SELECT series FROM runs WHERE trace_dir=?", (d,)).fetchone() for d in named]
    check("RINGSIDE_SERIES: two workloads' runs in the series it names", all(named) and
          got == [("nightly",), ("nightly",)], "%s %s" % (got, p.stderr.decode()[-200:]))
    con.close()
    cleanup(work)
    finish()


if __name__ == "__main__":
    main()
