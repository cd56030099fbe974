"""Sampler test workload for a Python the host may not have (run in a
chroot): outer calls middle calls inner, each spinning for time of its own
between the calls, in rounds until SECONDS of CPU. Each function clocks its
own time (this thread's CPU clock, less the time of the call it makes) and
the totals are printed as JSON, {"outer": ns, "middle": ns, "inner": ns}:
the truth the profiler's self time of each is held against.
Usage: py_nested3.py SECONDS UNIT"""
import json
import sys
import time

spent = {"outer": 0, "middle": 0, "inner": 0}


def inner(u):
    t0 = time.thread_time_ns()
    x = 0
    for i in range(u):
        x += i * i
    spent["inner"] += time.thread_time_ns() - t0
    return x


def middle(u):
    t0 = time.thread_time_ns()
    x = 0
    for i in range(u):
        x += i * i
    t1 = time.thread_time_ns()
    x += inner(u // 2)
    t2 = time.thread_time_ns()
    for i in range(u):
        x += i * i
    spent["middle"] += time.thread_time_ns() - t2 + t1 - t0
    return x


def outer(u):
    t0 = time.thread_time_ns()
    x = 0
    for i in range(u * 2):
        x += i * i
    t1 = time.thread_time_ns()
    x += middle(u)
    t2 = time.thread_time_ns()
    for i in range(u):
        x += i * i
    spent["outer"] += time.thread_time_ns() - t2 + t1 - t0
    return x


def main():
    seconds, u = float(sys.argv[1]), int(sys.argv[2])
    end = time.process_time() + seconds
    rounds, seed = 0, 12345
    while not rounds or time.process_time() < end:
        # rounds of varied size, so that they do not keep step with the tick
        seed = (seed * 6364136223846793005 + 1442695040888963407) % 2**64
        outer(u // 2 + (seed >> 33) % (u + 1))
        rounds += 1
    print(json.dumps(spent))


main()
