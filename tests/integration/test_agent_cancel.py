#!/usr/bin/env python3
"""The agent makes the read/write family's system calls itself on regular
files (glibc's wrappers are cancellation points, which cost a threaded
process two atomic operations a call). That must not change what a program
sees: cancel_io's errors, its thread blocked on a FIFO being cancelled, and
its thread with a cancellation pending being cancelled at pwrite before the
write, all as without the agent (truth: the same program run without it).
The trace holds the calls with their results (truth: the program's own
output: -EBADF, -EFAULT, 0 and 2 bytes).

Two reads that wait on their buffer (a page userfaultfd holds back), each in
a process of its own, before any pthread_cancel:
- /proc/self/stat, recorded here (RINGSIDE_IO_EXCLUDE empty): a regular
  file, but not on a local file system, so the agent leaves it to glibc and
  the thread is cancelled in the read, as without the agent.
- a file in the test's folder, which the agent reads with its own system
  call: the thread is cancelled at its next cancellation point after the
  read (the documented exception), and not inside the agent: the read's
  wait sample, whose stack unwinding makes glibc calls that are cancellation
  points, is in the trace, weighted by the 100 ms the page was held.
Both are skipped where userfaultfd cannot be used."""
import errno
import os

from rstest import PROG, check, cleanup, dump, finish, run, skip, tempdir, trace_files, traced_env


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
    held_cases(prog, env)
    return finish()


# statfs magic numbers of the file systems the agent calls local
# (preload/fdtab.c), from the kernel's linux/magic.h.
LOCAL_FS = {0xEF53, 0x58465342, 0x9123683E, 0xF2F52010, 0x2FC12FC1, 0x01021994, 0x858458F6,
            0x794C7630, 0x73717368}


def fs_magic(path):
    p = run(["stat", "-f", "-c", "%t", path])
    return int(p.stdout.decode().strip() or "0", 16)


def held_cases(prog, env):
    for case, want in (("procfs", None), ("held", "held: cancelled after the read")):
        out, plain_dir, traced_dir = tempdir("trace-" + case), tempdir(case + "-plain"), tempdir(case + "-traced")
        try:
            if case == "held" and fs_magic(traced_dir) not in LOCAL_FS:
                skip("cancel_io held", "%s is not on a local file system (statfs type %#x): the agent leaves "
                     "its reads to glibc" % (traced_dir, fs_magic(traced_dir)))
                continue
            plain = run([prog, plain_dir, case], env=env, timeout=60)
            traced = run([prog, traced_dir, case], env=traced_env(out, RINGSIDE_IO_EXCLUDE=""), timeout=60)
            p, t = plain.stdout.decode().strip(), traced.stdout.decode().strip()
            if p.endswith("no userfaultfd"):
                skip("cancel_io " + case, p)
                continue
            check("cancel_io %s runs with and without the agent" % case,
                  plain.returncode == 0 and traced.returncode == 0,
                  "%s / %s" % (plain.stderr.decode(), traced.stderr.decode()))
            check("cancel_io %s: without the agent, %s" % (case, case + ": cancelled in the read"),
                  p == case + ": cancelled in the read", p)
            check("cancel_io %s: with the agent, %s" % (case, want or "as without"), t == (want or p), t)
            if case != "held":
                continue
            files = trace_files(out)
            if not check("cancel_io held: one trace", len(files) == 1, str(files)):
                continue
            recs, rc, err = dump(files[0])
            path = os.path.join(traced_dir, "held.dat")
            reads = [r for r in recs if r.get("type") == "io" and r.get("path") == path and r["op"] == "read"]
            # the file's waits (the thread that releases it sleeps: a wait too)
            waits = [r for r in recs if r.get("type") == "sample" and r.get("kind") == "wait"
                     and r.get("reason") == "file"]
            if check("cancel_io held: the read is recorded, 100 ms or more", len(reads) == 1 and
                     reads[0]["dur_ns"] >= 100000000, str(reads)):
                check("cancel_io held: its wait sample is in the trace (the thread was not cancelled in the agent)",
                      [w["tid"] for w in waits if w["weight_ns"] >= 100000000] == [reads[0]["tid"]], str(waits))
        finally:
            cleanup(out, plain_dir, traced_dir)


if __name__ == "__main__":
    raise SystemExit(main())
