#!/usr/bin/env python3
"""SIGTERM set through sigset, sysv_signal and bsd_signal: the program reads
back the dispositions it set, its handler runs or the default kills it, all
as without the agent; when the default kills it, the trace still ends cleanly."""
import os

from rstest import PROG, check, cleanup, finish, report, run, tempdir, traced_env


def main():
    prog = os.path.join(PROG, "sig_spellings")
    for how in ("sigset", "sysv", "bsd", "hold"):
        out, work = tempdir("trace-sig"), tempdir("sig")
        try:
            target = os.path.join(work, "f.txt")
            plain = run([prog, how, target], env=traced_env(out, RINGSIDE_DISABLE=1))
            traced = run([prog, how, target], env=traced_env(out))
            check("%s: same exit status" % how, plain.returncode == traced.returncode,
                  "without %d, with %d" % (plain.returncode, traced.returncode))
            check("%s: same output" % how, plain.stdout == traced.stdout,
                  "%r vs %r" % (plain.stdout, traced.stdout))
            want = -15 if how == "hold" else 7
            check("%s: ends as the program asked" % how, traced.returncode == want, str(traced.returncode))
            procs = report(out)["processes"]
            check("%s: the trace ends cleanly" % how, len(procs) == 1 and procs[0]["trace"]["complete"],
                  str([p["trace"] for p in procs]))
        finally:
            cleanup(out, work)
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
