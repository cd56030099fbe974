#!/usr/bin/env python3
"""The trace file survives the fd games programs play: dup2 onto its number,
close_range and closefrom over it, freopen of stdout. The program's files get
their bytes (truth: their sizes) and the trace records them and ends cleanly."""
import os

from rstest import PROG, check, cleanup, finish, io_by_path, report, run, tempdir, trace_files, traced_env

# What fd_games writes to each file (its source says so; the files' sizes check it).
WANT = {"a.dat": 1000, "b.dat": 2000, "c.dat": 3000, "d.dat": 4000, "e.dat": 5000}


def main():
    out, work = tempdir("trace-fds"), tempdir("fds")
    try:
        r = run([os.path.join(PROG, "fd_games"), work], env=traced_env(out, RINGSIDE_FLUSH_MS=50))
        check("fd games: the program succeeds", r.returncode == 0, r.stderr.decode())
        check("fd games: the trace file was found and taken over",
              r.stdout.decode().startswith("trace fd ") and "trace fd -1" not in r.stdout.decode(),
              r.stdout.decode())
        sizes = {n: os.path.getsize(os.path.join(work, n)) for n in WANT if os.path.exists(os.path.join(work, n))}
        check("fd games: the program's files hold their bytes", sizes == WANT, str(sizes))
        check("fd games: no ringside notice", "ringside:" not in r.stderr.decode(), r.stderr.decode())
        files = trace_files(out)
        if check("fd games: one trace file", len(files) == 1, str(files)):
            rep = report(out)
            proc = rep["processes"][0]
            check("fd games: the trace ends cleanly", proc["trace"]["complete"], str(proc["trace"]))
            got = {os.path.basename(p): v[1] for p, v in io_by_path(rep).items()
                   if os.path.dirname(p) == work}
            check("fd games: bytes per file recorded exactly", got == WANT, "recorded %s" % got)
    finally:
        cleanup(out, work)
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
