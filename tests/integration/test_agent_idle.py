#!/usr/bin/env python3
"""A program that sleeps costs (almost) no CPU more under the agent: its
writer thread waits for the flush period between passes whether or not it
has anything to write. Two idle cases, each with the CPU sampler on (the
default) and off: `sleep`, which makes no recorded event (so no trace file
is opened), and a Python script that reads its modules and then sleeps
(a file, then nothing new). The truth is the kernel's accounting (user +
system time), run without the agent and with it: of the whole child for
`sleep`, whose start under the agent costs about a millisecond; of the
sleep alone for Python, whose start reads hundreds of files, a cost that
grows with a busy machine and is not what this test is about."""
import os
import resource
import subprocess

from rstest import PYTHON, check, cleanup, finish, tempdir, traced_env

SLEEP_S = 2.0
# 1% of the sleep: the writer's timed passes cost microseconds each, two a
# second; a writer that loops without waiting costs hundreds of ms.
LIMIT_S = SLEEP_S / 100


# Prints the user + system seconds of the whole process (all its threads)
# over the sleep, as the kernel counts them.
PY_IDLE = """import json, resource, time
a = resource.getrusage(resource.RUSAGE_SELF)
time.sleep(%s)
b = resource.getrusage(resource.RUSAGE_SELF)
print(b.ru_utime - a.ru_utime + b.ru_stime - a.ru_stime)""" % SLEEP_S


def child_cpu(cmd, env):
    """User + system seconds of one run of cmd, from the kernel: what cmd
    printed when it is the Python case, else the whole child's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cmd[0] == PYTHON:
        try:
            return p.returncode, float(p.stdout.split()[-1])
        except (IndexError, ValueError):
            return p.returncode or 1, 0.0
    return p.returncode, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    out = tempdir("trace-idle")
    cases = [("sleep", ["sleep", str(SLEEP_S)]),
             ("python", [PYTHON, "-c", PY_IDLE])]
    for name, cmd in cases:
        rc0, bare = child_cpu(cmd, dict(os.environ))
        check("%s: runs without the agent" % name, rc0 == 0, "status %d" % rc0)
        for hz in ("99", "0"):
            rc, cpu = child_cpu(cmd, traced_env(out, RINGSIDE_SAMPLE_HZ=hz))
            label = "%s, sampler %s" % (name, "off" if hz == "0" else hz + " Hz")
            check("%s: runs under the agent" % label, rc == 0, "status %d" % rc)
            check("%s: the agent adds less than %.0f ms of CPU over %.0f s asleep" %
                  (label, LIMIT_S * 1e3, SLEEP_S), cpu - bare < LIMIT_S,
                  "%.1f ms with the agent, %.1f ms without" % (cpu * 1e3, bare * 1e3))
    cleanup(out)
    finish()


main()
