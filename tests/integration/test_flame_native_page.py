#!/usr/bin/env python3
"""The report's Python view and its native view, and the page's switch.

tests/programs/py_hot3.py (Python functions spinning) under the agent,
reported: flame-cpu.svg is the Python view (no native frame above a
Python frame: only below the innermost), native-cpu.svg beside it holds
every native frame (the interpreter's C API, PyEval_*, above the Python
frames) over the same samples (the same root weight); on the page the switch shows one view at a time,
and a click swaps them (headless Chromium). A C program's report has no
native-*.svg and no switch."""
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import PROG, PYTHON, RINGSIDE, check, cleanup, finish, run, tempdir, traced_env  # noqa: E402
import headless  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "programs", "py_hot3.py")
INTERP = ("PyEval_", "_PyEval_", "PyObject_", "_PyObject_", "_PyFunction_")


def python(name):
    """Whether a frame name is a Python function's: file.py:func, code
    without a file (<frozen importlib._bootstrap>:_find_and_load,
    <string>:<module>), or [python], a Python frame whose code object the
    agent could not read (a view's rule is about the kind of frame; the
    names are test_sample_python's)."""
    return ".py:" in name or (name.startswith("<") and ">:" in name) or name == "[python]"


def frames(path):
    """(root weight, frame names, the native frames above a Python frame)
    of a flame graph SVG (a frame's ancestors: the frames above its depth
    whose span holds its start)."""
    ns = "{http://www.w3.org/2000/svg}"
    fr = [(int(g.get("data-x")), int(g.get("data-w")), int(g.get("data-d")),
           g.find(ns + "title").text.split("\n")[0].strip())
          for g in ET.parse(path).getroot().iter(ns + "g") if g.get("class") == "f"]
    root = sum(w for x, w, d, n in fr if d == 0)
    by_depth = {}
    for f in fr:
        by_depth.setdefault(f[2], []).append(f)
    above = set()
    for x, w, d, name in fr:
        if not python(name):
            continue
        path = [next(a for a in by_depth[k] if a[0] <= x < a[0] + max(a[1], 1))[3] for k in range(1, d)]
        above |= {n for n in path if not python(n) and n != "[truncated]"}  # the mark of a cut stack
    return root, {f[3] for f in fr}, above


def main():
    work = tempdir("flame-native")
    out, rep = os.path.join(work, "t"), os.path.join(work, "r")
    p = run([PYTHON, SCRIPT, "hot3", "1.5", "2000"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=199), timeout=120)
    if not check("py_hot3 runs under the agent", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        finish()
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    py_svg, nat_svg = os.path.join(rep, "flame-cpu.svg"), os.path.join(rep, "native-cpu.svg")
    if not check("the report writes the Python view and the native view",
                 p.returncode == 0 and os.path.exists(py_svg) and os.path.exists(nat_svg),
                 "%s; %s" % (os.listdir(rep) if os.path.isdir(rep) else "-", p.stderr.decode()[-200:])):
        finish()
    pw, pnames, pabove = frames(py_svg)
    nw, nnames, nabove = frames(nat_svg)
    interp = sorted(n for n in nabove if n.startswith(INTERP))
    check("the Python view holds the script's functions, no native frame above a Python frame",
          "py_hot3.py:beta" in pnames and not pabove, str(sorted(pabove))[:400])
    check("the native view holds the interpreter's frames above them (%s)" % interp[:3],
          interp and "py_hot3.py:beta" in nnames, str(sorted(nabove))[:400])
    check("both views weigh the same samples (%.3f s)" % (pw / 1e9), pw > 0 and pw == nw, "%d against %d" % (pw, nw))
    html = os.path.join(rep, "index.html")
    with headless.Browser() as b:
        b.open(html)
        state = ("(function(){var v=document.querySelector('.flame-views');if(!v)return 'none';"
                 "return [v.querySelector('.python-view').hidden,v.querySelector('.native-view').hidden,"
                 "v.querySelector('.native-view iframe').title].join(' ');})()")
        before = b.eval(state)
        check("the page shows the Python view, the native one hidden", before == "false true native-cpu.svg",
              repr(before))
        b.eval("document.querySelector('button.native-switch').click()")
        after = b.eval(state)
        check("a click on the switch shows the native view instead", after == "true false native-cpu.svg",
              repr(after))
        check("the page loads without errors", not b.problems(), str(b.problems())[:300])
    cout, crep = os.path.join(work, "c"), os.path.join(work, "cr")
    p = run([os.path.join(PROG, "two_phases"), "0.3"], env=traced_env(cout, RINGSIDE_SAMPLE_HZ=199), timeout=60)
    q = run([RINGSIDE, "report", cout, "-o", crep, "-q"])
    with open(os.path.join(crep, "index.html"), encoding="utf-8") as f:
        page = f.read()
    check("a C program: no native view and no switch",
          p.returncode == 0 and q.returncode == 0 and os.path.exists(os.path.join(crep, "flame-cpu.svg"))
          and not [n for n in os.listdir(crep) if n.startswith("native-")] and "native-switch" not in page,
          str(os.listdir(crep)))
    cleanup(work)
    finish()


if __name__ == "__main__":
    main()
