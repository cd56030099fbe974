#!/usr/bin/env python3
"""Python in the flame graph, through `ringside flame` (folded output), under
CPython 3.10 to 3.13 (pyenv's installs): tests/programs/py_hot3.py's three
functions doing 60/30/10 of the work by construction appear by qualified
name with shares of the CPU time within 5 points or 4 sd (sampled.py), under
their Python callers; and in its ctypes mode, the C function spin_c sits under the Python
function that called it, with no other Python frame between them. Frame
names from a hand-made trace: the agent's "pkg/mod.py:qualname:LINE" lose
the line in `ringside flame` and `ringside report`'s SVG unless --lines is
given, and names written before lines were recorded stay as they are."""
import os

from rstest import BUILD, cpython, PROG, RINGSIDE, ROOT, check, cleanup, finish, run, skip, tempdir, traced_env
from sampled import cpu_samples, samples_in, share_check

SCRIPT = os.path.join(ROOT, "tests", "programs", "py_hot3.py")
LIB = os.path.join(PROG, "libspin.so")



def folded(out, label, extra=()):
    """{stack: weight} of the CPU flame graph of the traces under out."""
    path = os.path.join(out, "cpu.folded")
    p = run([RINGSIDE, "flame", out, "--kind", "cpu", "-o", path, "-q"] + list(extra))
    if not check(label + ": ringside flame runs", p.returncode == 0, p.stderr.decode(errors="replace")):
        return {}
    got = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, w = line.rstrip("\n").rpartition(" ")
            got[stack] = got.get(stack, 0) + int(w)
    return got


def hot3(py, minor):
    label = "flame 3.%d" % minor
    alpha = "py_hot3.py:Work.alpha" if minor >= 11 else "py_hot3.py:alpha"
    truth = {alpha: 60.0, "py_hot3.py:beta": 30.0, "py_hot3.py:gamma": 10.0}
    out = tempdir("flame-py")
    p = run([py, SCRIPT, "hot3", "2", "20000"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    if check(label + ": script runs", p.returncode == 0, p.stderr.decode()[-300:]):
        got = folded(out, label)
        frames = [k.split(";") for k in got]
        ws = list(got.values())
        in_hot = sum(w for f, w in zip(frames, ws) if set(f) & set(truth))
        total = sum(ws)
        check(label + ": the three functions hold most CPU time", total and in_hot >= 0.9 * total,
              "%d of %d ns; frames seen: %s" % (in_hot, total, sorted(set(n for f in frames for n in f
                                                                         if ".py:" in n))[:10]))
        n = samples_in(in_hot, cpu_samples(out))
        for fn, want in truth.items():
            w = sum(w for f, w in zip(frames, ws) if fn in f)
            share_check("%s: %s share" % (label, fn), 100.0 * w / in_hot if in_hot else 0, want, n, floor=5.0)
        under = sum(w for f, w in zip(frames, ws)
                    if set(f) & set(truth) and "py_hot3.py:main" in f and "py_hot3.py:<module>" in f
                    and f.index("py_hot3.py:<module>") < f.index("py_hot3.py:main") <
                    min(f.index(n) for n in truth if n in f))
        check(label + ": under <module> and main", in_hot and under >= 0.9 * in_hot,
              "%d of %d ns" % (under, in_hot))
    cleanup(out)


def mixed(py, minor):
    label = "flame 3.%d ctypes" % minor
    out = tempdir("flame-pyc")
    p = run([py, SCRIPT, "ctypes", LIB, "1", "3000000"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    if check(label + ": script runs", p.returncode == 0, p.stderr.decode()[-300:]):
        got = folded(out, label)
        in_c = under = 0
        for stack, w in got.items():
            f = stack.split(";")
            if "spin_c" not in f:
                continue
            in_c += w
            i = f.index("spin_c")
            py_above = [k for k, n in enumerate(f[:i]) if ".py:" in n]
            if py_above and f[py_above[-1]] == "py_hot3.py:c_caller":
                under += w
        check(label + ": spin_c in the flame graph", in_c > 0, "no spin_c frame")
        check(label + ": spin_c under its Python caller c_caller", in_c and under >= 0.95 * in_c,
              "%d of %d ns" % (under, in_c))
    cleanup(out)


def lines_or_not():
    label = "flame python names"
    work = tempdir("flame-pynames")
    job = os.path.join(work, "job")
    os.makedirs(job)
    spec = ["meta 0 100",
            "stack 1 py:pkg/sub/mod.py:func:8 py:work.py:main:17",
            "stack 2 py:pkg/sub/mod.py:func:9 py:work.py:main:17",
            # as agents before lines wrote them; a qualname ending in digits
            "stack 3 py:old.py:f2 py:old.py:%3Cmodule%3E",
            "sample cpu 100 1 3000 10", "sample cpu 100 2 1000 20", "sample cpu 100 3 500 30"]
    trace = os.path.join(job, "rank-0.testhost.100.trace.lz4")
    p = run([os.path.join(BUILD, "tests", "flame_mktrace"), trace], input="\n".join(spec).encode())
    if not check(label + ": hand-made trace written", p.returncode == 0, p.stderr.decode()):
        cleanup(work)
        return
    old = {"old.py:<module>;old.py:f2": 500}
    want = {False: dict(old, **{"work.py:main;pkg/sub/mod.py:func": 4000}),
            True: dict(old, **{"work.py:main:17;pkg/sub/mod.py:func:8": 3000,
                               "work.py:main:17;pkg/sub/mod.py:func:9": 1000})}
    for lines in (False, True):
        got = folded(job, label + (" --lines" if lines else ""), ["--lines"] if lines else [])
        check("%s: flame%s" % (label, " --lines" if lines else ""), got == want[lines],
              "got %s, want %s" % (got, want[lines]))
        out = os.path.join(work, "report-%d" % lines)
        p = run([RINGSIDE, "report", job, "-o", out, "-q"] + (["--lines"] if lines else []))
        svg = ""
        if p.returncode == 0 and os.path.exists(os.path.join(out, "flame-cpu.svg")):
            with open(os.path.join(out, "flame-cpu.svg"), encoding="utf-8") as f:
                svg = f.read()
        has_line = "pkg/sub/mod.py:func:8" in svg
        check("%s: report%s: flame-cpu.svg %s the line" % (label, " --lines" if lines else "",
                                                          "has" if lines else "lacks"),
              "pkg/sub/mod.py:func" in svg and has_line == lines,
              "report exit %d, %s" % (p.returncode, p.stderr.decode(errors="replace")[-200:]))
    cleanup(work)


def main():
    lines_or_not()
    for minor in (10, 11, 12, 13):
        py = cpython(minor)
        if not py:
            skip("flame python 3.%d" % minor, "no CPython 3.%d installed (pyenv)" % minor)
            continue
        hot3(py, minor)
        mixed(py, minor)
    finish()


main()
