#!/usr/bin/env python3
"""The agent on a host whose clocksource is not the TSC (a VM with
kvm-clock, say): its hooks then time with CLOCK_MONOTONIC and take the
general path, not the TSC fast path. Where this machine's clocksource is
the TSC, RINGSIDE_TEST_NO_TSC=1 makes the agent behave as there, and this
test runs the I/O capture tests again with it set: byte counts of real
programs, exact counts from 16 threads, recorded times against the
program's own clock, a 3 s call's duration and wait sample, wait samples,
and pthread_cancel in a hooked call. Their truths are their own; each check
is reported again here under "no TSC: "."""
import os
import subprocess

from rstest import PYTHON, ROOT, check, cleanup, finish, relay, run, tempdir, traced_env

HERE = os.path.join(ROOT, "tests", "integration")
TESTS = ["test_io_programs.py", "test_agent_threads.py", "test_agent_clock.py",
         "test_agent_long_call.py", "test_sample_wait.py", "test_agent_cancel.py"]


def main():
    out = tempdir("trace-notsc")
    p = run(["true"], env=traced_env(out, RINGSIDE_TEST_NO_TSC=1, RINGSIDE_LOG=2))
    lines = p.stderr.decode().splitlines()
    check("no TSC: the agent says its hooks read CLOCK_MONOTONIC",
          any("hooks read CLOCK_MONOTONIC (RINGSIDE_TEST_NO_TSC)" in l for l in lines), str(lines))
    cleanup(out)
    env = dict(os.environ, RINGSIDE_TEST_NO_TSC="1")
    for t in TESTS:
        p = subprocess.run([PYTHON, os.path.join(HERE, t)], env=env, cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
        words = [relay(line, "no TSC: %s: " % t) for line in p.stdout.splitlines()]
        for line in p.stdout.splitlines():
            if line.startswith("    "):
                print(line)
        failed = words.count("not ok")
        check("no TSC: %s ran to its end" % t, words.count("ok") + failed > 0 and
              p.returncode == (1 if failed else 0) and "Traceback" not in p.stderr,
              "status %d: %s" % (p.returncode, p.stderr[-500:]))
    finish()


main()
