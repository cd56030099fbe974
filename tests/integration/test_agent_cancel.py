#!/usr/bin/env python3
"""The agent makes the read/write family's system calls itself on regular
files (glibc's wrappers are cancellation points, which cost a threaded
process two atomic operations a call). That must not change what a program
sees: cancel_io's errors, its thread blocked on a FIFO being cancelled, and
its thread with a cancellation pending being cancelled at pwrite before the
write, all as without the agent (truth: the same program run without it).
The trace holds the calls with their results (truth: the program's own
output: -EBADF, -EFAULT, 0 and 2 bytes)."""
import errno
import os

from rstest import PROG, check, cleanup, dump, finish, run, tempdir, trace_files, traced_env


def main():
    prog = os.path.join(PROG, "cancel_io")
    out, plain_dir, traced_dir = tempdir("trace-cancel"), tempdir("cancel-plain"), tempdir("cancel-traced")
    try:
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        plain = run([prog, plain_dir], env=env, timeout=60)
        traced = run([prog, traced_dir], env=traced_env(out), timeout=60)
        check("cancel_io runs to the end without the agent", plain.returncode == 0,
              "%d %s" % (plain.returncode, plain.stderr.decode()))
        check("cancel_io: same exit status with the agent", traced.returncode == plain.returncode,
              "without %d, with %d: %s" % (plain.returncode, traced.returncode, traced.stderr.decode()))
        lines = traced.stdout.decode().splitlines()
        want = plain.stdout.decode().splitlines()
        for w, g in zip(want, lines + [""] * len(want)):
            check("cancel_io: " + w.split(":")[0] + ": " + w.split(":", 1)[1].strip(), g == w,
                  "with the agent: %r" % g)
        files = trace_files(out)
        if check("cancel_io: one trace", len(files) == 1, str(files)):
            recs, rc, err = dump(files[0])
            ro = os.path.join(traced_dir, "ro.dat")
            got = [(r["op"], r["result"]) for r in recs if r.get("type") == "io" and r.get("path") == ro
                   and r["op"] in ("read", "pread", "pwrite")]
            check("cancel_io: the calls on ro.dat are recorded with their results",
                  got == [("pwrite", -errno.EBADF), ("read", -errno.EFAULT), ("pread", 0), ("pread", 2)],
                  str(got))
    finally:
        cleanup(out, plain_dir, traced_dir)
    return finish()


if __name__ == "__main__":
    raise SystemExit(main())
