"""What the wait tests share: a program's own measure of its waits, and
the wait flame graph of a trace folder as ringside folds it."""
import os

from rstest import RINGSIDE, check, run


def truth(stderr):
    """{function: ns blocked} as the program measured it."""
    t = {}
    for line in stderr.decode().splitlines():
        f = line.split()
        if len(f) == 3 and f[0] == "time":
            t[f[1]] = int(f[2])
    return t


def folded(out):
    """[(frames, weight)] of the wait flame graph of the traces under out."""
    path = os.path.join(out, "wait.folded")
    p = run([RINGSIDE, "flame", out, "--kind", "wait", "-o", path])
    check("ringside flame --kind wait", p.returncode == 0, p.stderr.decode()[-300:])
    stacks = []
    if p.returncode == 0:
        with open(path) as f:
            for line in f:
                frames, _, w = line.rstrip("\n").rpartition(" ")
                stacks.append((frames.split(";"), int(w)))
    return stacks
