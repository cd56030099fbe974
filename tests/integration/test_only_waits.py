#!/usr/bin/env python3
"""A process whose only work is waiting keeps its trace (a trace file is made
for waits alone, not only for I/O or GPU work):
tests/programs/only_waits blocks its main thread in turn on a condition
variable, a semaphore, a pipe, a mutex and a child (2.6 s, held up by
threads and a child that sleep; nothing computes, reads or writes a file),
and measures each wait with its own clock. Checks: output and exit status
as without the agent; one trace file, the program's (its child, which only
sleeps, leaves none, as a launcher's waits for its children and time leave
none); the wait flame graph gives each blocking function its time within
10% of the program's own clock. A shell that only waits for its child
leaves no file and starts no thread while it waits, nor do a launcher's
children that spend CPU between fork and exec (those that end without an
exec keep theirs), and a folder where nothing was written gets a message
naming it and saying why."""
import os
import re
import subprocess
import time

from rstest import PROG, RINGSIDE, check, cleanup, finish, run, tempdir, trace_files, traced_env
from waitflame import folded, truth

WAITS = {"wait_condvar": "condvar", "wait_semaphore": "semaphore", "wait_pipe": "pipe",
         "wait_mutex": "lock", "wait_child": "child"}


def main():
    out = tempdir("only-waits")
    prog = os.path.join(PROG, "only_waits")
    bare = run([prog, "500"], cwd="/tmp")
    traced = run([prog, "500"], env=traced_env(out), cwd="/tmp")
    check("only_waits runs without the agent", bare.returncode == 0, bare.stderr.decode()[-300:])
    check("only_waits: same exit status and output with the agent",
          traced.returncode == bare.returncode and traced.stdout == bare.stdout,
          "%d vs %d" % (traced.returncode, bare.returncode))
    files = trace_files(out)
    names = [os.path.basename(f) for f in files]
    check("only_waits: one trace file, the program's",
          len(files) == 1 and names[0].endswith(".%d.trace.lz4" % pid_of(traced.stderr)),
          "files %s, the program's pid %d" % (names, pid_of(traced.stderr)))
    t = truth(traced.stderr)
    check("only_waits: the program measured every wait", set(t) == set(WAITS), str(sorted(t)))
    stacks = folded(out) if files else []
    for fn, reason in sorted(WAITS.items()):
        leaf = "[wait: %s]" % reason
        got = sum(w for frames, w in stacks if fn in frames)
        want = t.get(fn, 0)
        check("only_waits: %s blocked %s within 10%%" % (fn, leaf),
              want > 0 and abs(got - want) <= 0.1 * want and
              any(fn in f and f[-1] == leaf for f, _ in stacks),
              "flame graph %d ns, program %d ns; stacks %s" % (got, want, [(f[-3:], w) for f, w in stacks if fn in f]))
    cleanup(out)

    # a launcher-like process: a shell that waits for its child (then
    # execs a program that does nothing): the child's file alone
    out = tempdir("only-waits-shell")
    p = run(["sh", "-c", "%s 100 && exec true" % prog], env=traced_env(out))
    names = [os.path.basename(f) for f in trace_files(out)]
    check("a shell that only waits for its child leaves no file",
          p.returncode == 0 and len(names) == 1 and names[0].endswith(".%d.trace.lz4" % pid_of(p.stderr)),
          "files %s, the child's pid %d" % (names, pid_of(p.stderr)))
    cleanup(out)

    # a shell that waits 1 s for a child, then 1 s for another, never
    # starts the agent: no thread of ringside's in it during the second
    # wait, after the first one's samples were taken (a shell or launcher in
    # front of a job pays nothing for being under LD_PRELOAD)
    out = tempdir("only-waits-dormant")
    sh = subprocess.Popen(["sh", "-c", "sleep 1; sleep 1; exit 3"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=99),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    threads = thread_names(sh.pid)
    rc = sh.wait()
    check("a shell that waited 1 s for a child starts no thread of the agent's",
          rc == 3 and threads == ["sh"] and not trace_files(out),
          "exit %d, threads %s, files %s" % (rc, threads, trace_files(out)))
    cleanup(out)

    # a launcher's children: 30 ms of CPU each between fork and exec
    # (closing every fd, then spinning) leave no file, as Open MPI's leave
    # none; the same children ending with _exit keep theirs (their CPU was
    # their work)
    spin = os.path.join(PROG, "fork_spin")
    for mode, want in (("exec", 0), ("exit", 4)):
        out = tempdir("only-waits-spin")
        p = run([spin, mode, "4", "30"], env=traced_env(out))
        kids = {int(x) for x in re.findall(rb"^child (\d+)$", p.stdout, re.M)}
        files = trace_files(out)
        pids = {int(os.path.basename(f).split(".")[-3]) for f in files}
        check("children spinning 30 ms before they %s leave %d files" % (mode, want),
              p.returncode == 0 and len(kids) == 4 and len(files) == want and pids <= kids,
              "exit %d, children %s, files %s" % (p.returncode, sorted(kids), [os.path.basename(f) for f in files]))
        cleanup(out)

    empty = tempdir("only-waits-empty")
    for cmd in (["flame", empty], ["report", empty, "-o", os.path.join(empty, "rep")]):
        p = run([RINGSIDE] + cmd)
        err = p.stderr.decode()
        check("ringside %s on a folder without traces names it and says why" % cmd[0],
              p.returncode != 0 and empty in err and "no trace files" in err, err[-300:])
    cleanup(empty)
    finish()


def thread_names(pid):
    """The names of pid's threads, sorted."""
    names = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return sorted(names)


def pid_of(stderr):
    """The pid only_waits said it ran as (-1: none)."""
    m = re.search(rb"^pid (\d+)$", stderr, re.M)
    return int(m.group(1)) if m else -1


if __name__ == "__main__":
    main()
