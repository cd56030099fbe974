#!/usr/bin/env python3
"""The sampler's signal never shows in the program: a program with its own
SIGPROF interval timer and POSIX CPU timer sees the same counts, handlers
and timers with and without the agent; a program that takes every real-time
signal gets each exactly once (the sampler steps aside, no stray signal);
blocking calls with no EINTR handling never fail with EINTR, even with the
sampling signal sent at them over and over (no_eintr's pester thread)."""
import os

from rstest import PROG, check, cleanup, finish, run, tempdir, trace_files, traced_env
from samples import Trace


def same(name, args, hz=999, stderr_has=None):
    plain = run(args)
    out = tempdir("sample-sig")
    p = run(args, env=traced_env(out, RINGSIDE_SAMPLE_HZ=hz))
    check(name + ": exit status as without the agent", p.returncode == plain.returncode,
          "%d vs %d: %s" % (p.returncode, plain.returncode, p.stderr.decode()[-300:]))
    check(name + ": output as without the agent", p.stdout == plain.stdout,
          "%r vs %r" % (p.stdout.decode(), plain.stdout.decode()))
    if stderr_has:
        check(name + ": " + stderr_has, stderr_has in p.stderr.decode(), p.stderr.decode()[-300:])
    return out, p


def main():
    out, p = same("own_timers", [os.path.join(PROG, "own_timers")])
    want = b"profs>=40 1 timers>=40 1 strays 0 prof_live 1 timer_live 1 prof_mine 1 timer_mine 1"
    check("own_timers: its timers and handlers intact", p.stdout.strip() == want, p.stdout.decode())
    files = trace_files(out)
    check("own_timers: sampled meanwhile", files and len(Trace(files[0]).of_kind("cpu")) > 10,
          "no CPU samples")
    cleanup(out)

    out, p = same("rt_all", [os.path.join(PROG, "rt_all")],
                  stderr_has="CPU samples are off")
    check("rt_all: every signal once", p.returncode == 0 and b"wrong 0" in p.stdout, p.stdout.decode())
    cleanup(out)

    for label, extra in (("no_eintr", []), ("no_eintr with a handler", ["handler"])):
        out, p = same(label, [os.path.join(PROG, "no_eintr"), "2000"] + extra, hz=999)
        err = p.stderr.decode()
        sent = int(err.split("sent ")[1].split()[0]) if "sent " in err else 0
        check(label + ": the sampling signal was sent at the calls", sent > 1000, err[-200:])
        check(label + ": no EINTR", b"eintr nanosleep 0 clock_nanosleep 0 usleep 0 poll 0 select 0 "
              b"epoll_wait 0 sigtimedwait 0 read 0" in p.stdout, p.stdout.decode())
        cleanup(out)
    finish()


main()
