#!/usr/bin/env python3
"""The trace file survives the fd games programs play: dup2 onto its number,
close_range and closefrom over it, freopen of stdout. The program's files get
their bytes (truth: their sizes) and the trace records them and ends cleanly.

With RINGSIDE_OWN_FDS=0 the writer shares the program's fd table, so the
program finds the trace file among its fds and takes its number. By default
the writer keeps a table of its own: the program never sees the trace file
(so b.dat, written only through the taken number, is not made)."""
import os
import select
import subprocess
import sys
import time

from rstest import PROG, check, cleanup, finish, io_by_path, report, run, tempdir, trace_files, traced_env

# What fd_games writes to each file (its source says so; the files' sizes check it).
WANT = {"a.dat": 1000, "b.dat": 2000, "c.dat": 3000, "d.dat": 4000, "e.dat": 5000}


def games(label, own):
    out, work = tempdir("trace-fds"), tempdir("fds")
    want = WANT if not own else {n: v for n, v in WANT.items() if n != "b.dat"}
    try:
        # Own table: the trace file exists after the first flush (50 ms), so
        # 500 ms of looking for it in the program's table is plenty.
        argv = [os.path.join(PROG, "fd_games"), work] + (["500"] if own else [])
        r = run(argv, env=traced_env(out, RINGSIDE_FLUSH_MS=50, RINGSIDE_OWN_FDS=int(own)))
        check(label + ": the program succeeds", r.returncode == 0, r.stderr.decode())
        said = r.stdout.decode()
        if own:
            check(label + ": the trace file is not among the program's fds", said == "trace fd -1\n", said)
        else:
            check(label + ": the trace file was found and taken over",
                  said.startswith("trace fd ") and "trace fd -1" not in said, said)
        sizes = {n: os.path.getsize(os.path.join(work, n)) for n in WANT if os.path.exists(os.path.join(work, n))}
        check(label + ": the program's files hold their bytes", sizes == want, str(sizes))
        check(label + ": no ringside notice", "ringside:" not in r.stderr.decode(), r.stderr.decode())
        files = trace_files(out)
        if check(label + ": one trace file", len(files) == 1, str(files)):
            rep = report(out)
            proc = rep["processes"][0]
            check(label + ": the trace ends cleanly", proc["trace"]["complete"], str(proc["trace"]))
            got = {os.path.basename(p): v[1] for p, v in io_by_path(rep).items()
                   if os.path.dirname(p) == work}
            check(label + ": bytes per file recorded exactly", got == want, "recorded %s" % got)
    finally:
        cleanup(out, work)


def pipe_closed():
    """The writer's copy of the fd table must not keep the program's files
    open: a pipe the traced program closes reads as closed at once, not when
    the program ends (the copy is taken before the program starts)."""
    out = tempdir("trace-pipe")
    rd, wr = os.pipe()
    try:
        code = "import os, sys, time; os.close(%d); time.sleep(4)" % wr
        p = subprocess.Popen([sys.executable, "-c", code], pass_fds=(wr,), env=traced_env(out))
        os.close(wr)
        t0 = time.monotonic()
        ready, _, _ = select.select([rd], [], [], 10)
        eof = bool(ready) and os.read(rd, 1) == b""
        waited = time.monotonic() - t0
        running = p.poll() is None
        p.wait(timeout=30)
        check("own table: a pipe the program closes reads as closed while it runs",
              eof and running and waited < 3, "eof %s after %.2f s, program running %s" % (eof, waited, running))
    finally:
        os.close(rd)
        cleanup(out)


def main():
    pipe_closed()
    games("fd games (shared table)", own=False)
    games("fd games (writer's own table)", own=True)
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
