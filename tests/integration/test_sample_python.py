#!/usr/bin/env python3
"""Python frames in CPU samples under CPython 3.10, 3.11, 3.12 and 3.13
(pyenv's installs): three functions doing 60/30/10 of the work by
construction (tests/programs/py_hot3.py) appear by qualified name
(co_qualname from 3.11, co_name in 3.10) with shares within 5 points; in
a script calling C through ctypes, the C function (symbolised with
addr2line through the trace's module map) sits right under its Python
caller; a function whose code object is freed, its memory taken by new
code objects, before the agent's first timed flush keeps its own name (the
new ones never run, so no sample may name them); and a function whose code
object lands where a freed one was, after the agent has named that one, has
samples under its own name, about as many as the first (both spin for the
same CPU time)."""
import os

from rstest import cpython, PROG, ROOT, check, cleanup, finish, run, skip, tempdir, trace_files, traced_env
from samples import PYBIT, Trace, folded, shares, weighted_shares

SCRIPT = os.path.join(ROOT, "tests", "programs", "py_hot3.py")
LIB = os.path.join(PROG, "libspin.so")



def innermost_python(t, stack):
    for a in t.stacks.get(stack, []):
        if a & PYBIT:
            return t.strings.get(a & 0xFFFFFFFF)
    return None


def hot3(py, minor):
    label = "3.%d" % minor
    truth = {("py_hot3.py:Work.alpha" if minor >= 11 else "py_hot3.py:alpha"): 60.0,
             "py_hot3.py:beta": 30.0, "py_hot3.py:gamma": 10.0}
    args = [py, SCRIPT, "hot3", "2.5", "20000"]
    plain = run(args)
    out = tempdir("sample-py")
    p = run(args, env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    check(label + ": script runs, same output", p.returncode == 0 and p.stdout == plain.stdout,
          p.stderr.decode()[-300:])
    files = trace_files(out)
    if check(label + ": one trace file", len(files) == 1, "%d files" % len(files)):
        t = Trace(files[0])
        cpu = t.of_kind("cpu")
        names = [innermost_python(t, s["stack"]) for s in cpu]
        got, n = shares(names, truth)
        # 2.5 s of CPU: 250 samples or more at any kernel tick rate from
        # 100 Hz (CPU-time timers fire at most once a tick), enough for
        # shares within 5 points; the few outside are the interpreter's start.
        check(label + ": qualified names present", n >= 200 and n >= 0.95 * len(cpu),
              "%d of %d samples in %s; names seen: %s" % (n, len(cpu), list(truth),
                                                         sorted(set(filter(None, names)))[:8]))
        for fn, want in truth.items():
            check("%s: %s share %.0f%% within 5 points" % (label, fn, want),
                  abs(got[fn] - want) <= 5.0, "%.1f%% of %d samples" % (got[fn], n))
        callers = 0
        for s in cpu:
            frames = [t.strings.get(a & 0xFFFFFFFF) for a in t.stacks.get(s["stack"], []) if a & PYBIT]
            if frames and frames[0] in truth and "py_hot3.py:main" in frames and "py_hot3.py:<module>" in frames:
                callers += 1
        check(label + ": Python callers under them (main, <module>)", callers >= 0.9 * n,
              "%d of %d" % (callers, n))
        rows = folded(out)
        if check(label + ": ringside flame folded output", rows, "ringside flame failed"):
            leaf = lambda f: next((x for x in reversed(f) if x.startswith("py_hot3.py:")), None)
            got, w = weighted_shares(rows, leaf, truth)
            for fn, want in truth.items():
                check("%s: flame: %s share %.0f%% within 5 points" % (label, fn, want),
                      abs(got[fn] - want) <= 5.0, "%.1f%% of %.0f ms" % (got[fn], w / 1e6))
    cleanup(out)


def mixed(py, minor):
    label = "3.%d ctypes" % minor
    out = tempdir("sample-pyc")
    p = run([py, SCRIPT, "ctypes", LIB, "2", "3000000"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    check(label + ": script runs", p.returncode == 0, p.stderr.decode()[-300:])
    files = trace_files(out)
    if not files:
        check(label + ": trace written", False, "no trace")
        return
    t = Trace(files[0])
    in_c = under = 0
    for s in t.of_kind("cpu"):
        frames = t.stacks.get(s["stack"], [])
        if not frames or frames[0] & PYBIT or t.frame_name(frames[0], True) != "spin_c":
            continue
        in_c += 1
        py_frames = [t.strings.get(a & 0xFFFFFFFF) for a in frames if a & PYBIT]
        if py_frames[:2] == ["py_hot3.py:c_caller", "py_hot3.py:main"]:
            under += 1
    # about half of 2 s of CPU: 100 samples or more from a 100 Hz tick on
    check(label + ": samples in spin_c", in_c >= 100, "%d" % in_c)
    check(label + ": spin_c sits under the Python caller c_caller", under >= 0.95 * in_c,
          "%d of %d" % (under, in_c))
    rows = folded(out) or []
    spin = [f for f, _ in rows if "spin_c" in f]
    ok = [f for f in spin if [x for x in f[:f.index("spin_c")] if x.startswith("py_hot3.py:")][-1:] ==
          ["py_hot3.py:c_caller"]]
    check(label + ": flame: spin_c under c_caller", spin and len(ok) >= 0.95 * len(spin),
          "%d of %d stacks" % (len(ok), len(spin)))
    cleanup(out)


def freed(py, minor):
    label = "3.%d freed code" % minor
    out = tempdir("sample-pyf")
    # No timed flush during the run: the writer's first look at the samples
    # would otherwise come after the code object is gone.
    p = run([py, SCRIPT, "short", "0.8"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=999, RINGSIDE_FLUSH_MS=10000))
    check(label + ": script runs", p.returncode == 0 and p.stdout == b"True\n", p.stderr.decode()[-300:])
    files = trace_files(out)
    if not check(label + ": trace written", len(files) == 1, "%d files" % len(files)):
        return
    t = Trace(files[0])
    names = [innermost_python(t, s["stack"]) for s in t.of_kind("cpu")]
    hot = names.count("py_hot3.py:short_hot")
    # the churn functions are only defined (their module code runs), never called
    churn = sum(1 for x in names if x and x.startswith("churn.py:churn_"))
    unnamed = names.count("[python]")
    check(label + ": no sample names a function that never ran", churn == 0,
          "%d samples named churn.py:churn_..., %d short_hot" % (churn, hot))
    # 0.8 s of CPU: 80 samples or more from a 100 Hz tick on
    check(label + ": the freed function keeps its name", hot >= 40 and hot >= 0.9 * (hot + churn + unnamed),
          "%d short_hot, %d [python], %d churn.py:churn_..." % (hot, unnamed, churn))
    cleanup(out)


def reused(py, minor):
    label = "3.%d reused address" % minor
    out = tempdir("sample-pyr")
    p = run([py, SCRIPT, "reuse", "0.8"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    later = p.stdout.decode().strip()
    if not check(label + ": script runs", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    if later == "no reuse":
        skip(label, "no code object landed where the freed one was (20000 tries)")
        return
    files = trace_files(out)
    if not check(label + ": trace written", len(files) == 1, "%d files" % len(files)):
        return
    t = Trace(files[0])
    names = [innermost_python(t, s["stack"]) for s in t.of_kind("cpu")]
    first, second = names.count("py_hot3.py:first_hot"), names.count("py_hot3.py:" + later)
    # 0.8 s of CPU each: 80 samples or more from a 100 Hz tick on
    check(label + ": the first function's samples", first >= 40, "%d" % first)
    check(label + ": the second function's samples under its own name",
          second >= 40 and second >= 0.7 * first,
          "%d as %s, %d as first_hot" % (second, later, first))
    cleanup(out)


def main():
    for minor in (10, 11, 12, 13):
        py = cpython(minor)
        if not py:
            skip("python 3.%d" % minor, "no CPython 3.%d installed (pyenv)" % minor)
            continue
        hot3(py, minor)
        mixed(py, minor)
        freed(py, minor)
        reused(py, minor)
    finish()


main()
