#!/usr/bin/env python3
"""A program that sleeps costs (almost) no CPU more under the agent: its
writer thread waits for the flush period between passes whether or not it
has anything to write. Two idle cases, each with the CPU sampler on (the
default) and off: `sleep`, which makes no recorded event (so no trace file
is opened), and a Python script that reads its modules and then sleeps
(a file, then nothing new). The truth is the kernel's accounting of the
child (user + system time), run without the agent and with it."""
import os
import resource
import subprocess

from rstest import PYTHON, check, cleanup, finish, tempdir, traced_env

SLEEP_S = 2.0
# 1% of the sleep: the writer's timed passes cost microseconds each, two a
# second; a writer that loops without waiting costs hundreds of ms.
LIMIT_S = SLEEP_S / 100


def child_cpu(cmd, env):
    """User + system seconds of one run of cmd, from the kernel."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return p.returncode, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    out = tempdir("trace-idle")
    cases = [("sleep", ["sleep", str(SLEEP_S)]),
             ("python", [PYTHON, "-c", "import json, time; time.sleep(%s)" % SLEEP_S])]
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
