"""Sampler test workload: CPU sampling and file I/O on both sides of one way
of starting a child process.
`py_subproc.py MODE SECONDS DATA TRUTH`: opens DATA and reads its first
64 KiB, spins in before_MODE for SECONDS of this process's CPU time, starts
a child MODE's way and waits for it, spins in after_MODE for SECONDS, then
reads the rest of DATA through the fd it opened before. MODE is run
(subprocess.run), system (os.system), posix_spawn (os.posix_spawn),
mp_fork, mp_spawn or mp_forkserver (a multiprocessing child with that start
method does a little work and is joined). Prints what the child returned
and the bytes read before and after, which do not depend on SECONDS or on
the agent; writes to TRUTH, as JSON, its pid and the CPU time each spinning
function took (process_time, the function's own measure)."""
import json
import multiprocessing
import os
import subprocess
import sys
import time

SPIN = '''
def NAME(seconds):
    start = time.process_time()
    end = start + seconds
    x = 0
    while time.process_time() < end:
        for i in range(1000):
            x += i * i
    return time.process_time() - start
'''


def spinner(name):
    """A function NAME that spins for CPU time, with a code object of its own,
    so that samples in it are named py_subproc.py:NAME."""
    ns = {"time": time}
    exec(compile(SPIN.replace("NAME", name), __file__, "exec"), ns)
    return ns[name]


def child_work(n):
    x = 0
    for i in range(n):
        x += i * i
    sys.exit(7 if x > 0 else 1)


def start_child(mode):
    """Starts a child MODE's way and waits for it; its exit status."""
    if mode == "run":
        return subprocess.run(["/bin/true"]).returncode
    if mode == "system":
        return os.waitstatus_to_exitcode(os.system("exit 3"))
    if mode == "posix_spawn":
        pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 5"], os.environ)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    ctx = multiprocessing.get_context(mode[len("mp_"):])
    p = ctx.Process(target=child_work, args=(200000,))
    p.start()
    p.join()
    return p.exitcode


def main():
    mode, seconds, data, truth = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
    before, after = spinner("before_" + mode), spinner("after_" + mode)
    f = open(data, "rb", buffering=0)
    first = len(f.read(65536))
    cpu_before = before(seconds)
    status = start_child(mode)
    cpu_after = after(seconds)
    rest = 0
    while True:
        b = f.read(65536)
        if not b:
            break
        rest += len(b)
    f.close()
    print("%s: child exit %d; read %d bytes before, %d after" % (mode, status, first, rest))
    with open(truth, "w") as t:
        json.dump({"pid": os.getpid(), "cpu_s": {"before_" + mode: cpu_before, "after_" + mode: cpu_after}}, t)


if __name__ == "__main__":
    main()
