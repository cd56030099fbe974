#!/usr/bin/env python3
"""ringside report --memory-mb N: too small a bound stops the report at once
with status 1, no output, and one line giving the MB it would need; given
that many, the report is written and the process's peak memory, as the
kernel measured it (the finished child's ru_maxrss), stays within it. A bound
that is no number of MB is a usage error (status 2)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, RINGSIDE, check, cleanup, finish, run, tempdir  # noqa: E402

GEN_JOB = os.path.join(BUILD, "gen_job")


def peak_of(cmd):
    """(returncode, stderr, peak RSS MB of cmd) from a Python whose only child it is."""
    probe = ("import resource,subprocess,sys\n"
             "p=subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
             "sys.stdout.write('%d %d\\n' % (p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
             "sys.stdout.write(p.stderr.decode())")
    p = run([sys.executable, "-c", probe] + cmd, timeout=300)
    first, _, err = p.stdout.decode().partition("\n")
    rc, kb = first.split()
    return int(rc), err, int(kb) / 1024.0


def main():
    d = tempdir("memory")
    try:
        traces = os.path.join(d, "t")
        p = run([GEN_JOB, "-n", "16", "-e", "20000", "-o", traces])
        if not check("gen_job", p.returncode == 0, p.stderr.decode()[-300:]):
            finish()
        small = os.path.join(d, "small")
        rc, err, _ = peak_of([RINGSIDE, "report", traces, "-o", small, "--memory-mb", "1", "-q"])
        lines = [x for x in err.splitlines() if x.strip()]
        m = re.search(r"give --memory-mb (\d+) or more", err)
        check("--memory-mb 1: status 1, one line saying how many MB, no output",
              rc == 1 and len(lines) == 1 and m and not os.path.exists(small), "%d %r" % (rc, err[-400:]))
        if m:
            need = int(m.group(1))
            out = os.path.join(d, "out")
            rc, err, peak = peak_of([RINGSIDE, "report", traces, "-o", out, "--memory-mb", str(need), "-q"])
            check("--memory-mb %d (what it asked for): the report" % need,
                  rc == 0 and os.path.exists(os.path.join(out, "report.json")), "%d %s" % (rc, err[-300:]))
            check("--memory-mb %d: the kernel's peak (%.1f MB) within the bound" % (need, peak), peak <= need,
                  "peak %.1f MB" % peak)
        for bad in ("0", "abc", "-5"):
            p = run([RINGSIDE, "report", traces, "-o", os.path.join(d, "bad"), "--memory-mb", bad])
            check("--memory-mb %s: usage error" % bad, p.returncode == 2 and b"--memory-mb" in p.stderr,
                  "%d %s" % (p.returncode, p.stderr.decode()[:200]))
    finally:
        cleanup(d)
    finish()


main()
