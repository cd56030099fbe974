#!/usr/bin/env python3
"""Flame graphs of a stretch of the run: `ringside flame --from S --to S`.

tests/programs/two_phases spins in first() for 2 s of wall time, then in
second() for 2 s. `--from 0 --to 2` and `--from 2 --to 4` (seconds from the
job's start, which is the process's start) each give the right function 90%
or more of the CPU time (sampled.py: 10 points for the bounds, or 4 sd); the two windows together hold what the whole run
does (within 2%: a sample on a bound counts in one window); a window after
the end has no samples. The phases are the program's own wall clock from
main, which starts a few milliseconds after the job (the agent's start-up).
Waits are cut to the part inside a window: not held here."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import PROG, RINGSIDE, check, finish, flame_shares, run, tempdir, traced_env  # noqa: E402
from sampled import cpu_samples, samples_in, share_check  # noqa: E402


def shares(out, *window):
    return flame_shares(out, ("first", "second"), "-q", *window)


def main():
    work = tempdir("flame-window")
    out = os.path.join(work, "t")
    p = run([os.path.join(PROG, "two_phases"), "2"], env=traced_env(out, RINGSIDE_SAMPLE_HZ=499), timeout=60)
    if not check("two_phases runs under the agent", p.returncode == 0 and b"phase_ns=" in p.stdout,
                 p.stderr.decode(errors="replace")[-300:]):
        finish()
    whole, wtotal, _ = shares(out)
    parts = 0
    counted = cpu_samples(out)
    for window, want in ((["--from", "0", "--to", "2"], "first"), (["--from", "2", "--to", "4"], "second")):
        by, total, q = shares(out, *window)
        parts += total
        share_check("%s: %s's share of %.2f s of CPU" % (" ".join(window), want, total / 1e9),
                    100.0 * by[want] / max(total, 1), 100.0, samples_in(total, counted), floor=10.0,
                    detail="%s; %s" % (by, q.stderr.decode()[-200:]))
    check("the two windows hold the whole run's CPU time (%.3f against %.3f s)" % (parts / 1e9, wtotal / 1e9),
          wtotal > 0 and abs(parts - wtotal) <= 0.02 * wtotal, "")
    _, late, q = shares(out, "--from", "30")
    check("a window after the end: no samples", late == 0, q.stderr.decode()[-200:])
    q = run([RINGSIDE, "flame", out, "--from", "3", "--to", "1", "-o", "-"])
    check("--to before --from: a usage error (status 2)", q.returncode == 2, q.stderr.decode()[-200:])
    finish()


if __name__ == "__main__":
    main()
