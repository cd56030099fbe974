#!/usr/bin/env python3
"""The sampler follows a process's life: threads started after the agent
each get samples under their own tid, a forked child samples into its own
file, and an exec'd image too (no sampling signal left pending to kill it)."""
import os

from rstest import PYTHON, ROOT, check, cleanup, finish, run, tempdir, trace_files, traced_env
from samples import Trace

SCRIPT = os.path.join(ROOT, "tests", "programs", "py_fork_exec.py")


def main():
    out = tempdir("sample-thr")
    p = run([PYTHON, SCRIPT], env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    check("runs to the exec'd image's end", p.returncode == 0 and b"exec'd ok" in p.stdout,
          "exit %d: %s" % (p.returncode, p.stderr.decode()[-300:]))
    files = trace_files(out)
    check("three files: first image, child, exec'd image", len(files) == 3, str(files))
    tids = []
    for f in files:
        t = Trace(f)
        tids.append(len({s["tid"] for s in t.of_kind("cpu")}))
    check("each file has CPU samples", files and all(n >= 1 for n in tids), str(tids))
    check("the threaded image samples 4 threads", 4 in tids, str(tids))
    cleanup(out)
    finish()


main()
