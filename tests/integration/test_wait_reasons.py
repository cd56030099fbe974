#!/usr/bin/env python3
"""Wait samples for every way a thread blocks (docs/agent.md, CPU and wait stacks): tests/programs/
wait_reasons blocks about 50 ms in one call per mechanism (a condition
variable, a mutex, a reader-writer lock and a spin lock another thread
holds, a semaphore, a join, a barrier, poll, select and epoll on a pipe,
recv on a socket pair, read on a pipe, waitpid on a child, nanosleep,
usleep, a futex through syscall(), flock and fcntl locks another process
holds), each in its own function, and measures each call with its own
CLOCK_MONOTONIC reads (stderr: the truth). Checks: its output and exit
status are the same with the agent and without; the wait flame graph
(`ringside flame --kind wait`, folded) gives each function its blocked time
within 10%, under the leaf that names the reason; the calls that do not
wait (nowait_calls: uncontended locks, a posted semaphore, poll with data
ready or a zero time-out, waitpid WNOHANG) record nothing; a wait a signal
interrupts still fails with EINTR (in the output)."""
import os

from rstest import PROG, check, cleanup, finish, run, tempdir, traced_env
from waitflame import folded, truth

EXPECT = {
    "wait_condvar": "condvar", "wait_mutex": "lock", "wait_rwlock": "rwlock", "wait_spin": "spin",
    "wait_semaphore": "semaphore", "wait_join": "join", "wait_barrier": "barrier",
    "wait_poll": "poll", "wait_select": "poll", "wait_epoll": "poll", "wait_recv": "socket",
    "wait_pipe_read": "pipe", "wait_child": "child", "wait_nanosleep": "sleep",
    "wait_usleep": "sleep", "wait_futex": "futex", "wait_flock": "file-lock",
    "wait_fcntl_lock": "file-lock",
}


def main():
    out, work = tempdir("wait-reasons"), tempdir("wait-reasons-work")
    prog = os.path.join(PROG, "wait_reasons")
    bare = run([prog, work], cwd="/tmp")
    traced = run([prog, work], env=traced_env(out), cwd="/tmp")
    check("runs without the agent", bare.returncode == 0, bare.stderr.decode()[-300:])
    check("same exit status with the agent", traced.returncode == bare.returncode,
          "%d vs %d" % (traced.returncode, bare.returncode))
    check("same output with the agent (results, errno, EINTR)", traced.stdout == bare.stdout,
          "%r vs %r" % (traced.stdout[-300:], bare.stdout[-300:]))
    check("EINTR as without the agent", b"sem_wait interrupted -1 EINTR" in traced.stdout and
          b"nanosleep interrupted -1 EINTR" in traced.stdout, traced.stdout.decode()[-200:])
    t = truth(traced.stderr)
    check("the program measured every wait", set(t) == set(EXPECT), str(sorted(t)))
    stacks = folded(out)
    for fn, reason in sorted(EXPECT.items()):
        leaf = "[wait: %s]" % reason
        got = sum(w for frames, w in stacks if fn in frames and frames[-1] == leaf)
        want = t.get(fn, 0)
        check("%s: %s, blocked time within 10%%" % (fn, leaf), want > 0 and abs(got - want) <= 0.1 * want,
              "flame graph %d ns, program %d ns; its stacks: %s" %
              (got, want, [(f[-3:], w) for f, w in stacks if fn in f]))
    leafless = [f[-3:] for f, _ in stacks if not f[-1].startswith("[wait: ")]
    check("every wait stack ends in its reason", not leafless, str(leafless[:5]))
    quiet = [(f[-3:], w) for f, w in stacks if "nowait_calls" in f]
    check("calls that do not wait record nothing", not quiet, str(quiet))
    cleanup(out, work)
    finish()


main()
