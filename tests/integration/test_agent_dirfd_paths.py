#!/usr/bin/env python3
"""Paths opened relative to a directory fd (openat), as hwloc reads /sys in
mpirun and orted: a file under "/" is named with one slash, RINGSIDE_IO_EXCLUDE
holds for such paths (/proc, /dev by default), and with the exclusions
emptied the same files are recorded. Truth: the sizes of the files written."""
import os

from rstest import PYTHON, check, cleanup, finish, report, run, tempdir, traced_env

SCRIPT = r"""
import os, sys
work = sys.argv[1]
root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("proc/self/status", os.O_RDONLY, dir_fd=root)
os.read(fd, 100000)
os.close(fd)
fd = os.open("dev/null", os.O_WRONLY, dir_fd=root)
os.write(fd, b"x" * 300)
os.close(fd)
fd = os.open(os.path.join(work, "b.out").lstrip("/"), os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=root)
os.write(fd, b"b" * 2000)
os.close(fd)
wd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("a.out", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=wd)
os.write(fd, b"a" * 1000)
os.close(fd)
"""


def main():
    for name, extra in (("default exclusions", {}), ("no exclusions", {"RINGSIDE_IO_EXCLUDE": ""})):
        out, work = tempdir("trace-dirfd"), tempdir("dirfd")
        p = run([PYTHON, "-c", SCRIPT, work], env=traced_env(out, **extra))
        if check(name + ": runs", p.returncode == 0, p.stderr.decode(errors="replace")[-500:]):
            rep = report(out)
            paths = {}
            for pr in rep["processes"]:
                for f in pr["io"]["files"]:
                    t = paths.setdefault(f["path"], [0, 0])
                    t[0] += f["read_bytes"]
                    t[1] += f["write_bytes"]
            truth = {os.path.join(work, n): os.path.getsize(os.path.join(work, n)) for n in ("a.out", "b.out")}
            got = {path: paths.get(path, [0, 0])[1] for path in truth}
            check(name + ": bytes per file, one slash", got == truth, "recorded %s, truth %s" % (got, truth))
            doubled = sorted(q for q in paths if "//" in q)
            check(name + ": no path with //", not doubled, str(doubled))
            special = sorted(q for q in paths if q.startswith(("/proc/", "/dev/")))
            if extra:
                check(name + ": /proc and /dev recorded", paths.get("/proc/self/status", [0])[0] > 0 and
                      paths.get("/dev/null", [0, 0])[1] == 300, str(special))
            else:
                check(name + ": /proc and /dev left out", not special, str(special))
        cleanup(out, work)
    finish()


main()
