#!/usr/bin/env python3
"""index.html in real headless Chromium (Debian's chromium), driven over the
DevTools protocol: no console errors, exceptions, dialogs or requests off
the machine; the summary and the timeline on the first screen; zoom, pan,
hover and sorting work; names from traces with < > & and quotes show as
text and run nothing. Pages: `ringside report -o OUT` of a program that
writes files with such names (file I/O only), and the html_driver page from
a hand-written report.json, a real Kineto trace and a process whose kernel
names are HTML. Jobs without a straggler (simtrain's equal ranks, gen_job's)
show none, not in red.

At scale: gen_job's 64 ranks give a page under 1 MB, its 1,024 ranks one
under 3 MB that loads in a few seconds with both heatmaps drawn (their
columns' brightness, read from a screenshot, follows report.json's bins;
hover gives report.json's value), no outlier named, lanes for a few ranks
and a note on what was left out; simtrain's rank slowed by --straggler is
named as the outlier; report.json's "lanes" label the lanes and cut them to
its window; with more than 8 processes and no "lanes" the page picks rank
0, the straggler, the slowest and the fastest. The screenshots are kept in
build/tests/ (and the 1,024-rank page's first screen in /tmp/html1024.png)
to be looked at."""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, PYTHON, RINGSIDE, check, cleanup, finish, report_problems, run, skip, \
    tempdir, traced_env  # noqa: E402
import headless  # noqa: E402

KINETO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                       "..", "shared", "data", "kineto"))
DRIVER = os.path.join(BUILD, "tests", "html_driver")
SHOTS = os.path.join(BUILD, "tests")

# File names a traced program writes; the report must show them as text.
FILE_NAMES = ["<img src=x onerror=alert(1)>&\"'.dat",
              "<svg onload=alert(2)>\u2028&amp;.dat"]
FILE_BYTES = [12345, 777]
# Kernel names of the driver's hostile process (tests/tools/html_driver.c).
KERNEL_NAMES = ["<img src=x onerror=alert(1)>&\"'",
                "</script><script>alert(2)</script>",
                "<svg onload=alert(3)>\u2028line\u2029sep",
                "ncclKernel_<b>AllReduce</b>&amp;\"'"]

NO_INJECTION = """(function(){var bad=[];
  document.querySelectorAll('*').forEach(function(e){
    for (var i=0;i<e.attributes.length;i++){var a=e.attributes[i].name;
      if(/^on/.test(a))bad.push(e.tagName+' '+a);}});
  document.querySelectorAll('img,b,i').forEach(function(e){bad.push('element '+e.tagName);});
  return bad;})()"""

VISIBLE = """(function(id){var e=document.getElementById(id);if(!e)return 'missing';
  var r=e.getBoundingClientRect();if(r.width<=0||r.height<=0)return 'empty';
  if(r.top>=innerHeight||r.bottom<=0)return 'below the first screen (top '+r.top+')';
  var s=getComputedStyle(e);if(s.display==='none'||s.visibility!=='visible')return 'hidden';
  return 'ok';})"""


def colour_pixels(img, box, colour, tol=40):
    """Pixels of img within box (x0, y0, x1, y1) close to colour."""
    x0, y0, x1, y1 = max(0, box[0]), max(0, box[1]), min(img.width, box[2]), min(img.height, box[3])
    n = 0
    for y in range(y0, y1):
        row, bpp = img.rows[y], img.bpp
        for o in range(x0 * bpp, x1 * bpp, bpp):
            if abs(row[o] - colour[0]) <= tol and abs(row[o + 1] - colour[1]) <= tol and \
               abs(row[o + 2] - colour[2]) <= tol:
                n += 1
    return n


def hexrgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def box_of(b, sel):
    r = b.eval("(function(){var r=document.querySelector(%s).getBoundingClientRect();"
               "return [r.left,r.top,r.right,r.bottom];})()" % json.dumps(sel))
    return tuple(int(v) for v in r)


def check_screenshot(name, b, path):
    b.screenshot(path)
    check(name + " screenshot written", os.path.getsize(path) > 1000, path)
    img = headless.png_pixels(path)
    colours = {img.pixel(x, y) for y in range(0, img.height, 7) for x in range(0, img.width, 7)}
    check(name + " screenshot not blank", len(colours) > 40,
          "%d distinct colours in %dx%d" % (len(colours), img.width, img.height))
    # The summary's text: dark pixels inside the summary box.
    sb = box_of(b, "#summary")
    dark = colour_pixels(img, sb, (31, 35, 40), 60)
    check(name + " screenshot shows the summary", dark > 800,
          "%d dark pixels in the summary box %s" % (dark, sb))
    return img


def page_text_checks(name, b, html, names):
    raw = open(html, encoding="utf-8").read()
    report_problems(name + " no console errors, exceptions, dialogs or requests", b.problems())
    check(name + " script ran", b.eval("document.body.getAttribute('data-ready')") == "1")
    for n in names:
        check(name + " raw name not in the file: %r" % n, n not in raw)
    report_problems(name + " no element or handler injected by names", b.eval(NO_INJECTION))


def report_page(work):
    """ringside report of a program that writes files with hostile names."""
    out = os.path.join(work, "trace")
    data = os.path.join(work, "data")
    os.makedirs(data)
    script = os.path.join(work, "write.py")
    with open(script, "w") as f:
        f.write("import sys\nnames=%r\nsizes=%r\n"
                "for n,s in zip(names,sizes):\n"
                "    with open(n,'wb') as o: o.write(b'x'*s)\n" % (FILE_NAMES, FILE_BYTES))
    p = run([PYTHON, script], env=traced_env(out), cwd=data)
    if not check("html report: traced program ran", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    for n, s in zip(FILE_NAMES, FILE_BYTES):
        check("html report: %r written" % n, os.path.getsize(os.path.join(data, n)) == s)
    rep = os.path.join(work, "rep")
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    html = os.path.join(rep, "index.html")
    if not check("html report: ringside report writes index.html",
                 p.returncode == 0 and os.path.exists(html), p.stderr.decode()[-300:]):
        return
    with headless.Browser() as b:
        b.open(html)
        page_text_checks("html report:", b, html, FILE_NAMES)
        check("html report: summary on the first screen",
              b.eval(VISIBLE + "('summary')") == "ok", b.eval(VISIBLE + "('summary')"))
        cells = b.eval("Array.prototype.map.call(document.querySelectorAll('#table-io td.name'),"
                       "function(c){return c.textContent;})")
        for n, s in zip(FILE_NAMES, FILE_BYTES):
            check("html report: file name shown as text: %r" % n,
                  any(c.endswith("/" + n) for c in cells), "names in the table: %r" % cells)
        lanes = b.eval("Array.prototype.map.call(document.querySelectorAll('#tl g'),"
                       "function(g){return g.getAttribute('data-lane');})")
        check("html report: file I/O only, so one I/O lane", len(lanes) == 1 and
              lanes[0].endswith(" I/O"), repr(lanes))
        # The path comes back whole from the names table embedded in <script>
        # (per model, the names its lanes draw, by string id).
        paths = b.eval("Object.values(JSON.parse(document.getElementById('tl-names').textContent)[0])")
        for n in FILE_NAMES:
            check("html report: timeline names table holds %r" % n,
                  any(p.endswith("/" + n) for p in paths), "not among %d names" % len(paths))
        charts = b.eval("Array.prototype.map.call(document.querySelectorAll('.chart'),"
                        "function(c){return c.id;})")
        check("html report: storage charts only", charts == ["chart-read_mbs", "chart-write_mbs"],
              repr(charts))
        check_screenshot("html report:", b, os.path.join(SHOTS, "html-report-io.png"))


def sim_page(work):
    """ringside report -o of a 4-rank simtrain job with data loading and
    checkpoints (simulated GPU and NCCL): a lane row per rank, whatever
    lanes the traces give, the checkpoints drawn, no errors."""
    launch, train = os.path.join(BUILD, "simlaunch"), os.path.join(BUILD, "simtrain")
    if not (os.path.exists(launch) and os.path.exists(train)):
        check("html sim: simulator built", False, "no %s or %s (make test-build)" % (launch, train))
        return
    out, ck, rep = (os.path.join(work, d) for d in ("sim-trace", "sim-ckpt", "sim-rep"))
    env = traced_env(out, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), SIMNCCL_TIMEOUT_S=30)
    env.pop("LD_PRELOAD")
    env["AGENT_SO"] = os.path.join(BUILD, "libagent.so")
    p = run([launch, "-n", "4", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh",
             train, "--steps", "8", "--data-us", "1000", "--ckpt-every", "4", "--ckpt-mb", "4",
             "--ckpt-dir", ck], env=env, timeout=120)
    if not check("html sim: simtrain ran", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    html = os.path.join(rep, "index.html")
    if not check("html sim: ringside report writes index.html",
                 p.returncode == 0 and os.path.exists(html), p.stderr.decode()[-300:]):
        return
    with open(os.path.join(rep, "report.json")) as f:
        rj = json.load(f)
    with headless.Browser() as b:
        b.open(html)
        report_problems("html sim: no console errors, exceptions, dialogs or requests", b.problems())
        for sec in ("summary", "tl"):
            v = b.eval(VISIBLE + "(%r)" % sec)
            check("html sim: %s on the first screen" % sec, v == "ok", v)
        lanes = b.eval("Array.prototype.map.call(document.querySelectorAll('#tl g'),"
                       "function(g){return [g.getAttribute('data-lane'),"
                       "g.querySelectorAll('rect').length];})")
        names = [l[0] for l in lanes]
        for r in range(4):
            check("html sim: rank %d has an I/O lane" % r, "rank %d I/O" % r in names, repr(names))
            # simtrain launches kernels on every rank: each has GPU work in
            # report.json, and a compute lane on the page.
            check("html sim: rank %d has GPU work in report.json and a compute lane" % r,
                  any(q.get("rank") == r and "gpu" in q for q in rj["processes"]) and
                  "rank %d compute" % r in names,
                  "GPU work in report.json for ranks %s; lanes %r" %
                  (sorted(q.get("rank") for q in rj["processes"] if "gpu" in q), names))
        ck_rects = sum(l[1] for l in lanes if l[0].endswith(" checkpoints"))
        check("html sim: every checkpoint of report.json drawn",
              ck_rects == len(rj.get("checkpoints", [])) > 0,
              "%d drawn, %d in report.json" % (ck_rects, len(rj.get("checkpoints", []))))
        check_screenshot("html sim:", b, os.path.join(SHOTS, "html-sim.png"))
        # four equal ranks: no straggler
        no_straggler_card("html sim:", b)
        # The processes table carries report.json's per-process figures.
        col = b.eval("Array.prototype.map.call(document.querySelectorAll('#table-processes th'),"
                     "function(h){return h.textContent;}).indexOf('GPU syncs')")
        cells = b.eval("Array.prototype.map.call(document.querySelectorAll("
                       "'#table-processes tbody tr'),function(r){return r.cells[%d].textContent;})"
                       % col)
        want = [str(q["syncs"]["count"]) if "syncs" in q else "" for q in rj["processes"]]
        check("html sim: GPU syncs per process as in report.json", cells == want,
              "%r != %r" % (cells, want))
        # Every flame graph ringside report wrote into OUT is in the page.
        svgs = sorted(f for f in os.listdir(rep) if f.startswith("flame-") and f.endswith(".svg"))
        frames = b.eval("Array.prototype.map.call(document.querySelectorAll('#flames iframe'),"
                        "function(f){return f.title;})")
        check("html sim: the flame graphs of OUT inlined", frames == svgs,
              "%r in the page, %r in OUT" % (frames, svgs))


STRAGGLER_CARD = """(function(){var r=null;document.querySelectorAll('.card').forEach(function(c){
  var k=c.querySelector('.k');if(k&&k.textContent==='Worst straggler')
  r=[c.classList.contains('warn'),c.querySelector('.v').textContent,c.querySelector('.d').textContent];});
  return r;})()"""


def no_straggler_card(name, b):
    """The straggler card of a job without one: "none", not in red."""
    card = b.eval(STRAGGLER_CARD)
    check(name + " straggler card says none stands out, not in red",
          card is not None and not card[0] and card[1] == "none" and "none stands out" in card[2],
          "card (red, value, detail): %r" % (card,))


def gen_job_page(work):
    """ringside report -o of gen_job's 8 equal ranks (every rank leaves each
    collective at the same time): no straggler on the page."""
    gen = os.path.join(BUILD, "gen_job")
    if not os.path.exists(gen):
        check("html gen_job: gen_job built", False, gen + " missing (make test-build)")
        return
    out, rep = os.path.join(work, "gen-trace"), os.path.join(work, "gen-rep")
    p = run([gen, "-n", "8", "-e", "20000", "-o", os.path.join(out, "job")])
    if not check("html gen_job: gen_job ran", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    html = os.path.join(rep, "index.html")
    if not check("html gen_job: ringside report writes index.html",
                 p.returncode == 0 and os.path.exists(html), p.stderr.decode()[-300:]):
        return
    with headless.Browser() as b:
        b.open(html)
        report_problems("html gen_job: no console errors, exceptions, dialogs or requests", b.problems())
        no_straggler_card("html gen_job:", b)


def hand_report(start_us):
    """A report.json as `report` writes it, with hostile text in every string."""
    h = KERNEL_NAMES[0]
    gpu = {"span_us": 4.2e5, "idle_pct": 21.5, "compute_pct": 52.0, "non_compute_pct": 26.5,
           "comm_pct": 31.0, "memcpy_pct": 4.0, "comm_comp_overlap_pct": 38.0,
           "exposed_comm_pct": 19.2, "idle_busiest_stream": {"host_wait_us": 5e4, "kernel_wait_us": 2e4,
                                               "other_us": 2e4}}
    procs = []
    for r in range(2):
        procs.append({"rank": r, "role": "rank", "host": "node" + h, "pid": 100 + r, "wall_s": 0.5,
                      "dropped": 0, "gpu": dict(gpu, compute_pct=52.0 + 8 * r),
                      "io": {"read_bytes": 10 ** 8, "write_bytes": 5 * 10 ** 8, "read_s": 0.1,
                             "write_s": 0.3, "files": [{"path": "/ckpt/" + h + str(r),
                                                        "read_bytes": 0, "write_bytes": 5e8,
                                                        "ops": 40, "time_s": 0.3}]},
                      "kernels": [{"name": KERNEL_NAMES[1], "count": 10 + r, "total_us": 900.0,
                                   "mean_us": 90.0},
                                  {"name": "sm80_gemm", "count": 100, "total_us": 5000.0 * (r + 1),
                                   "mean_us": 50.0}]})
    bins = 40
    return {"schema": "ringside-report/1", "job": "job" + h, "world_size": 2, "skew_us": 4.2,
            "processes": procs,
            "collectives": [{"op": "AllReduce", "comm": h, "ranks": 2, "bytes": 2.5e8, "count": 12,
                             "mean_us": 3100.0, "algbw_gbs": 80.6, "busbw_gbs": 80.6}],
            "checkpoints": [{"rank": 0, "start_s": 0.2, "dur_s": 0.08, "bytes": 5e8,
                             "gpu_stall_s": 0.05}],
            "checkpoint_pct": 16.0,
            "stragglers": [{"rank": 1, "score": 1.8, "evidence": "rank 0 waits " + h}],
            "findings": [{"id": "exposed_comm", "severity": "high", "title": "Exposed " + h,
                          "evidence": KERNEL_NAMES[2], "advice": KERNEL_NAMES[3]},
                         {"id": "ckpt", "severity": "medium", "title": "Checkpoint stall",
                          "evidence": {"pct": 16, "ranks": [0]}, "advice": "save asynchronously"}],
            "timeline": {"bin_us": 1e4, "start_us": start_us,
                         "ranks": [{"rank": r, "gpu_busy_pct": [(i * 7 + r * 20) % 100
                                                                for i in range(bins)],
                                    "comm_gbs": [(i % 5) * 3.0 for i in range(bins)],
                                    "read_mbs": [0.0] * bins,
                                    "write_mbs": [500.0 if 20 <= i < 28 else 0.0
                                                  for i in range(bins)]}
                                   for r in range(2)]}}


def first_kernel_us(path):
    import gzip
    with gzip.open(path, "rt") as f:
        d = json.load(f)
    return min(e["ts"] for e in d["traceEvents"] if e.get("cat") == "kernel")


def driver_page(work):
    trace = os.path.join(KINETO, "a100-2rank-r0-nccl.json.gz")
    if not os.path.exists(trace):
        skip("html driver page", "no Kineto trace at " + trace)
        return
    rj = os.path.join(work, "report.json")
    with open(rj, "w") as f:
        json.dump(hand_report(first_kernel_us(trace)), f)
    flame = os.path.join(work, "flame-cpu.svg")
    with open(flame, "w") as f:
        f.write('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="400" '
                'height="60"><rect width="300" height="20" fill="#e8743b"/><text y="15">main'
                '</text><script>document.querySelector("text").textContent="main()";</script></svg>')
    html = os.path.join(work, "index.html")
    p = run([DRIVER, html, rj, "--hostile", "--flame", flame, trace])
    if not check("html driver: page written", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    # Bad report.json: an error, not a page.
    bad = os.path.join(work, "bad.json")
    with open(bad, "w") as f:
        f.write('{"processes": [')
    p = run([DRIVER, os.path.join(work, "bad.html"), bad])
    check("html driver: malformed report.json is an error", p.returncode == 1 and
          b"Invalid argument" in p.stderr, p.stderr.decode())

    with headless.Browser() as b:
        b.open(html)
        page_text_checks("html driver:", b, html, KERNEL_NAMES)
        for sec in ("summary", "tl"):
            v = b.eval(VISIBLE + "(%r)" % sec)
            check("html driver: %s on the first screen" % sec, v == "ok", v)
        check("html driver: title shown as text",
              b.eval("document.title") == "ringside: job" + KERNEL_NAMES[0], b.eval("document.title"))
        finding = b.eval("document.querySelector('#findings li h3').firstChild.textContent")
        check("html driver: finding title as text", finding == "Exposed " + KERNEL_NAMES[0],
              repr(finding))
        ev = b.eval("document.querySelector('#findings li .ev').textContent")
        check("html driver: finding evidence as text", ev == KERNEL_NAMES[2], repr(ev))

        # The hostile process (rank 7): 400 GPU ops, classes as the driver
        # makes them, 60 file writes, 30 synchronisations; every one must be
        # on its lane, alone or inside a merged block.
        want = {"compute": 0, "communication": 0, "copies": 0, "I/O": 60, "waits": 30}
        for i in range(400):
            want["communication" if i % 4 == 3 else "copies" if i % 7 == 0 else "compute"] += 1
        got = b.eval("""(function(){var o={};
          document.querySelectorAll('#tl g[data-lane^="rank 7 "]').forEach(function(g){
            var n=0;g.querySelectorAll('rect').forEach(function(r){
              n+=+(r.getAttribute('data-k')||1);});
            o[g.getAttribute('data-lane').slice(7)]=n;});return o;})()""")
        check("html driver: every op of rank 7 on its lane", got == want, "%r != %r" % (got, want))
        merged = b.eval("document.querySelectorAll('#tl rect[data-k]').length")
        check("html driver: narrow ops merged", merged > 0, "no merged block")
        lanes = b.eval("""Array.prototype.map.call(document.querySelectorAll('#tl g'),
          function(g){return [g.getAttribute('data-lane'),g.querySelectorAll('rect').length];})""")
        names = [l[0] for l in lanes]
        for lane in ("rank 0 compute", "rank 0 communication", "rank 0 checkpoints"):
            check("html driver: lane " + lane, lane in names, repr(names))
        check("html driver: at most 4000 rectangles per lane", all(0 < l[1] <= 4000 for l in lanes),
              repr(lanes))
        io = [l for l in lanes if l[0] == "rank 0 checkpoints"]
        check("html driver: the checkpoint on rank 0's checkpoint lane", io and io[0][1] == 1,
              repr(io))

        # Hover: the tooltip names the op, as text.
        pos = b.eval("""(function(){var g=document.querySelector('#tl g[data-lane="rank 7 compute"]');
          var best=null,bw=0;g.querySelectorAll('rect:not([data-k])').forEach(function(r){
            var b=r.getBoundingClientRect();if(b.width>bw){bw=b.width;best=b;}});
          return best?[best.left+best.width/2,best.top+best.height/2]:null;})()""")
        if check("html driver: a wide op on rank 7", pos is not None):
            b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": pos[0], "y": pos[1]},
                   session=True)
            tip = b.eval("document.getElementById('tip').textContent")
            check("html driver: hover shows the name as text",
                  any(tip.startswith(n + "\n") for n in KERNEL_NAMES), repr(tip))
            check("html driver: hover shows the duration", "2.00 ms" in tip, repr(tip))
        img = check_screenshot("html driver:", b, os.path.join(SHOTS, "html-driver.png"))
        tb = box_of(b, "#tl")
        for lane, col in (("compute", "#43a047"), ("communication", "#e53935")):
            n = colour_pixels(img, tb, hexrgb(col), 30)
            check("html driver: screenshot shows the %s lanes" % lane, n > 300,
                  "%d pixels of %s in the timeline box %s" % (n, col, tb))

        # Zoom and pan through the controls, the wheel and a drag.
        vb = "document.getElementById('tl').getAttribute('viewBox')"
        w0 = float(b.eval(vb).split()[2])
        b.eval("document.getElementById('tl-in').click()")
        w1 = float(b.eval(vb).split()[2])
        check("html driver: + halves the shown span", abs(w1 - w0 / 2) < 1e-6 * w0, "%g %g" % (w0, w1))
        x1 = float(b.eval(vb).split()[0])
        b.eval("document.getElementById('tl-right').click()")
        check("html driver: pan right", float(b.eval(vb).split()[0]) > x1)
        cx, cy = (tb[0] + tb[2]) / 2, (tb[1] + tb[3]) / 2
        b.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": cx, "y": cy, "deltaX": 0,
                                            "deltaY": -100}, session=True)
        w2 = float(b.eval(vb).split()[2])
        check("html driver: wheel zooms in", w2 < w1, "%g -> %g" % (w1, w2))
        x2 = float(b.eval(vb).split()[0])
        for t, x in (("mousePressed", cx), ("mouseMoved", cx - 200), ("mouseReleased", cx - 200)):
            b.call("Input.dispatchMouseEvent", {"type": t, "x": x, "y": cy, "button": "left",
                                                "clickCount": 1}, session=True)
        check("html driver: drag pans", float(b.eval(vb).split()[0]) > x2)
        b.eval("document.getElementById('tl-reset').click()")
        check("html driver: whole run again", float(b.eval(vb).split()[2]) == w0)

        # Sorting: total time descending after two clicks on its header.
        b.eval("""(function(){var th=document.querySelectorAll('#table-kernels th')[3];
          th.click();th.click();})()""")
        first = b.eval("document.querySelector('#table-kernels tbody td.name').textContent")
        check("html driver: kernels sort by total time", first == "sm80_gemm", repr(first))
        kname = b.eval("Array.prototype.map.call(document.querySelectorAll('#table-kernels td.name'),"
                       "function(c){return c.textContent;})")
        check("html driver: kernel name as text in the table", KERNEL_NAMES[1] in kname, repr(kname))
        check("html driver: four utilisation charts",
              b.eval("document.querySelectorAll('#utilisation .chart polyline').length") == 8)
        # Hover on a chart: the values report.json has for that bin (bin 10
        # of 40: rank 0 (10 * 7) % 100, rank 1 (10 * 7 + 20) % 100).
        b.eval("document.getElementById('utilisation').scrollIntoView()")
        r = b.eval("(function(){var s=document.querySelector('#chart-gpu_busy_pct svg'),"
                   "r=s.getBoundingClientRect();return [r.left,r.top,r.width,r.height,"
                   "+s.getAttribute('data-x0'),+s.getAttribute('data-x1')];})()")
        x = r[0] + (r[4] + (r[5] - r[4]) * 10.5 / 40) / 600 * r[2]
        b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": r[1] + r[3] / 2},
               session=True)
        tip = b.eval("document.getElementById('tip').textContent").split("\n")
        check("html driver: chart hover shows each rank's value in that bin",
              tip[1:] == ["rank 0: 70.0 %", "rank 1: 90.0 %"], repr(tip))
        check("html driver: flame graph inlined",
              b.eval("document.querySelectorAll('#flames iframe.flame').length") == 1)
        b.eval("document.getElementById('flames').scrollIntoView()")
        b.settle(0.5)
        shot = os.path.join(SHOTS, "html-driver-flames.png")
        b.screenshot(shot)
        n = colour_pixels(headless.png_pixels(shot), box_of(b, "#flames iframe"),
                          (0xe8, 0x74, 0x3b), 20)
        check("html driver: the flame graph SVG renders in its frame", n > 3000,
              "%d pixels of its bar colour" % n)
        b.settle(0.5)
        report_problems("html driver: still no errors after the interaction", b.problems())
        b.screenshot(os.path.join(SHOTS, "html-driver-full.png"), full_page=True)


def kineto_page(work):
    """Real PyTorch profiler traces of a 2-rank job through import-kineto and
    ringside report -o: a compute and a communication lane per rank, and the
    templated kernel names of the files (full of < and >) as text."""
    import gzip
    traces = [os.path.join(KINETO, "sampled-2rank", "sampled_rank-%d.json.gz" % r) for r in (0, 1)]
    if not all(os.path.exists(t) for t in traces):
        skip("html kineto", "no traces in " + os.path.join(KINETO, "sampled-2rank"))
        return
    imp, rep = os.path.join(work, "kin"), os.path.join(work, "kin-rep")
    p = run([RINGSIDE, "import-kineto"] + traces + ["-o", imp])
    if not check("html kineto: import-kineto", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    p = run([RINGSIDE, "report", imp, "-o", rep, "-q"])
    html = os.path.join(rep, "index.html")
    if not check("html kineto: ringside report writes index.html",
                 p.returncode == 0 and os.path.exists(html), p.stderr.decode()[-300:]):
        return
    ranks, kernels, gpu_ops = [], set(), set()
    for t in traces:
        with gzip.open(t, "rt") as f:
            d = json.load(f)
        ranks.append(d["distributedInfo"]["rank"])
        kernels |= {e["name"] for e in d["traceEvents"] if e.get("cat") == "kernel"}
        gpu_ops |= {e["name"] for e in d["traceEvents"]
                    if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    angled = {k for k in kernels if "<" in k or ">" in k or "&" in k}
    raw = open(html, encoding="utf-8").read()
    with headless.Browser() as b:
        b.open(html)
        report_problems("html kineto: no console errors, exceptions, dialogs or requests",
                        b.problems())
        lanes = b.eval("Array.prototype.map.call(document.querySelectorAll('#tl g'),"
                       "function(g){return g.getAttribute('data-lane');})")
        for r in ranks:
            for lane in ("compute", "communication"):
                check("html kineto: rank %d %s lane" % (r, lane), "rank %d %s" % (r, lane) in lanes,
                      repr(lanes))
        names = set(sum(b.eval("JSON.parse(document.getElementById('tl-names').textContent)"
                               ".map(Object.values)"), []))
        shown = angled & names
        check("html kineto: kernel names with < > & come back whole", len(shown) > 5,
              "%d of %d such names in the page's names table" % (len(shown), len(angled)))
        check("html kineto: none of them raw in the file", not [k for k in angled if k in raw])
        table = set(b.eval("Array.prototype.map.call(document.querySelectorAll("
                           "'#table-kernels td.name'),function(c){return c.textContent;})"))
        check("html kineto: kernel table names are the files' names", table and table <= gpu_ops,
              repr(sorted(table - gpu_ops)[:3]))
        check_screenshot("html kineto:", b, os.path.join(SHOTS, "html-kineto.png"))


def many_page(work):
    """One process with 400000 GPU ops (the driver's --many): each lane is
    thinned to at most 4000 rectangles and still accounts for every op."""
    n = 400000
    rj = os.path.join(work, "many.json")
    with open(rj, "w") as f:
        json.dump({"job": "many"}, f)
    html = os.path.join(work, "many.html")
    p = run([DRIVER, html, rj, "--many", str(n)])
    if not check("html many: page written", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    check("html many: page under 2 MB", os.path.getsize(html) < 2 << 20,
          "%d bytes" % os.path.getsize(html))
    with headless.Browser() as b:
        b.open(html)
        report_problems("html many: no console errors", b.problems())
        got = b.eval("""(function(){var o={};document.querySelectorAll('#tl g').forEach(function(g){
            var k=0,r=g.querySelectorAll('rect');r.forEach(function(x){
              k+=+(x.getAttribute('data-k')||1);});
            o[g.getAttribute('data-lane')]=[r.length,k];});return o;})()""")
        for lane in ("rank 9 compute", "rank 9 communication"):
            v = got.get(lane, [0, 0])
            check("html many: %s at most 4000 rectangles" % lane, 0 < v[0] <= 4000, repr(v))
            check("html many: %s holds all %d ops" % (lane, n // 2), v[1] == n // 2, repr(v))


# ---- many ranks: sizes, heatmaps, outliers, lanes for a few ----

MB = 1 << 20
HEAT_BOX = """(function(sel){var c=document.querySelector(sel);if(!c)return null;
  var r=c.getBoundingClientRect();return [r.left,r.top,r.right,r.bottom];})"""
OUTLIERS = """Array.prototype.map.call(document.querySelectorAll('.dist'),function(d){
  var o=d.querySelector('.outliers');return [d.id,o.classList.contains('none'),o.textContent];})"""


def luminance(p):
    return 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2]


def correlation(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else 0.0


def heatmap_columns(img, box, nbins):
    """The brightness of a heatmap at each of nbins time bins, read from the
    screenshot: the mean luminance, over the rows from 5% to 75% of box's
    height (inside the plot whatever the ranks), of the column where the
    bin's middle falls among the columns that are coloured (not the white
    margins and labels); and the number of colours there. None for the
    brightness when fewer than 20 columns are coloured."""
    x0, y0, x1, y1 = box
    rows = range(y0 + (y1 - y0) * 5 // 100, y0 + (y1 - y0) * 75 // 100)
    plot = []
    for x in range(max(0, x0), min(img.width, x1)):
        px = [img.pixel(x, y) for y in rows]
        if sum(1 for p in px if min(p) < 235) > 0.9 * len(px):
            plot.append((x, sum(luminance(p) for p in px) / len(px)))
    colours = len(set(img.pixel(x, y) for x in range(max(0, x0), min(img.width, x1), 3) for y in rows))
    if len(plot) < 20:
        return None, colours
    first, last = plot[0][0], plot[-1][0]
    lum = dict(plot)
    return [lum.get(first + int((i + 0.5) * (last - first + 1) / nbins)) for i in range(nbins)], colours


def parse_time_us(t):
    """A time as the page prints it ("12.00 ms", "500.0 µs", "1.234 s")."""
    v, unit = t.split()
    return float(v) * {"ns": 1e-3, "\u00b5s": 1, "ms": 1e3, "s": 1e6}[unit]


def gen_report(work, name, n, events):
    """gen_job's n equal ranks reported with ringside report -o; the page,
    report.json and the seconds the report took, or Nones."""
    gen = os.path.join(BUILD, "gen_job")
    if not check("html %s: gen_job built" % name, os.path.exists(gen), gen + " missing (make test-build)"):
        return None, None
    out, rep = os.path.join(work, name + "-trace"), os.path.join(work, name + "-rep")
    p = run([gen, "-n", str(n), "-e", str(events), "-o", os.path.join(out, "job")], timeout=300)
    if not check("html %s: gen_job ran" % name, p.returncode == 0, p.stderr.decode()[-300:]):
        return None, None
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"], timeout=300)
    html = os.path.join(rep, "index.html")
    if not check("html %s: ringside report writes index.html" % name,
                 p.returncode == 0 and os.path.exists(html), p.stderr.decode()[-300:]):
        return None, None
    with open(os.path.join(rep, "report.json")) as f:
        rj = json.load(f)
    # What the page does not need is not kept: the traces and the rest of OUT.
    cleanup(out)
    for f in os.listdir(rep):
        if f not in ("index.html", "report.json"):
            os.unlink(os.path.join(rep, f))
    return html, rj


def size_64(work):
    """gen_job's 64 ranks: the page well under 1 MB (16 MB with a lane row
    per rank)."""
    html, rj = gen_report(work, "gen64", 64, 2000)
    if html:
        size = os.path.getsize(html)
        check("html gen64: page under 1 MB", size < MB, "%d bytes" % size)
        print("    html gen64: index.html %d bytes, report.json %d bytes" %
              (size, len(json.dumps(rj))))


def heatmap_checks(name, b, img, rj):
    """Each heatmap drawn from every rank's bins: its columns' brightness
    follows the mean over ranks of report.json's bins (viridis for GPU busy
    gets brighter with the value; the communication map darker)."""
    ranks = rj["timeline"]["ranks"]
    for key, sign in (("gpu_busy_pct", 1), ("comm_gbs", -1)):
        box = b.eval(HEAT_BOX + "('canvas[data-s=%s]')" % key)
        if not check("%s %s heatmap in the page" % (name, key), box is not None):
            continue
        nb = len(ranks[0][key])
        cols, colours = heatmap_columns(img, tuple(int(v) for v in box), nb)
        check("%s %s heatmap drawn (coloured, not blank)" % (name, key),
              cols is not None and colours > 10,
              "%s coloured columns, %d colours in box %r" % ("too few" if cols is None else "enough",
                                                            colours, box))
        if cols is None:
            continue
        mean = [sum(r[key][i] for r in ranks) / len(ranks) for i in range(nb)]
        pairs = [(m, c) for m, c in zip(mean, cols) if c is not None]
        top = max(max(r[key]) for r in ranks)
        if max(mean) - min(mean) <= 0.02 * max(top, 1e-9):
            # the same in every bin: the map is as even
            lum = [p[1] for p in pairs]
            check("%s %s heatmap as even as report.json's bins" % (name, key), max(lum) - min(lum) < 8,
                  "column brightness from %.1f to %.1f for bins within 2%% of each other" %
                  (min(lum), max(lum)))
            continue
        corr = correlation([p[0] for p in pairs], [p[1] for p in pairs])
        check("%s %s heatmap follows report.json's bins" % (name, key), sign * corr > 0.9,
              "correlation of column brightness with the mean over ranks %.3f over %d bins" %
              (corr, len(pairs)))


def heatmap_hover(name, b, rj):
    """Hover on the GPU busy heatmap: the rank, the bin's time and the value
    report.json has for that rank and bin; lower on the map, higher ranks."""
    tl = rj["timeline"]
    box = b.eval(HEAT_BOX + "('canvas[data-s=gpu_busy_pct]')")
    if not box:
        return
    named = []
    for fy in (0.1, 0.6):
        x, y = box[0] + (box[2] - box[0]) * 0.5, box[1] + (box[3] - box[1]) * fy
        b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session=True)
        tip = b.eval("document.getElementById('tip').textContent").split("\n")
        ok = len(tip) >= 3 and tip[0].startswith("rank ") and " \u2013 " in tip[1] and "\u2248" in tip[2]
        if not check("%s heatmap hover names rank, time and value" % name, ok, repr(tip)):
            return
        rank = int(tip[0].split()[1])
        t0, t1 = (parse_time_us(t) for t in tip[1].split(" \u2013 "))
        # report.json's bins in the time shown (one, or the few a column
        # holds when there are more bins than columns), from the job's start
        shift = rj.get("start_us", tl["start_us"]) - tl["start_us"]
        b0, b1 = (int(round((t + shift) / tl["bin_us"])) for t in (t0, t1))
        series = [r for r in tl["ranks"] if r["rank"] == rank][0]["gpu_busy_pct"][b0:b1]
        want = sum(series) / len(series) if series else float("nan")
        got = float(tip[2].split("\u2248")[1].split()[0])
        # 64 steps of 0-100%: within half a step, and the three digits shown
        check("%s heatmap hover value is report.json's" % name, abs(got - want) <= 100 / 63 / 2 + 0.06,
              "rank %d bins %d-%d: shown %g, report.json %g" % (rank, b0, b1, got, want))
        named.append(rank)
    check("%s heatmap rows in rank order" % name, named[0] < named[1], repr(named))
    b.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 0, "y": 0}, session=True)


def big_page(work):
    """gen_job's 1,024 equal ranks (2,000 records each) reported by ringside
    report -o: index.html under 3 MB, loads in headless Chromium with no
    errors, draws both heatmaps from every rank's bins, names no outlier
    and no straggler, draws lanes for a few ranks only and says where the
    rest is; the processes table holds every rank. The screenshot at
    1600x1200 goes to /tmp/html1024.png to be looked at."""
    html, rj = gen_report(work, "gen1024", 1024, 2000)
    if not html:
        return
    size = os.path.getsize(html)
    check("html gen1024: page under 3 MB", size < 3 * MB, "%d bytes" % size)
    print("    html gen1024: index.html %d bytes, report.json %d bytes" % (size, len(json.dumps(rj))))
    with headless.Browser(1600, 1200) as b:
        t = time.time()
        b.open(html)
        took = time.time() - t
        check("html gen1024: loads in a few seconds", took < 15, "%.1f s" % took)
        print("    html gen1024: loaded in %.1f s" % took)
        report_problems("html gen1024: no console errors, exceptions, dialogs or requests", b.problems())
        check("html gen1024: script ran", b.eval("document.body.getAttribute('data-ready')") == "1")
        shot = "/tmp/html1024.png"
        img = check_screenshot("html gen1024:", b, shot)
        for sec in ("summary", "rank-dist", "heatmaps"):
            v = b.eval(VISIBLE + "(%r)" % sec)
            check("html gen1024: %s on the first screen" % sec, v == "ok", v)
        dist = b.eval(OUTLIERS)
        check("html gen1024: a strip plot per figure", [d[0] for d in dist] ==
              ["dist-compute", "dist-exposed", "dist-idle", "dist-wait"], repr(dist))
        check("html gen1024: equal ranks, no outlier named", all(d[1] for d in dist) and
              not any(re.search(r"rank \d", d[2]) for d in dist), repr(dist))
        no_straggler_card("html gen1024:", b)
        b.eval("document.getElementById('heatmaps').scrollIntoView()")
        b.settle(0.3)
        hshot = os.path.join(SHOTS, "html-1024-heatmaps.png")
        b.screenshot(hshot)
        heatmap_checks("html gen1024:", b, headless.png_pixels(hshot), rj)
        heatmap_hover("html gen1024:", b, rj)
        rows = b.eval("""Array.prototype.map.call(document.querySelectorAll('#tl g'),function(g){
          return g.getAttribute('data-lane').split(' ').slice(0,2).join(' ');})""")
        rows = sorted(set(rows))
        check("html gen1024: lanes for at most 8 ranks", 0 < len(rows) <= 8, repr(rows))
        note = b.eval("(document.getElementById('lanes-note')||{}).textContent")
        check("html gen1024: the page says which lanes and where the rest is",
              note and ("of %d processes" % len(rj["processes"])) in note and "heatmaps" in note,
              repr(note))
        cut = b.eval("(document.getElementById('page-cut')||{}).textContent")
        check("html gen1024: the page says what it left out and that report.json has it",
              cut and "report.json" in cut and "64 steps" in cut, repr(cut))
        names = b.eval("Array.prototype.map.call(document.querySelectorAll("
                       "'#table-processes tbody tr'),function(r){return r.cells[0].textContent;})")
        want = ["rank %d" % q["rank"] for q in rj["processes"]]
        check("html gen1024: the processes table holds every rank", names == want,
              "%d rows, %d processes" % (len(names), len(want)))
        report_problems("html gen1024: still no errors after the interaction", b.problems())
    print("    html gen1024: screenshot %s (%dx%d)" % (shot, img.width, img.height))


def straggler_page(work):
    """simtrain's 4 ranks with rank 2's kernels twice as long: the strip
    plots name rank 2 as the GPU compute outlier, and no other rank there."""
    launch, train = os.path.join(BUILD, "simlaunch"), os.path.join(BUILD, "simtrain")
    if not check("html straggler: simulator built", os.path.exists(launch) and os.path.exists(train),
                 "no %s or %s (make test-build)" % (launch, train)):
        return
    out, ck, rep = (os.path.join(work, d) for d in ("slow-trace", "slow-ckpt", "slow-rep"))
    env = traced_env(out, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), SIMNCCL_TIMEOUT_S=30)
    env.pop("LD_PRELOAD")
    env["AGENT_SO"] = os.path.join(BUILD, "libagent.so")
    p = run([launch, "-n", "4", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh",
             train, "--steps", "30", "--ckpt-dir", ck, "--straggler", "2:2"], env=env, timeout=120)
    if not check("html straggler: simtrain ran", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    html = os.path.join(rep, "index.html")
    if not check("html straggler: ringside report writes index.html",
                 p.returncode == 0 and os.path.exists(html), p.stderr.decode()[-300:]):
        return
    with headless.Browser() as b:
        b.open(html)
        report_problems("html straggler: no console errors, exceptions, dialogs or requests",
                        b.problems())
        dist = {d[0]: d for d in b.eval(OUTLIERS)}
        comp = dist.get("dist-compute")
        named = re.findall(r"rank (\d+)", comp[2]) if comp else []
        check("html straggler: rank 2 named as the GPU compute outlier, alone",
              comp is not None and not comp[1] and named == ["2"], repr(comp))
        b.eval("document.getElementById('ranks').scrollIntoView()")
        b.settle(0.3)
        shot = os.path.join(SHOTS, "html-straggler-ranks.png")
        b.screenshot(shot)
        box = b.eval(HEAT_BOX + "('#dist-compute canvas')")
        red = colour_pixels(headless.png_pixels(shot), tuple(int(v) for v in box), (0xd1, 0x24, 0x2f), 40) \
            if box else 0
        check("html straggler: the outlier drawn in red on its strip plot", red > 10,
              "%d red pixels in %r" % (red, box))
        step_checks(b, rep)


def step_checks(b, rep):
    """The step chart: a bar per step of report.json's series; a click on
    one shows that step on the timeline (the range shown starts within a
    tenth of the step's length before it and ends after it)."""
    with open(os.path.join(rep, "report.json")) as f:
        series = (json.load(f).get("steps") or {}).get("series", [])
    if not check("html steps: report.json has steps", len(series) >= 3, "%d steps" % len(series)):
        return
    bars = b.eval("document.querySelectorAll('#step-bars g').length")
    check("html steps: one bar per step", bars == len(series), "%r bars for %d steps" % (bars, len(series)))
    k = len(series) // 2
    got = b.eval("(function(){var g=document.querySelectorAll('#step-bars g')[%d];"
                 "g.querySelector('rect').dispatchEvent(new MouseEvent('click',{bubbles:true}));"
                 "return document.getElementById('tl-range').textContent;})()" % k)
    want_s, want_d = series[k]["start_s"] * 1e3, series[k]["dur_ms"]
    m = re.match(r"([\d.]+) (ns|µs|ms|s) – ([\d.]+) (ns|µs|ms|s)", got or "")
    scale = {"ns": 1e-6, "µs": 1e-3, "ms": 1, "s": 1e3}
    ok = False
    if m:
        t0, t1 = float(m.group(1)) * scale[m.group(2)], float(m.group(3)) * scale[m.group(4)]
        ok = want_s - 0.11 * want_d <= t0 <= want_s and t1 >= want_s + want_d * 0.99
    check("html steps: a click shows the step on the timeline", ok,
          "shown %r, step %d at %.3f ms for %.3f ms" % (got, k, want_s, want_d))


def many_steps_page(work):
    """5,000 steps: the chart draws at most 1,500 bars (runs of 4 steps,
    each its longest), and the page stays small."""
    n = 5000
    rj = os.path.join(work, "steps.json")
    with open(rj, "w") as f:
        json.dump({"job": "steps", "processes": [{"rank": 0, "pid": 1, "role": "rank"}],
                   "steps": {"source": "collectives", "count": n, "median_ms": 10,
                             "series": [{"index": i, "start_s": i * 0.01, "dur_ms": 10 + (i % 7),
                                         "phase": "train", "compute_pct": 50, "exposed_comm_pct": 10,
                                         "idle_pct": 20} for i in range(n)]}}, f)
    html = os.path.join(work, "steps.html")
    p = run([DRIVER, html, rj])
    if not check("html many steps: page written", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    with open(html, encoding="utf-8") as f:
        page = f.read()
    bars = page.count("<g data-s=")
    check("html many steps: 1,250 bars of 4 steps for 5,000", bars == -(-n // 4), "%d bars" % bars)
    check("html many steps: the page under 2 MB", len(page) < 2e6, "%d bytes" % len(page))


def lanes_page(work):
    """The lanes as report.json "lanes" picks them: one process (the
    driver's --many rank 9) labelled with its reason, cut to the window
    [0.1 s, 0.2 s] of the job, every operation inside it accounted for."""
    n, t0_ns = 200000, 1000000          # the driver's --many ops start at 1 ms
    rj = os.path.join(work, "lanes.json")
    with open(rj, "w") as f:
        json.dump({"job": "lanes", "start_us": t0_ns / 1e3,
                   "processes": [{"rank": 9, "pid": 9999, "role": "rank"}],
                   "lanes": {"ranks": [{"rank": 9, "why": "straggler"}], "from_s": 0.1, "to_s": 0.2,
                             "whole_job": False}}, f)
    html = os.path.join(work, "lanes.html")
    p = run([DRIVER, html, rj, "--many", str(n)])
    if not check("html lanes: page written", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    lo, hi = t0_ns + 100000000, t0_ns + 200000000
    want = {"compute": 0, "communication": 0}
    for i in range(n):
        s = t0_ns + i * 2000
        e = s + (3000000 if i % 1000 == 0 else 1000 * (1 + i % 7))
        if e > lo and s < hi:
            want["communication" if i % 2 else "compute"] += 1
    with headless.Browser() as b:
        b.open(html)
        report_problems("html lanes: no console errors", b.problems())
        why = b.eval("Array.prototype.map.call(document.querySelectorAll('.tl-lab .tl-why'),"
                     "function(t){return t.textContent.trim();})")
        check("html lanes: the lane says why it was picked", why == ["straggler"], repr(why))
        got = b.eval("""(function(){var o={},W=+document.getElementById('tl').getAttribute('data-w');
          document.querySelectorAll('#tl g').forEach(function(g){var k=0,out=0;
            g.querySelectorAll('rect').forEach(function(x){k+=+(x.getAttribute('data-k')||1);
              var a=+x.getAttribute('x'),w=+x.getAttribute('width');if(a<-1e-6||a+w>W*1.000001)out++;});
            o[g.getAttribute('data-lane')]=[k,out];});return o;})()""")
        for lane in ("compute", "communication"):
            v = got.get("rank 9 " + lane, [0, 0])
            check("html lanes: every %s op in the window on its lane, none outside" % lane,
                  v == [want[lane], 0], "%r drawn (ops, outside), %d in the window" % (v, want[lane]))
        rng = b.eval("document.getElementById('tl-range').textContent")
        check("html lanes: the axis shows the window", rng.startswith("100.00 ms \u2013 200.00 ms"),
              repr(rng))
        note = b.eval("(document.getElementById('lanes-note')||{}).textContent")
        check("html lanes: the note gives the window", note and "from 0.100 s to 0.200 s" in note,
              repr(note))


def picked_page(work):
    """More than 8 processes and no "lanes" in report.json (the reporter
    before it picks): lanes for rank 0, the straggler, and the ranks that
    waited least (slowest) and most (fastest) in collectives, each labelled."""
    nr, slow, fast, strag = 12, 7, 4, 9
    procs = []
    for r in range(nr):
        wait = 5.0 if r == slow else 15000.0 if r == fast else 5000.0 + 10 * r
        procs.append({"rank": r, "pid": 1000 + r, "role": "rank", "collective_wait_us": wait,
                      "gpu": {"span_us": 40000, "compute_pct": 50.0, "idle_pct": 30.0,
                              "exposed_comm_pct": 10.0}})
    rj = os.path.join(work, "picked.json")
    with open(rj, "w") as f:
        json.dump({"job": "picked", "start_us": 1000.0, "processes": procs,
                   "stragglers": [{"rank": strag, "score": 0.5}]}, f)
    html = os.path.join(work, "picked.html")
    p = run([DRIVER, html, rj, "--ranks", str(nr)])
    if not check("html picked: page written", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    with headless.Browser() as b:
        b.open(html)
        report_problems("html picked: no console errors", b.problems())
        rows = b.eval("""Array.prototype.map.call(document.querySelectorAll('.tl-lab text[font-weight]'),
          function(t){return t.textContent;})""")
        want = ["rank 0 first", "rank %d fastest" % fast, "rank %d slowest" % slow,
                "rank %d straggler" % strag]
        check("html picked: lanes for rank 0, the straggler, the slowest and the fastest",
              rows == want, "%r != %r" % (rows, want))
        dist = {d[0]: d for d in b.eval(OUTLIERS)}
        wait = dist.get("dist-wait")
        named = re.findall(r"rank (\d+)", wait[2]) if wait else []
        check("html picked: the waits' outliers named, furthest first",
              named == [str(fast), str(slow)], repr(wait))
    # The same job with report.json's own picks (the 3 models given) over a
    # window of its 40 ms, every rank checkpointing in it, and 1,000 bins,
    # more than the heatmaps have columns: lanes for the 3 only, the window
    # outlined in red on the heatmaps, hover values the mean of the bins a
    # column holds.
    bins = 1000
    report = {"job": "picked", "start_us": 1000.0, "processes": procs,
              "lanes": {"ranks": [{"rank": 1, "why": "slowest"}], "from_s": 0.01, "to_s": 0.02,
                        "whole_job": False},
              "checkpoints": [{"rank": r, "start_s": 0.012, "dur_s": 0.002, "bytes": 1e6}
                              for r in range(nr)],
              "timeline": {"bin_us": 40, "start_us": 1000.0,
                           "ranks": [{"rank": r, "gpu_busy_pct": [float((i * 7 + r * 13) % 100)
                                                                  for i in range(bins)],
                                      "comm_gbs": [1.0] * bins} for r in range(nr)]}}
    with open(rj, "w") as f:
        json.dump(report, f)
    p = run([DRIVER, html, rj, "--ranks", "3"])
    if not check("html picked window: page written", p.returncode == 0, p.stderr.decode()[-300:]):
        return
    with headless.Browser() as b:
        b.open(html)
        report_problems("html picked window: no console errors", b.problems())
        rows = b.eval("""Array.prototype.map.call(document.querySelectorAll('.tl-lab text[font-weight]'),
          function(t){return t.textContent;})""")
        check("html picked window: lanes for the models given, none for other checkpointing ranks",
              rows == ["rank 0", "rank 1 slowest", "rank 2"], repr(rows))
        b.eval("document.getElementById('heatmaps').scrollIntoView()")
        b.settle(0.3)
        shot = os.path.join(SHOTS, "html-picked-window.png")
        b.screenshot(shot)
        img = headless.png_pixels(shot)
        box = [int(v) for v in b.eval(HEAT_BOX + "('canvas[data-s=gpu_busy_pct]')")]
        reds = [x for x in range(box[0], box[2])
                if colour_pixels(img, (x, box[1], x + 1, box[3]), (0xd1, 0x24, 0x2f), 40) > 20]
        # the outline's two sides: a quarter and half way across the 40 bins
        width = box[2] - box[0]
        check("html picked window: the lanes' window outlined on the heatmap",
              reds and abs((reds[0] - box[0]) / width - 0.25) < 0.1 and
              abs((reds[-1] - box[0]) / width - 0.5) < 0.1,
              "red columns %r in a box from %d to %d" % (reds[:3] + reds[-3:], box[0], box[2]))
        heatmap_hover("html picked window:", b, report)


def main():
    if not headless.find_chromium():
        skip("html", "no chromium (Debian package chromium; tools/scripts/deps.sh installs it)")
        finish()
    if not os.path.exists(DRIVER):
        check("html: driver built", False, DRIVER + " missing (make test-build)")
        finish()
    work = tempdir("html")
    try:
        report_page(work)
        driver_page(work)
        sim_page(work)
        gen_job_page(work)
        kineto_page(work)
        many_page(work)
        lanes_page(work)
        many_steps_page(work)
        picked_page(work)
        straggler_page(work)
        size_64(work)
        big_page(work)
    finally:
        cleanup(work)
    print("screenshots: " + ", ".join(os.path.join(SHOTS, n) for n in
                                       ("html-report-io.png", "html-sim.png", "html-kineto.png", "html-driver.png",
                                        "html-driver-full.png", "html-driver-flames.png",
                                        "html-straggler-ranks.png", "html-1024-heatmaps.png")) +
          ", /tmp/html1024.png")
    finish()


if __name__ == "__main__":
    main()
