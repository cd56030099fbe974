#!/usr/bin/env python3
"""`ringside report --watch S DIR -o OUT` on a running job: simtrain on two
ranks under the agent (flushing every 200 ms), watched every second.

- while the job runs, OUT/report.json is rewritten (watch.final false, the
  pass number and the step count growing) and the page carries a refresh;
  in headless Chromium the page reloads itself to newer reports, with no
  console errors;
- the watch ends by itself once the job has ended (exit 0), with
  watch.final true and no refresh left in the page;
- the last report equals a one-shot `ringside report DIR -o OUT2` in every
  key but `reporter` and `watch`;
- it read the files' new frames only: watch.read_bytes equals the trace
  files' sizes (each byte once), not a multiple of them;
- on a finished job it ends after one period; on a folder that never gets
  a trace file, SIGTERM ends it with a clear message; usage errors (--json
  alone, no folder to rewrite; a period that is not a number of seconds)."""
import glob
import json
import os
import signal
import subprocess
import threading
import time

from rstest import AGENT, BUILD, RINGSIDE, check, cleanup, finish, run, tempdir
from samereport import differences

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
STEPS = 300

try:
    from headless import Browser, find_chromium
except ImportError:
    Browser = find_chromium = None


def start_job(d):
    out = os.path.join(d, "trace")
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "LD_PRELOAD",
              "RINGSIDE_JOB", "RINGSIDE_RANK_PID"):
        env.pop(k, None)
    env.update(LD_LIBRARY_PATH=SIM, SIMNCCL_TIMEOUT_S="60", RINGSIDE_OUT=out, RINGSIDE_FLUSH_MS="200",
               AGENT_SO=AGENT)
    script = 'export LD_PRELOAD="$AGENT_SO"; exec "$@"'
    cmd = [LAUNCH, "-n", "2", "--", "sh", "-c", script, "sh", TRAIN, "--steps", str(STEPS), "--fwd-us", "3000",
           "--bwd-us", "6000", "--ckpt-dir", d]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), out


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def page_reloads(out_dir):
    """The pass numbers the page shows at its load and 3 s later, with any
    console problems; None when there is no browser."""
    if not find_chromium or not find_chromium():
        return None
    with Browser() as b:
        b.open(os.path.join(out_dir, "index.html"))
        b.settle(0.5)
        first = b.eval("(document.getElementById('live')||{}).textContent||''")
        b.settle(3.0)
        later = b.eval("(document.getElementById('live')||{}).textContent||''")
        return first, later, b.problems()


def main():
    d = os.path.realpath(tempdir("watch"))
    try:
        job, trace = start_job(d)
        out = os.path.join(d, "out")
        w = subprocess.Popen([RINGSIDE, "report", "--watch", "1", trace, "-o", out], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        seen, page = [], None

        def poll():
            while job.poll() is None:
                rep = read_json(os.path.join(out, "report.json"))
                if rep and "watch" in rep and not rep["watch"]["final"]:
                    if not seen or rep["watch"]["pass"] != seen[-1][0]:
                        seen.append((rep["watch"]["pass"], rep.get("steps", {}).get("count", 0)))
                time.sleep(0.1)
        poller = threading.Thread(target=poll)
        poller.start()
        while job.poll() is None and page is None:
            if len(seen) >= 2:
                page = page_reloads(out) or ()
            time.sleep(0.1)
        poller.join()
        job.wait()
        check("the job runs", job.returncode == 0, job.stderr.read().decode()[-300:])
        try:
            wo, we = w.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            w.kill()
            wo, we = w.communicate()
        check("the watch ends by itself once the job has ended, status 0", w.returncode == 0,
              "status %s: %s" % (w.returncode, we.decode()[-300:]))
        check("reports while the job ran: %d, passes and steps %s" % (len(seen), seen[:6]),
              len(seen) >= 3 and all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(seen, seen[1:]))
              and seen[-1][1] > seen[0][1])
        if page:
            first, later, problems = page
            check("the running job's page reloads itself to a newer report (%r, then %r)" % (first, later),
                  "the job is running" in first and first != later)
            check("the running job's page: no console errors", not problems, str(problems[:3]))
        elif page is None:
            print("skip the page while the job runs: no Chromium")
        final = read_json(os.path.join(out, "report.json"))
        check("the last report is final", final and final["watch"]["final"] is True, str(final and final.get("watch")))
        with open(os.path.join(out, "index.html")) as f:
            html = f.read()
        check("the last page does not reload", 'http-equiv="refresh"' not in html and 'id="live"' not in html)
        sizes = sum(os.path.getsize(f) for f in glob.glob(os.path.join(trace, "*", "*.trace.lz4")))
        check("new frames only: %d bytes read for %d bytes of traces" % (final["watch"]["read_bytes"], sizes),
              final["watch"]["read_bytes"] == sizes)
        one = os.path.join(d, "one")
        p = run([RINGSIDE, "report", trace, "-o", one, "-q"])
        check("one-shot report", p.returncode == 0, p.stderr.decode()[-300:])
        ref = read_json(os.path.join(one, "report.json"))
        for r in (final, ref):
            r.pop("reporter", None)
        final.pop("watch", None)
        diffs = differences(final, ref)
        check("the last report equals the one-shot report (%d steps)" % (ref.get("steps", {}).get("count", 0)),
              not diffs, "; ".join(diffs[:5]))

        # A finished job: one report, then the last after one period.
        t0 = time.monotonic()
        p = run([RINGSIDE, "report", "--watch", "0.5", trace, "-o", os.path.join(d, "again"), "-q"], timeout=60)
        again = read_json(os.path.join(d, "again", "report.json"))
        check("a finished job: the watch ends after a period (%.1f s), final" % (time.monotonic() - t0),
              p.returncode == 0 and again and again["watch"]["final"] and again["watch"]["pass"] == 2,
              p.stderr.decode()[-300:])

        # A folder that never gets a trace file: SIGTERM ends the watch.
        empty = os.path.join(d, "never")
        w = subprocess.Popen([RINGSIDE, "report", "--watch", "0.2", empty, "-o", os.path.join(d, "none")],
                             stderr=subprocess.PIPE)
        time.sleep(1.0)
        w.send_signal(signal.SIGTERM)
        _, err = w.communicate(timeout=30)
        check("no trace files, SIGTERM: status 1 and a message", w.returncode == 1 and b"no trace files" in err,
              "status %s: %s" % (w.returncode, err.decode()[-200:]))
        for args, why in ((["--watch", "1", trace, "--json", os.path.join(d, "r.json")], "with --json alone"),
                          (["--watch", "0", trace, "-o", out], "0 s"),
                          (["--watch", "x", trace, "-o", out], "not a number")):
            p = run([RINGSIDE, "report"] + args)
            check("--watch %s: usage error (status 2)" % why, p.returncode == 2, str(p.returncode))
    finally:
        cleanup(d)
    finish()


main()
