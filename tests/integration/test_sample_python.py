#!/usr/bin/env python3
"""Python frames in CPU samples under CPython 3.10, 3.11, 3.12 and 3.13
(pyenv's installs): three functions doing 60/30/10 of the work by
construction (tests/programs/py_hot3.py) appear by qualified name
(co_qualname from 3.11, co_name in 3.10) with shares within 5 points or 4
sd (sampled.py); in a script calling C through ctypes, the C function
(symbolised with addr2line through the trace's module map) sits right under
its Python caller; a function whose code object is freed, its memory taken
by new code objects, before the agent's first timed flush keeps its own
name (the new ones never run, so no sample may name them); functions that
live a millisecond each, their memory taken at once, keep their names while
the agent's writer is held off (a busy machine); and a function whose code
object lands where a freed one was, after the agent has named that one, has
samples under its own name, about as many as the first (both spin for the
same CPU time).

Names and lines (also under Debian's /usr/bin/python3): a package this test
writes to a folder on PYTHONPATH is named by its path below that folder
(pkg/sub/mod.py:func), the script by its path below its own folder
(work.py:main), a standard library function by its path below the sys.path
entry Python itself says it came from (json/decoder.py:...); with --lines
the spinning function's line is the line of its loop in the file written
here, and its caller's the line of the call. With Debian's torch, an
nn.Linear forward/backward loop shows torch/nn/modules/linear.py:Linear.forward
and torch/autograd/__init__.py:backward (as Python's inspect names the
files below the sys.path entry)."""
import os

from rstest import cpython, PROG, ROOT, check, cleanup, finish, run, skip, tempdir, trace_files, traced_env
from sampled import effective_n, share_check
from samples import PYBIT, Trace, folded, py_split, shares, weighted_shares

SCRIPT = os.path.join(ROOT, "tests", "programs", "py_hot3.py")
LIB = os.path.join(PROG, "libspin.so")



def innermost_python(t, stack):
    frames = t.py_frames(stack)
    return frames[0][0] if frames else None


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
        # 100 Hz (CPU-time timers fire at most once a tick), 4 sd within 13
        # points at 50%; the few outside are the interpreter's start.
        check(label + ": qualified names present", n >= 200 and n >= 0.95 * len(cpu),
              "%d of %d samples in %s; names seen: %s" % (n, len(cpu), list(truth),
                                                         sorted(set(filter(None, names)))[:8]))
        for fn, want in truth.items():
            share_check("%s: %s share" % (label, fn), got[fn], want, n, floor=5.0)
        callers = 0
        for s in cpu:
            frames = [name for name, _ in t.py_frames(s["stack"])]
            if frames and frames[0] in truth and "py_hot3.py:main" in frames and "py_hot3.py:<module>" in frames:
                callers += 1
        check(label + ": Python callers under them (main, <module>)", callers >= 0.9 * n,
              "%d of %d" % (callers, n))
        rows = folded(out)
        if check(label + ": ringside flame folded output", rows, "ringside flame failed"):
            leaf = lambda f: next((x for x in reversed(f) if x.startswith("py_hot3.py:")), None)
            # weighted by CPU time: the same samples as above, as many as
            # their weights make them
            got, _ = weighted_shares(rows, leaf, truth)
            flame_n = effective_n([s["weight_ns"] for s, name in zip(cpu, names) if name in truth])
            for fn, want in truth.items():
                share_check("%s: flame: %s share" % (label, fn), got[fn], want, flame_n, floor=5.0)
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
        py_frames = [name for name, _ in t.py_frames(s["stack"])]
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


def fleeting(py, name):
    """Functions that live a millisecond, freed and their memory taken at
    once, while the writer is held off (py_hot3.py fleeting ... starve):
    each sample names the function it caught."""
    label = name + " fleeting code"
    out = tempdir("sample-pyl")
    p = run([py, SCRIPT, "fleeting", "0.6", "1", "starve"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=499))
    ran = p.stdout.decode().split()
    if not check(label + ": script runs, the writer held off", p.returncode == 0 and len(ran) == 2,
                 p.stdout.decode() + p.stderr.decode()[-300:]):
        return
    nfuncs, share = int(ran[0]), float(ran[1])
    files = trace_files(out)
    if not check(label + ": trace written", len(files) == 1, "%d files" % len(files)):
        return
    t = Trace(files[0])
    cpu = t.of_kind("cpu")
    stacks = [[f[0] for f in t.py_frames(s["stack"])] for s in cpu]
    unnamed = sum(1 for st in stacks if "[python]" in st)
    named = [st[0] for st in stacks if st and st[0].startswith("fleeting.py:fleeting_")]
    check(label + ": no Python frame left unnamed", stacks and not unnamed,
          "%d of %d samples hold [python]" % (unnamed, len(stacks)))
    # the script's own clock says how much of its time the functions took
    weight = sum(s["weight_ns"] for s in cpu)
    got = sum(s["weight_ns"] for s, st in zip(cpu, stacks) if st and st[0].startswith("fleeting.py:fleeting_"))
    got /= max(weight, 1)
    check(label + ": samples name only functions that ran", all(int(n.rsplit("_", 1)[1]) < nfuncs for n in named),
          "%s; %d functions ran" % (named[:5], nfuncs))
    # 20 points more below: a code object made where a freed one was,
    # before the writer came by, is named as the first one sampled there
    # (the script's next module code where a function was: a few points,
    # 18 once); 10 points either way as samples fall on the kernel's tick.
    share_check(label + ": samples in the fleeting functions under their names (the script's clock)",
                100 * got, 100 * share, effective_n([s["weight_ns"] for s in cpu]), floor=10.0, allow_below=20.0)
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
    cpu = t.of_kind("cpu")
    names = [innermost_python(t, s["stack"]) for s in cpu]
    first, second = names.count("py_hot3.py:first_hot"), names.count("py_hot3.py:" + later)
    # 0.8 s of CPU each: 80 samples or more from a 100 Hz tick on
    check(label + ": the first function's samples", first >= 40, "%d" % first)
    # both spin for the same CPU time by the script's clock: halves of the
    # two's sampled CPU time (weights, as the two run one after the other)
    two = [(s["weight_ns"], name == "py_hot3.py:first_hot") for s, name in zip(cpu, names)
           if name in ("py_hot3.py:first_hot", "py_hot3.py:" + later)]
    total = sum(w for w, _ in two)
    share_check(label + ": the second function's share of the two's CPU time under its own name",
                100.0 * sum(w for w, is_first in two if not is_first) / total if total else 0.0, 50.0,
                effective_n([w for w, _ in two]), floor=5.0,
                detail="%d samples as %s, %d as first_hot" % (second, later, first))
    cleanup(out)


MOD = """import time


def func(seconds):
    end = time.process_time() + seconds
    n = 0
    while True:
        for i in range(20000): n += i & 1  # the spin loop
        if time.process_time() > end:
            return n
"""

WORK = """import json
import os
import sys
import time

from pkg.sub import mod


def decode(seconds):
    text = json.dumps([{"k": i, "v": [i, str(i)]} for i in range(2000)])
    end = time.process_time() + seconds
    while time.process_time() < end:
        json.loads(text)


def main():
    mod.func(float(sys.argv[1]))  # the call
    decode(float(sys.argv[2]))
    # what Python says: json.decoder's file below the sys.path entry it
    # came from, and the qualified name of the function decode spends in
    f = os.path.realpath(json.decoder.__file__)
    entry = max((os.path.realpath(p) for p in sys.path if p and f.startswith(os.path.realpath(p) + os.sep)),
                key=len)
    code = json.decoder.JSONDecoder.raw_decode.__code__
    print(os.path.relpath(f, entry) + ":" + getattr(code, "co_qualname", code.co_name))


main()
"""


def line_of(text, marker):
    """The 1-based line of text that holds marker."""
    return next(i + 1 for i, l in enumerate(text.splitlines()) if marker in l)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def package(py, label):
    label += " names"
    """Names below the sys.path entry, and lines, for a package and a script
    written here and a standard library module."""
    work = tempdir("sample-pkg")
    lib, app = os.path.join(work, "lib"), os.path.join(work, "app")
    for init in ("pkg/__init__.py", "pkg/sub/__init__.py"):
        write(os.path.join(lib, init), "")
    mod_path, script = os.path.join(lib, "pkg", "sub", "mod.py"), os.path.join(app, "work.py")
    write(mod_path, MOD)
    write(script, WORK)
    func = os.path.relpath(mod_path, lib).replace(os.sep, "/") + ":func"
    main = os.path.relpath(script, app) + ":main"
    loop, call = line_of(MOD, "# the spin loop"), line_of(WORK, "# the call")
    out = os.path.join(work, "out")
    env = traced_env(out, RINGSIDE_SAMPLE_HZ=999, PYTHONPATH=lib)
    p = run([py, script, "1.2", "0.8"], env=env)
    if not check(label + ": package workload runs", p.returncode == 0, p.stderr.decode()[-300:]):
        cleanup(work)
        return
    stdlib = p.stdout.decode().split()[-1]
    files = trace_files(out)
    if not check(label + ": one trace file", len(files) == 1, "%d files" % len(files)):
        cleanup(work)
        return
    t = Trace(files[0])
    cpu = t.of_kind("cpu")
    inner = [t.py_frames(s["stack"]) for s in cpu]
    seen = sorted(set(n for f in inner for n, _ in f))
    in_func = [f for f in inner if f and f[0][0] == func]
    # 1.2 s of CPU in func: 120 samples or more from a 100 Hz tick on
    check(label + ": %s (its path below the PYTHONPATH folder)" % func, len(in_func) >= 60,
          "%d samples; Python names seen: %s" % (len(in_func), seen[:12]))
    under = sum(1 for f in in_func if main in [n for n, _ in f])
    check(label + ": %s (the script below its own folder) calls it" % main,
          in_func and under >= 0.9 * len(in_func), "%d of %d; names seen: %s" % (under, len(in_func), seen[:12]))
    in_json = sum(1 for f in inner if stdlib in [n for n, _ in f])
    check(label + ": %s (below the standard library's sys.path entry)" % stdlib, in_json >= 30,
          "%d samples; names seen: %s" % (in_json, [n for n in seen if "json" in n][:8]))
    rows = folded(out)
    if check(label + ": ringside flame folded output", rows, "ringside flame failed"):
        names = set(n for fr, _ in rows for n in fr)
        lined = sorted(n for n in names if ".py:" in n and py_split(n)[1] is not None)
        check(label + ": flame: no line in Python frame names without --lines",
              func in names and not lined, "%s in names: %s; with a line: %s" % (func, func in names, lined[:5]))
    rows = folded(out, lines=True)
    if check(label + ": ringside flame --lines folded output", rows, "ringside flame --lines failed"):
        at, callers = {}, {}
        for fr, w in rows:
            py = [py_split(n) for n in fr if ".py:" in n]
            if not py or py[-1][0] != func:
                continue
            at[py[-1][1]] = at.get(py[-1][1], 0) + w
            caller = [ln for n, ln in py if n == main]
            callers[caller[-1] if caller else None] = callers.get(caller[-1] if caller else None, 0) + w
        total = sum(at.values())
        check(label + ": --lines: func at its loop's line %d" % loop, total and at.get(loop, 0) >= 0.9 * total,
              "lines by weight: %s" % sorted(at.items(), key=lambda x: -x[1])[:5])
        check(label + ": --lines: main at the line of its call, %d" % call,
              total and callers.get(call, 0) >= 0.9 * total,
              "lines by weight: %s" % sorted(callers.items(), key=lambda x: -x[1] if x[1] else 0)[:5])
    cleanup(work)


TORCH = """import inspect
import os
import sys
import time

import torch

torch.manual_seed(0)
torch.set_num_threads(1)
m = torch.nn.Linear(256, 256)
x = torch.randn(64, 256)
end = time.process_time() + float(sys.argv[1])
while time.process_time() < end:
    m(x).square().sum().backward()


def name(fn):
    # fn's file below the sys.path entry it came from, as Python sees it
    f = os.path.realpath(inspect.getsourcefile(fn))
    entry = max((os.path.realpath(p) for p in sys.path if p and f.startswith(os.path.realpath(p) + os.sep)),
                key=len)
    return os.path.relpath(f, entry) + ":" + fn.__code__.co_qualname


print(name(torch.nn.Linear.forward), name(torch.autograd.backward))
"""


def torch_frames(py):
    label = "torch"
    if run([py, "-c", "import torch"]).returncode != 0:
        skip(label, "%s cannot import torch" % py)
        return
    work = tempdir("sample-torch")
    script = os.path.join(work, "linear_loop.py")
    write(script, TORCH)
    out = os.path.join(work, "out")
    p = run([py, script, "2"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    if not check(label + ": nn.Linear loop runs", p.returncode == 0, p.stderr.decode()[-300:]):
        cleanup(work)
        return
    truth = p.stdout.decode().split()
    check(label + ": Python names torch's files below dist-packages",
          truth == ["torch/nn/modules/linear.py:Linear.forward", "torch/autograd/__init__.py:backward"],
          str(truth))
    files = trace_files(out)
    if check(label + ": trace written", len(files) == 1, "%d files" % len(files)):
        t = Trace(files[0])
        stacks = [set(n for n, _ in t.py_frames(s["stack"])) for s in t.of_kind("cpu")]
        seen = sorted(set(n for f in stacks for n in f if "torch/" in n))
        for want in truth:
            n = sum(1 for f in stacks if want in f)
            # the forward and the backward each hold a third or more of 2 s
            check(label + ": %s in the samples" % want, n >= 40,
                  "%d samples; torch names seen: %s" % (n, seen[:10]))
    cleanup(work)


def main():
    for minor in (10, 11, 12, 13):
        py = cpython(minor)
        if not py:
            skip("python 3.%d" % minor, "no CPython 3.%d installed (pyenv)" % minor)
            continue
        hot3(py, minor)
        mixed(py, minor)
        freed(py, minor)
        fleeting(py, "3.%d" % minor)
        reused(py, minor)
        package(py, "3.%d" % minor)
    debian = "/usr/bin/python3"
    if os.path.exists(debian):
        fleeting(debian, "debian python3")
        package(debian, "debian python3")
        torch_frames(debian)
    else:
        skip("debian python3", "no /usr/bin/python3")
    finish()


main()
