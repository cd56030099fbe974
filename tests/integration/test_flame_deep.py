#!/usr/bin/env python3
"""Deep stacks keep their root or say they were cut.

The agent keeps at most 128 frames of a stack. tests/programs/deep_stack
recurses DEPTH frames and spins there: at 300 frames every CPU stack used to
stand as a tower of `descend` frames with no root (the outer frames dropped
without a mark); now its outermost frame is `[truncated]`. At 60 frames the
stacks are whole: their root is `_start`, and no `[truncated]` appears."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import PROG, RINGSIDE, check, finish, run, tempdir, traced_env  # noqa: E402


def roots(out):
    p = run([RINGSIDE, "flame", out, "-o", "-"])
    got = {}
    for line in p.stdout.decode(errors="replace").splitlines():
        stack, _, w = line.rpartition(" ")
        if stack:
            frames = stack.split(";")
            key = (frames[0], "[truncated]" in frames[1:], frames.count("descend"))
            got[key] = got.get(key, 0) + int(w)
    return got, p


def main():
    work = tempdir("flame-deep")
    for depth, root in ((300, "[truncated]"), (60, "_start")):
        out = os.path.join(work, "d%d" % depth)
        p = run([os.path.join(PROG, "deep_stack"), str(depth), "700"],
                env=traced_env(out, RINGSIDE_SAMPLE_HZ=999), timeout=60)
        if not check("deep_stack %d runs under the agent" % depth,
                     p.returncode == 0 and b"depth=%d" % depth in p.stdout, p.stderr.decode(errors="replace")[-300:]):
            continue
        got, q = roots(out)
        total = sum(got.values())
        deep = sum(w for (r, inner, n), w in got.items() if n >= min(depth, 100))
        rooted = sum(w for (r, inner, n), w in got.items() if r == root and not inner)
        summary = sorted(((r, inner, n), w) for (r, inner, n), w in got.items())[:6]
        check("depth %d: the spinning stacks (%.0f%% of CPU time) all have %s as their root, no [truncated] "
              "inside" % (depth, 100.0 * deep / max(total, 1), root),
              q.returncode == 0 and deep > 0 and
              sum(w for (r, inner, n), w in got.items() if n >= min(depth, 100) and (r != root or inner)) == 0,
              str(summary))
        check("depth %d: %.0f%% of all CPU time under %s" % (depth, 100.0 * rooted / max(total, 1), root),
              rooted >= 0.9 * total, str(summary))
    finish()


if __name__ == "__main__":
    main()
