#!/usr/bin/env python3
"""The suite's checks of a sampled share against a truth: every call of
share_check (tests/integration/sampled.py) under tests/, with what it
compares, its sample count in a run, and its bound in points and in
standard deviations; and the checks that look like one but do not go
through share_check.

    sampled_checks.py [--run NAME]... [--log FILE]... [ROOT]

--run NAME runs `sh tests/run.sh NAME` (BUILD from the environment, as
make check has it) with RS_SAMPLED_LOG set, for the counts; --log FILE
reads the lines sampled.py wrote to RS_SAMPLED_LOG=FILE in earlier runs
(tests/modern's too, which run.sh runs with --dir). A call no run reached
says "not run". n is the count of samples, or for a share of CPU time
their effective number. The floor column is the test's own bound in points
(its floor and allowance) and what that is in sd at the count of a run,
the median: a fixed bound under 4 sd is one that used to fail by chance.
Flags: "under 4 sd" (a bound narrower than 4 sd at the count of a run),
"few samples" (4 sd wider than 15 points at its median count: the test
needs more samples), "failed N" (runs that failed it), "not via
sampled.py" (a check whose name says a share within a bound, in a file
that samples CPU stacks). Prints one table and exits 1 when a check is
flagged."""
import ast
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

SDS, MAX_POINTS = 4.0, 15.0
SAMPLING = ("RINGSIDE_SAMPLE_HZ", "SAMPLE_HZ=", "cpu_samples", "of_kind(\"cpu\")", "weighted_shares")


def test_files(root):
    """The Python files under tests/, relative to root."""
    found = glob.glob(os.path.join(root, "tests", "**", "*.py"), recursive=True)
    return sorted(os.path.relpath(p, root) for p in found if not p.endswith("sampled.py"))


def callee(node):
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def calls(root):
    """([(file, first line, last line, name's source)] of share_check
    calls, [(file, line, name's source)] of other checks that name a share
    within a bound in files that sample)."""
    sites, others = [], []
    for rel in test_files(root):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            text = f.read()
        samples = any(s in text for s in SAMPLING)
        for node in ast.walk(ast.parse(text, rel)):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = ast.get_source_segment(text, node.args[0]) or "?"
            if callee(node) == "share_check":
                sites.append((rel, node.lineno, node.end_lineno, " ".join(name.split())))
            elif callee(node) == "check" and samples:
                lower = name.lower()
                if "share" in lower and any(w in lower for w in ("within", "points", "near")):
                    others.append((rel, node.lineno, " ".join(name.split())))
    return sorted(sites), sorted(others)


def run_tests(root, names, log):
    env = dict(os.environ, RS_SAMPLED_LOG=log)
    for name in names:
        p = subprocess.run(["sh", "tests/run.sh", name], cwd=root, env=env, capture_output=True, text=True)
        tail = p.stdout.strip().splitlines()[-1:] or ["no output"]
        print("# %s: %s" % (name, tail[0]), file=sys.stderr)


def read_logs(paths):
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            rows += [json.loads(line) for line in f if line.strip()]
    return rows


def site_of(row, sites):
    """The share_check call a logged row came from (its line within the call)."""
    for s in sites:
        if s[0] == row["file"] and s[1] <= row["line"] <= s[2]:
            return s
    return None


def fmt_sd(points, sd):
    return "%.1f" % (points / sd) if sd else "inf"


def table(sites, others, rows):
    by = {}
    for r in rows:
        s = site_of(r, sites)
        if s:
            by.setdefault(s, []).append(r)
    head = ("file:line", "compares", "runs", "n (median, min)", "floor pts (median sd)", "bound pts", "bound sd (min)",
            "flag")
    out, flagged = [], 0
    for s in sites:
        rs = by.get(s, [])
        where = "%s:%d" % (s[0].replace("tests/integration/", "").replace("tests/", ""), s[1])
        if not rs:
            out.append((where, s[3], "0", "-", "-", "-", "-", "not run"))
            continue
        ns = [r["n"] for r in rs]
        med = statistics.median(ns)
        worst = min(rs, key=lambda r: (r["bound"] / r["sd"]) if r["sd"] else float("inf"))
        flags = []
        if any(r["sd"] and r["bound"] < SDS * r["sd"] * (1 - 1e-9) for r in rs):
            flags.append("under 4 sd")
        if statistics.median(SDS * r["sd"] if r["n"] > 0 else float("inf") for r in rs) > MAX_POINTS:
            flags.append("few samples")
        if not all(r["ok"] for r in rs):
            flags.append("failed %d" % sum(1 for r in rs if not r["ok"]))
        flagged += bool(flags)
        names = list(dict.fromkeys(r["name"] for r in rs))
        what = names[0] + (" (+%d)" % (len(names) - 1) if len(names) > 1 else "")
        fixed = rs[0]["floor"] + rs[0]["allow"]
        in_sd = [fixed / r["sd"] for r in rs if r["sd"]]
        floor = "%g (%s)" % (fixed, "%.1f" % statistics.median(in_sd) if in_sd else "inf")
        out.append((where, what, str(len(rs)), "%d, %d" % (med, min(ns)), floor,
                    "%.1f-%.1f" % (min(r["bound"] for r in rs), max(r["bound"] for r in rs)),
                    fmt_sd(worst["bound"], worst["sd"]), ", ".join(flags)))
    for rel, line, name in others:
        where = "%s:%d" % (rel.replace("tests/integration/", "").replace("tests/", ""), line)
        out.append((where, name, "-", "-", "-", "-", "-", "not via sampled.py"))
        flagged += 1
    widths = [max(len(h), *(len(r[i]) for r in out)) if out else len(h) for i, h in enumerate(head)]
    for r in [head] + out:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    return flagged


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    logs, names, args = [], [], list(argv)
    while args:
        a = args.pop(0)
        if a in ("--log", "--run") and args:
            (logs if a == "--log" else names).append(args.pop(0))
        elif a.startswith("-"):
            sys.exit("usage: sampled_checks.py [--run NAME]... [--log FILE]... [ROOT]")
        else:
            root = a
    sites, others = calls(root)
    if names:
        fd, log = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        try:
            run_tests(root, names, log)
            logs.append(log)
            rows = read_logs(logs)
        finally:
            os.unlink(log)
    else:
        rows = read_logs(logs)
    flagged = table(sites, others, rows)
    print("%d share checks through sampled.py, %d others; %d flagged" % (len(sites), len(others), flagged))
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
