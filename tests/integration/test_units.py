#!/usr/bin/env python3
"""One unit and honest sums (docs/reporter.md, Units), on a demo-like job (4 simulated
ranks with data loading, checkpoints and a straggler) and on a Python
program whose threads sleep at the same time:
- sizes read in one unit family, binary (B, KiB, MiB, GiB), in the page's
  text in headless Chromium, in the terminal summary and on the diff page;
  rates (GB/s, MB/s) are not sizes; the page's storage card gives the
  terminal's figures;
- the findings as the page shows them run largest gain first ("up to N%"
  on each card, unmeasured last), the same order and figures as
  report.json's recoverable_pct, and the header's first line names the
  first of them;
- no figure per GPU above 100%: every percentage in the page's text (those
  of a change, signed, aside), each process's GPU figures and its busiest
  stream's idle split in report.json, and diff.json's GPU figures;
- the GPU flame graph adds up to the kernels' GPU time in the simulator's
  truth file (compute kernels, and collectives from when their stream
  reaches them), within 1%, and with its copies frame to the kernel table's
  GPU time in all; its subtitle says the sampling RINGSIDE_GPU_STACK_EVERY
  asked for;
- the threaded program: no thread blocked longer than the program ran
  (timed from outside), and the page names the sums over threads
  thread-seconds, beside the most blocked thread's own time."""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, PYTHON, RINGSIDE, check, cleanup, finish, report, run, skip, tempdir, \
    traced_env  # noqa: E402
from simtruth import kernel_time_ns  # noqa: E402
import headless  # noqa: E402

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
NRANKS = 4
STACK_EVERY = 7        # not the default (10): the subtitle must say what was asked for
THREADS, SLEEP_S = 6, 0.4

# A size as text: a number and a unit of bytes, not followed by "/s" (a rate).
SIZE = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(B|[kKMGTP]i?B)\b(?!/s)")
BINARY = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
PCT = re.compile(r"([+\-\u2212]?)(\d+(?:\.\d+)?)\s?%")

TABLE = """(function(id){var t=document.getElementById(id);if(!t)return null;
  return {head:[].map.call(t.tHead.rows[0].cells,function(c){return c.textContent;}),
          rows:[].map.call(t.tBodies[0].rows,function(r){return [].map.call(r.cells,function(c){
            return c.hasAttribute('data-v')?+c.getAttribute('data-v'):c.textContent;});})};})"""


def size_units(text):
    return {m.group(1) for m in SIZE.finditer(text)}


def unit_checks(name, text):
    units = size_units(text)
    check(name + ": sizes in binary units only", units and units <= BINARY,
          "units seen: %s" % sorted(units))


def demo_job(d):
    out = os.path.join(d, "trace")
    env = dict(traced_env(out, RINGSIDE_GPU_STACK_EVERY=STACK_EVERY), LD_LIBRARY_PATH=SIM,
               SIMGPU_TRUTH=os.path.join(d, "truth"), SIMNCCL_TIMEOUT_S="30")
    p = run([LAUNCH, "-n", str(NRANKS), "--", TRAIN, "--steps", "30", "--layers", "4", "--data-us", "2000",
             "--ckpt-every", "10", "--ckpt-mb", "16", "--ckpt-dir", d, "--straggler", "2:1.5"],
            env=env, timeout=180)
    if not check("units: the demo-like job runs", p.returncode == 0, p.stderr.decode()[-500:]):
        return None
    return out


FINDINGS = """[].map.call(document.querySelectorAll('ol.findings > li'), function(li){
  var h = li.querySelector('h3'), g = li.querySelector('.gain');
  return {title: h.firstChild.textContent, gain: g ? g.textContent : null,
          shown: li.getBoundingClientRect().height > 0};})"""


def findings_checks(rep, cards, first):
    rj = json.load(open(os.path.join(rep, "report.json")))
    fs = rj.get("findings", [])
    if not check("units page: the job has findings to rank", len(fs) >= 2 and len(cards) == len(fs),
                 "%d in report.json, %d cards" % (len(fs), len(cards))):
        return
    gains = []
    for c in cards:
        m = re.match(r"(?:up to|gives back) (\d+)%", c["gain"] or "")
        gains.append(int(m.group(1)) if m else None)
    measured = [g for g in gains if g is not None]
    check("units page: findings shown largest gain first, unmeasured last",
          all(c["shown"] for c in cards) and measured == sorted(measured, reverse=True) and
          gains[:len(measured)] == measured, "%s" % [(c["title"], c["gain"]) for c in cards])
    want = [(f.get("title"), round(f["recoverable_pct"]) if f.get("recoverable_pct") is not None else None)
            for f in fs]
    check("units page: the cards are report.json's findings, in its order, with its figures",
          [(c["title"], g) for c, g in zip(cards, gains)] == want,
          "page %s, json %s" % (list(zip([c["title"] for c in cards], gains)), want))
    check("units page: the header is report.json's headline, the first finding's gain",
          first and rj.get("headline") and first.strip() == rj["headline"] and ("%d%%" % gains[0]) in first,
          "%r against %r" % (first, rj.get("headline")))


def page_checks(rep, summary):
    with headless.Browser() as b:
        b.open(os.path.join(rep, "index.html"))
        text = b.eval("document.body.innerText")
        cards = b.eval(FINDINGS)
        first = b.eval("(document.getElementById('recoverable')||{}).innerText||null")
    findings_checks(rep, cards, first)
    unit_checks("units page", text)
    unit_checks("units summary", summary)
    over = [m.group(0) for m in PCT.finditer(text) if not m.group(1) and float(m.group(2)) > 100]
    check("units page: no percentage above 100", not over, "%s" % over[:10])
    term = re.search(r"file I/O: (.+?) read, (.+?) written", summary)
    card = re.search(r"\n([^\n]+) / ([^\n]+)\nStorage read / written", text)
    check("units page: the storage card gives the terminal's sizes",
          term and card and term.groups() == card.groups(),
          "terminal %s, page %s" % (term and term.groups(), card and card.groups()))


def gpu_checks(rep, d):
    rj = json.load(open(os.path.join(rep, "report.json")))
    probs = []
    for p in rj["processes"]:
        g = p.get("gpu")
        if not g:
            continue
        for k, v in g.items():
            if k.endswith("_pct") and not 0 <= v <= 100:
                probs.append("rank %s %s %.1f" % (p.get("rank"), k, v))
        busiest = g.get("idle_busiest_stream", {})
        idle = sum(busiest.get(k, 0) for k in ("host_wait_us", "kernel_wait_us", "other_us"))
        if idle > g["span_us"] * 1.0001:
            probs.append("rank %s: busiest stream idle %.0f us of a %.0f us span" % (p.get("rank"), idle, g["span_us"]))
    check("units report.json: GPU figures per process within 100%", not probs, "; ".join(probs[:6]))

    # the simulator's operations (simtrain's own step lines aside)
    truth = [t for t in (json.loads(line) for line in open(os.path.join(d, "truth")) if line.strip())
             if t.get("kind") != "step"]
    want = sum(kernel_time_ns(truth, r, True) for r in range(NRANKS))
    folded = [line.rsplit(" ", 1) for line in open(os.path.join(rep, "flame-gpu.folded")) if line.strip()]
    total = sum(int(w) for _, w in folded)
    copies = sum(int(w) for s, w in folded if "[copies and sets" in s)
    check("units flame: GPU flame graph's kernels within 1% of the truth's kernel time",
          want > 0 and abs((total - copies) - want) <= 0.01 * want,
          "flame %.2f ms of kernels, truth %.2f ms" % ((total - copies) / 1e6, want / 1e6))
    table = sum(p.get("gpu_time_us", {}).get("kernels", 0) + p.get("gpu_time_us", {}).get("copies", 0)
                for p in rj["processes"]) * 1e3
    check("units flame: GPU flame graph adds up to the kernel table's GPU time",
          table > 0 and abs(total - table) <= 1e-4 * table, "flame %.3f ms, table %.3f ms" % (total / 1e6, table / 1e6))
    svg = open(os.path.join(rep, "flame-gpu.svg")).read()
    check("units flame: the subtitle says the sampling", "1 kernel launch in %d per thread" % STACK_EVERY in svg,
          re.search(r'y="40"[^>]*>([^<]*)', svg).group(1) if re.search(r'y="40"[^>]*>([^<]*)', svg) else "none")

    out = os.path.join(d, "diff")
    p = run([RINGSIDE, "diff", rep, rep, "-o", out, "-q"])
    if check("units diff: runs", p.returncode == 0, p.stderr.decode()[-300:]):
        dj = json.load(open(os.path.join(out, "diff.json")))
        over = ["%s %s %.1f" % (k, s, v[s]) for k, v in dj["gpu"].items() for s in ("before", "after")
                if k.endswith("_pct") and not 0 <= v[s] <= 100]
        check("units diff.json: GPU figures within 100%", not over, "; ".join(over))
        html = open(os.path.join(out, "diff.html"), encoding="utf-8").read()
        unit_checks("units diff page", re.sub(r"<[^>]*>", " ", html.split("<script", 1)[0]))


def threads_checks(d):
    out = os.path.join(d, "threads-trace")
    script = os.path.join(d, "sleepers.py")
    with open(script, "w") as f:
        f.write("import threading, time\n"
                "ts = [threading.Thread(target=time.sleep, args=(%r,)) for _ in range(%d)]\n"
                "for t in ts: t.start()\n"
                "for t in ts: t.join()\n" % (SLEEP_S, THREADS))
    t0 = time.monotonic()
    p = run([PYTHON, script], env=traced_env(out))
    wall = time.monotonic() - t0
    if not check("units threads: the program runs", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    rj = report(out)
    procs = [x for x in rj["processes"] if x.get("threads")]
    if not check("units threads: off-CPU time recorded", procs, "no process with threads"):
        return
    x = procs[0]
    waits = [t["wait_s"] for t in x["threads"]]
    check("units threads: the sleepers' waits add up past the wall time (the case the naming is for)",
          x["wait_s"] > wall, "%.3f thread-s blocked, %.3f s wall" % (x["wait_s"], wall))
    check("units threads: no thread blocked longer than the program ran",
          max(waits) <= wall and x["most_blocked_thread_s"] <= wall,
          "threads %s, most %.3f s, wall %.3f s" % (waits, x["most_blocked_thread_s"], wall))
    rep = os.path.join(d, "threads-rep")
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    if not check("units threads: report", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    with headless.Browser() as b:
        b.open(os.path.join(rep, "index.html"))
        t = b.eval(TABLE + "('table-offcpu')")
    if not check("units threads: the page has the off-CPU table", t, "none"):
        return
    head = t["head"]
    check("units threads: sums over threads named thread-s",
          "blocked, thread-s" in head and "running, thread-s" in head, "%s" % head)
    most = head.index("most blocked thread") if "most blocked thread" in head else -1
    check("units threads: the most blocked thread's time within the wall time",
          most >= 0 and all(0 < r[most] <= wall for r in t["rows"]),
          "rows %s, wall %.3f s" % ([r[most] for r in t["rows"]] if most >= 0 else head, wall))


def main():
    if not headless.find_chromium():
        skip("units", "no chromium")
        finish()
    d = tempdir("units")
    out = demo_job(d)
    if out:
        rep = os.path.join(d, "rep")
        p = run([RINGSIDE, "report", out, "-o", rep])
        if check("units: ringside report", p.returncode == 0, p.stderr.decode()[-300:]):
            page_checks(rep, p.stdout.decode() + p.stderr.decode())
            gpu_checks(rep, d)
    threads_checks(d)
    cleanup(d)
    finish()


if __name__ == "__main__":
    main()
