#!/usr/bin/env python3
"""Python 3.14 frames, traced in a chroot of Debian unstable (make chroot:
$BUILD/chroot-sid, or RINGSIDE_CHROOT) and reported from outside it:
tests/programs/py_nested3.py's outer, middle and inner, nested, each
spinning for time it clocks itself (this thread's CPU clock), appear by
name in the CPU flame graph, each with a share of the three's time within 5
points or 4 sd (sampled.py) of its own clock's, nested under <module> and
main in that order;
with --lines, inner's line lies within inner's own source lines (found by
Python's ast, outside the agent). Runs as root: the chroot is entered in a
mount namespace of its own (unshare -m), with /proc, /sys and /dev bound
in, so nothing stays mounted after."""
import ast
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
from rstest import AGENT, BUILD, ROOT, check, cleanup, finish, run, tempdir  # noqa: E402
import samples  # noqa: E402
from sampled import cpu_samples, samples_in, share_check  # noqa: E402

SCRIPT = os.path.join(ROOT, "tests", "programs", "py_nested3.py")
CHROOT = os.environ.get("RINGSIDE_CHROOT", os.path.join(BUILD, "chroot-sid"))
NAMES = ("outer", "middle", "inner")
# Binds the host's /proc, /sys, /dev and the work folder (at /mnt) into the
# chroot in a private mount namespace, then runs the rest of the arguments.
ENTER = ('set -e; R=$1; W=$2; shift 2; for d in proc sys dev; do mount --bind /$d "$R/$d"; done; '
         'mount --bind "$W" "$R/mnt"; exec chroot "$R" env -i PATH=/usr/bin:/bin HOME=/root "$@"')


def in_chroot(work, *cmd, **env):
    extra = ["%s=%s" % kv for kv in env.items()]
    return run(["unshare", "-m", "--", "sh", "-c", ENTER, "sh", CHROOT, work] + extra + list(cmd))


def flame(out, lines=False):
    """{stack: weight} of the CPU flame graph, reported outside the chroot."""
    rows = samples.folded(out, "cpu", lines)
    check("py3.14: ringside flame%s runs outside the chroot" % (" --lines" if lines else ""), rows is not None)
    got = {}
    for frames, w in rows or []:
        got[";".join(frames)] = got.get(";".join(frames), 0) + w
    return got


def innermost(frames):
    """The innermost of outer, middle, inner in a stack, or None."""
    for f in reversed(frames):
        for n in NAMES:
            if f.startswith("py_nested3.py:%s" % n) and f[len("py_nested3.py:%s" % n):][:1] in ("", ":"):
                return n
    return None


def source_lines(name):
    with open(SCRIPT, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return fn.lineno, fn.end_lineno


def main():
    if not check("py3.14: the chroot is there (make chroot)",
                 os.path.exists(os.path.join(CHROOT, "usr", "bin", "python3.14")),
                 "no %s/usr/bin/python3.14" % CHROOT):
        finish()
    work = tempdir("py314")
    shutil.copy(AGENT, os.path.join(work, "libagent.so"))
    shutil.copy(SCRIPT, os.path.join(work, "py_nested3.py"))
    os.makedirs(os.path.join(work, "out"))
    p = in_chroot(work, "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
    check("py3.14: the chroot's python3 is 3.14", p.stdout.decode().strip() == "3.14",
          (p.stdout + p.stderr).decode(errors="replace")[-300:])
    p = in_chroot(work, "python3.14", "/mnt/py_nested3.py", "3", "20000", LD_PRELOAD="/mnt/libagent.so",
                  RINGSIDE_OUT="/mnt/out", RINGSIDE_SAMPLE_HZ="999")
    err = p.stderr.decode(errors="replace")
    if not check("py3.14: script runs under the agent in the chroot", p.returncode == 0, err[-300:]):
        cleanup(work)
        finish()
    check("py3.14: no notice that Python frames are not recorded", "not recorded" not in err, err[-300:])
    clock = json.loads(p.stdout.decode().strip().splitlines()[-1])
    total_clock = sum(clock.values())
    out = os.path.join(work, "out")
    got = flame(out)
    own = dict.fromkeys(NAMES, 0)
    nested = 0
    for stack, w in got.items():
        f = stack.split(";")
        n = innermost(f)
        if not n:
            continue
        own[n] += w
        chain = ["py_nested3.py:<module>", "py_nested3.py:main"] + ["py_nested3.py:" + k for k in NAMES[:NAMES.index(n) + 1]]
        py = [x for x in f if x.startswith("py_nested3.py:")]
        nested += w * (py == chain)
    in_three, total = sum(own.values()), sum(got.values())
    check("py3.14: outer, middle and inner hold most CPU time", total and in_three >= 0.9 * total,
          "%d of %d ns; frames: %s" % (in_three, total, sorted(set(x for s in got for x in s.split(";")
                                                                   if ".py:" in x))[:10]))
    count = samples_in(in_three, cpu_samples(out))
    for n in NAMES:
        share_check("py3.14: %s's share of the three (its own clock)" % n,
                    100.0 * own[n] / in_three if in_three else 0, 100.0 * clock[n] / total_clock, count, floor=5.0)
    check("py3.14: nested under <module>;main;outer;middle in order", in_three and nested >= 0.9 * in_three,
          "%d of %d ns" % (nested, in_three))
    lo, hi = source_lines("inner")
    lined = flame(out, lines=True)
    lines = {}
    for stack, w in lined.items():
        leaf = [x for x in stack.split(";") if x.startswith("py_nested3.py:")][-1:]
        if leaf and leaf[0].startswith("py_nested3.py:inner:"):
            ln = int(leaf[0].rsplit(":", 1)[1])
            lines[ln] = lines.get(ln, 0) + w
    inside = sum(w for ln, w in lines.items() if lo <= ln <= hi)
    check("py3.14: --lines: inner's lines within its source lines %d-%d" % (lo, hi),
          lines and inside == sum(lines.values()), "lines %s" % sorted(lines))
    cleanup(work)
    finish()


main()
