#!/usr/bin/env python3
"""Flame graphs a Python user reads: the Python stack, the interpreter's
frames left out (py-spy's default view); `--native` brings them back.

A CPU PyTorch loop (Debian's python3-torch on Debian's python3: a
Sequential of Linear layers, forward and backward, 3 s) under the agent.
The default CPU graph: in every stack with Python frames, no native frame
lies between two Python frames or outside the outermost but a cut
stack's `[truncated]` root (no `_start`,
`Py_RunMain`, `_PyEval_EvalFrameDefault`, `PyObject_Vectorcall` between the
script's functions); `Linear.forward` appears under the script's `train`;
the graph's total is the same as --native's (frames are left out, never
samples). With `--native`, interpreter frames stand between the Python
frames again, and 95% or more of the time has its root (`_start`) or says
it was cut (`[truncated]`: the imports' stacks are deeper than the 128
frames kept, and the Python frames spliced in must not push the mark out;
an unwind may also end early in code without unwind tables)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import check, finish, run, skip, tempdir, traced_env  # noqa: E402
from samples import folded  # noqa: E402

TORCH_PY = "/usr/bin/python3"   # Debian's torch is for Debian's interpreter
SCRIPT = """
import time, torch
m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256))
x = torch.randn(64, 256)
def train(seconds):
    t = time.time()
    while time.time() - t < seconds:
        m(x).sum().backward()
train(3)
"""


def is_py(frame):
    """A Python frame's name: "FILE:QUALNAME" with one colon ("pkg/mod.py:func",
    "<frozen importlib._bootstrap>:func"), "[python]" (code whose name could
    not be read). Native names have none (C) or "::" (C++), or are
    "[module+0xOFF]"."""
    if frame in ("[python]", "[python ?]"):
        return True
    bare = re.sub(r"\[abi:[^]]*\]", "", frame)   # C++'s Mutable[abi:cxx11]
    return not frame.startswith("[") and re.search(r"(?<!:):(?!:)", bare) is not None


def main():
    if run([TORCH_PY, "-c", "import torch"]).returncode != 0:
        skip("python view", "Debian's python3-torch is not installed")
        finish()
    work = tempdir("flame-pyview")
    script = os.path.join(work, "lin.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    out = os.path.join(work, "t")
    p = run([TORCH_PY, script], env=traced_env(out, RINGSIDE_SAMPLE_HZ=199), timeout=120)
    if not check("the PyTorch loop runs under the agent", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        finish()
    rows = folded(out, extra=["-q"]) or []
    bad = []
    for stack, w in rows:
        py = [i for i, fr in enumerate(stack) if is_py(fr)]
        if py:
            outside = [fr for i, fr in enumerate(stack) if i < py[-1] and not is_py(fr) and fr != "[truncated]"]
            if outside:
                bad.append("%s (%s)" % (outside[:3], ";".join(stack[:6])))
    check("default view: no native frame between or outside Python frames (%d stacks)" % len(rows),
          rows and not bad, "; ".join(bad[:2]))
    linear = sum(w for stack, w in rows
                 if "lin.py:train" in stack and "torch/nn/modules/linear.py:Linear.forward" in stack and
                 stack.index("lin.py:train") < stack.index("torch/nn/modules/linear.py:Linear.forward"))
    check("default view: torch/nn/modules/linear.py:Linear.forward under lin.py:train (%.2f s)" % (linear / 1e9),
          linear > 0, str([s for s, _ in rows[:3]]))
    nrows = folded(out, extra=["-q", "--native"]) or []
    between = sum(w for stack, w in nrows
                  if "lin.py:train" in stack and any(not is_py(fr) for fr in stack[stack.index("lin.py:train"):]))
    check("--native: interpreter frames between the Python frames again", between > 0, str([s[:8] for s, _ in nrows[:2]]))
    # the imports' stacks are deeper than the agent keeps: the Python frames
    # spliced in must not push the cut's mark out
    # (an unwind can also end early, in code without unwind tables: rare)
    rooted = sum(w for s, w in nrows if s[0] in ("_start", "[truncated]"))
    nall = sum(w for _, w in nrows)
    roots = sorted({s[0] for s, _ in nrows} - {"_start", "[truncated]"})
    check("--native: %.1f%% of CPU time rooted at _start or [truncated] (%d cut; 95%% or more)" %
          (100.0 * rooted / max(nall, 1), sum(1 for s, _ in nrows if s[0] == "[truncated]")),
          nrows and rooted >= 0.95 * nall, str(roots[:5]))
    total, ntotal = sum(w for _, w in rows), sum(w for _, w in nrows)
    check("the same CPU time in both views (%.3f s)" % (total / 1e9), total == ntotal, "%d vs %d" % (total, ntotal))
    finish()


if __name__ == "__main__":
    main()
