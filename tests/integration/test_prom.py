#!/usr/bin/env python3
"""`ringside report --watch --prom-dir DIR` read by a real node_exporter.

Debian's prometheus-node-exporter, started here on loopback with its
textfile collector on DIR, is scraped every second while `report --watch 1`
follows a running simtrain job (2 ranks, 3000 steps): the ringside figures
are there with the job's id (its folder's name) and each rank as labels,
node_exporter reads the file without error, the step count grows while the
job runs, and the last scrape's count is the job's own (the steps it was
told to run), every rank has its figures, ratios lie in 0..1."""
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, RINGSIDE, check, cleanup, finish, free_port, skip, tempdir, traced_env  # noqa: E402

EXPORTER = "/usr/bin/prometheus-node-exporter"
STEPS = 3000


def scrape(port):
    """{(name, frozenset(labels)): value} of ringside_* and the textfile error."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    got = {}
    for line in text.splitlines():
        m = re.match(r'^(ringside_\w+|node_textfile_scrape_error)(\{(.*)\})? (\S+)$', line)
        if m:
            labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
            got[(m.group(1), labels)] = float(m.group(4))
    return got


def main():
    if not os.path.exists(EXPORTER):
        skip("prom: %s is missing (make deps installs prometheus-node-exporter)" % EXPORTER)
        finish()
    work = tempdir("prom")
    root, prom, out = (os.path.join(work, n) for n in ("trace", "prom", "report"))
    os.makedirs(prom)
    port = free_port()
    ne = subprocess.Popen([EXPORTER, "--web.listen-address=127.0.0.1:%d" % port, "--collector.disable-defaults",
                           "--collector.textfile", "--collector.textfile.directory=" + prom],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    env = traced_env(root, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"))
    env["AGENT_SO"] = env.pop("LD_PRELOAD")
    job = subprocess.Popen([os.path.join(BUILD, "simlaunch"), "-n", "2", "--", "sh", "-c",
                            'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", os.path.join(BUILD, "simtrain"),
                            "--steps", str(STEPS)],
                           env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (os.path.isdir(root) and os.listdir(root)):
            time.sleep(0.1)
        folder = os.listdir(root)[0] if os.path.isdir(root) and os.listdir(root) else None
        if not check("the job's folder appears", folder, "nothing in %s" % root):
            finish()
        watch = subprocess.Popen([RINGSIDE, "report", root, "--watch", "1", "-o", out, "--prom-dir", prom, "-q"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        seen, errors = [], []
        while True:
            time.sleep(1)
            try:
                got = scrape(port)
            except OSError as e:
                errors.append(str(e))
                continue
            errors += ["textfile error"] if got.get(("node_textfile_scrape_error", frozenset())) else []
            steps = got.get(("ringside_steps", frozenset({("job", folder)})))
            if steps is not None:
                seen.append((job.poll() is None, steps, got))
            if watch.poll() is not None:
                # once more: the last report may have come after that scrape
                time.sleep(0.5)
                got = scrape(port)
                seen.append((False, got.get(("ringside_steps", frozenset({("job", folder)}))), got))
                break
        job.wait(timeout=60)
        wout, werr = watch.communicate(timeout=60)
        check("report --watch ends by itself once the job has, status 0", watch.returncode == 0,
              werr.decode(errors="replace")[-300:])
        check("node_exporter scraped without errors", not errors, str(errors[:3]))
        running = [s for alive, s, _ in seen if alive]
        check("the step count grows while the job runs (%s)" % running[:6],
              len(running) >= 2 and running[-1] > running[0], str(seen[:3])[:300])
        last = seen[-1][2] if seen else {}
        check("the last scrape's step count is the job's %d steps" % STEPS,
              last.get(("ringside_steps", frozenset({("job", folder)}))) == STEPS, str(seen[-1][1] if seen else None))
        ranks = {dict(k[1]).get("rank") for k in last if k[0] == "ringside_gpu_busy_ratio"
                 and dict(k[1]).get("job") == folder}
        check("per-rank figures labelled by job and rank 0 and 1", ranks == {"0", "1"}, str(ranks))
        names = {k[0] for k in last}
        want = {"ringside_step_seconds", "ringside_gpu_busy_ratio", "ringside_sm_activity_ratio",
                "ringside_sync_wait_ratio", "ringside_transfer_exposed_ratio", "ringside_straggler"}
        check("the figures a dashboard needs are there", want <= names, str(sorted(want - names)))
        busy = [v for k, v in last.items() if k[0] == "ringside_gpu_busy_ratio"]
        check("ratios lie in 0..1", busy and all(0 <= v <= 1 for v in busy), str(busy))
    finally:
        for p in (job, ne):
            if p.poll() is None:
                p.kill()
                p.wait()
    cleanup(work)
    finish()


if __name__ == "__main__":
    main()
