"""Sampler test workload. Work is measured in this process's CPU time, so
that a run gives the sampler as many ticks on a fast machine as on a slow
one, and what it prints does not depend on how many rounds that took.
`hot3 SECONDS UNIT`: Work.alpha, beta and gamma run the same loop for 6, 3
and 1 units per round (60/30/10 of the work), rounds until SECONDS of CPU.
`ctypes LIB SECONDS N`: c_caller calls the C function spin_c through
ctypes, py_spin spins in Python, for about equal time, rounds until SECONDS.
`short SECONDS`: short_hot, compiled from source at run time (its code object
is the only one of its kind), spins for SECONDS; then it is deleted and new
code objects are made until its memory is reused, as an interpreter's end
frees a script's code objects before a profiler's last flush.
`fleeting SECONDS MS [starve]`: functions compiled at run time one after another,
each spinning for MS milliseconds of CPU and freed as it returns (as an
import frees a module's top-level code), its memory taken by other objects
at once, rounds until SECONDS; prints how
many ran and the share of the loop's CPU time spent in them. With starve, the agent's writer thread runs only when this
process waits, as on a machine busier than it has cores. A sample's name has to be taken before the writer comes by.
`reuse SECONDS`: first_hot, compiled at run time, spins for SECONDS and is
deleted; functions are compiled until one's code object lands where
first_hot's was; after a pause longer than the agent's writer takes to
come by (1.5 s), that one spins for SECONDS, and its name is printed (or
"no reuse" when none landed there)."""
import sys
import time


class Work:
    def alpha(self, u):
        x = 0
        for _ in range(6):
            for i in range(u):
                x += i * i
        return x


def beta(u):
    x = 0
    for _ in range(3):
        for i in range(u):
            x += i * i
    return x


def gamma(u):
    x = 0
    for _ in range(1):
        for i in range(u):
            x += i * i
    return x


def c_caller(lib, n):
    return lib.spin_c(n)


def py_spin(u):
    x = 0
    for i in range(u):
        x += i * i
    return x


HOT = '''
def NAME(seconds):
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        for i in range(1000):
            x += i * i
    return x > 0
'''


def compiled(name, filename="py_hot3.py"):
    """A new function NAME from HOT, with a code object of its own."""
    ns = {"time": time}
    exec(compile(HOT.replace("NAME", name), filename, "exec"), ns)
    return ns[name]


def short(seconds):
    ok = compiled("short_hot")(seconds)
    # New code objects of the same size take the freed memory.
    keep = [compiled("churn_%05d" % i, "churn.py") for i in range(3000)]
    return ok and len(keep) == 3000


def starve_writer():
    """The agent's writer as on a busy machine: this process on one CPU,
    the writer thread (named ringside-writer) run only when nothing else
    wants it; False when there is none."""
    import os
    def comm(t):
        try:
            with open("/proc/self/task/%d/comm" % t) as f:
                return f.read().strip()
        except (FileNotFoundError, ProcessLookupError):
            # a thread that has ended (the agent's loading thread): gone
            # before the open, or between the open and the read (ESRCH)
            return None

    tids = [int(t) for t in os.listdir("/proc/self/task")]
    writer = [t for t in tids if comm(t) == "ringside-writer"]
    cpu = min(os.sched_getaffinity(0))
    for t in tids:
        try:
            os.sched_setaffinity(t, {cpu})
        except ProcessLookupError:
            pass
    for t in writer:
        os.sched_setscheduler(t, os.SCHED_IDLE, os.sched_param(0))
    return bool(writer)


def fleeting(seconds, ms, starve):
    if starve and not starve_writer():
        return "no writer thread"
    start = time.process_time()
    end, n, inside = start + seconds, 0, 0.0
    while not n or time.process_time() < end:
        f = compiled("fleeting_%06d" % n, "fleeting.py")
        t = time.process_time()
        f(ms / 1000)
        inside += time.process_time() - t
        del f
        # other objects take the freed memory before the agent's writer
        # comes by (as an import's next allocations do)
        junk = [bytearray(k) for k in range(100, 800, 4)]
        n += len(junk) and 1
    share = inside / (time.process_time() - start)
    if starve:
        time.sleep(0.3)  # the writer's turn
    return "%d %.3f" % (n, share)


def reuse(seconds):
    first = compiled("first_hot")
    at = id(first.__code__)
    first(seconds)
    del first
    keep = []
    for i in range(20000):
        later = compiled("later_%05d" % i)
        if id(later.__code__) == at:
            time.sleep(1.5)
            later(seconds)
            return later.__name__
        keep.append(later)
    return "no reuse"


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2] if sys.argv[1] != "ctypes" else sys.argv[3])
    end = time.process_time() + seconds
    if mode == "hot3":
        u = int(sys.argv[3])
        w, rounds, seed = Work(), 0, 12345
        while not rounds or time.process_time() < end:
            # Rounds of varied size (as hot3.c's), so that their length does
            # not keep step with the kernel tick the CPU-time timer fires on:
            # with one size, samples fell on the same phase of each round for
            # seconds and beta's and gamma's shares drifted by 6 points.
            seed = (seed * 6364136223846793005 + 1442695040888963407) % 2**64
            v = u // 2 + (seed >> 33) % (u + 1)
            w.alpha(v) + beta(v) + gamma(v)
            rounds += 1
        print(w.alpha(u) + beta(u) + gamma(u))
    elif mode == "ctypes":
        import ctypes
        lib = ctypes.CDLL(sys.argv[2])
        lib.spin_c.restype = ctypes.c_uint64
        lib.spin_c.argtypes = [ctypes.c_uint64]
        n, t, rounds = int(sys.argv[4]), 0, 0
        while not rounds or time.process_time() < end:
            t += c_caller(lib, n) + py_spin(n // 100)
            rounds += 1
        print((t // rounds) % 1000)
    elif mode == "short":
        print(short(seconds))
    elif mode == "fleeting":
        print(fleeting(seconds, float(sys.argv[3]), sys.argv[4:] == ["starve"]))
    else:
        print(reuse(seconds))


main()
