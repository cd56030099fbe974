#!/usr/bin/env python3
"""Every kind of page ringside writes, opened in headless Chromium with no
console error, uncaught exception, dialog or outside request (headless.py
hears them over the DevTools protocol on a pipe): the report page, the diff
page, the history page and the flame graph SVGs (a report's, and the diff's
differential ones), made here from two simulated 2-rank jobs (simtrain, the
second with a straggler). Each shows that its script ran (the report and
diff pages set body[data-ready]; an SVG's script has read its frames back,
then zooms and searches) and its sheet applied. Every <script> and <style>
block of these pages is one of the reporter's embedded files ($BUILD/page,
made from reporter/out/page/), as written there: what test_page_scripts
checks is what the pages run."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, RINGSIDE, check, cleanup, finish, report_problems, run, skip, tempdir, \
    traced_env  # noqa: E402
import headless  # noqa: E402

SIM = os.path.join(BUILD, "sim")
# A <script> or <style> block's text: the page's inline ones, the SVG's
# (its script in CDATA); JSON data blocks are data, not script.
BLOCK = re.compile(r"<(script|style)(?![^>]*application/json)[^>]*>(?:<!\[CDATA\[)?(.*?)(?:\]\]>)?</\1>", re.S)


def launch(root, work, *args):
    """One 2-rank simtrain run under the agent into root; its job folder."""
    before = set(os.listdir(root))
    env = traced_env(root, LD_LIBRARY_PATH=SIM)
    env["AGENT_SO"] = env.pop("LD_PRELOAD")
    p = run([os.path.join(BUILD, "simlaunch"), "-n", "2", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"',
             "sh", os.path.join(BUILD, "simtrain"), "--steps", "60", "--layers", "4", "--ckpt-dir", work] + list(args),
            env=env, cwd=work, timeout=120)
    new = sorted(set(os.listdir(root)) - before)
    ok = check("page load: simtrain %s runs" % " ".join(args or ("plain",)), p.returncode == 0 and len(new) == 1,
               p.stderr.decode(errors="replace")[-300:])
    return os.path.join(root, new[0]) if ok else None


def ringside(name, *args):
    """Runs `ringside ARGS -q`; whether it succeeded (checked as name)."""
    p = run([RINGSIDE] + list(args) + ["-q"])
    return check("page load: ringside %s succeeds" % name, p.returncode == 0, p.stderr.decode(errors="replace")[-300:])


def embedded():
    """The embedded files' texts, as the pages hold them (ends stripped)."""
    out = set()
    for path in glob.glob(os.path.join(BUILD, "page", "*")):
        with open(path, encoding="utf-8") as f:
            out.add(f.read().strip())
    return out


def blocks_are_files(name, path, files):
    """Each <script> and <style> block of the page at path is one of files."""
    with open(path, encoding="utf-8") as f:
        found = BLOCK.findall(f.read())
    strays = ["<%s> of %d bytes" % (kind, len(text)) for kind, text in found if text.strip() not in files]
    report_problems("page load: %s: each <script> and <style> is an embedded file" % name,
                    strays if found else ["no <script> or <style> at all"])


def evaluate(b, expr):
    """expr's value, or what it threw (the first line)."""
    r = b.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=True)
    if "exceptionDetails" in r:
        d = r["exceptionDetails"]
        return "threw " + d.get("exception", {}).get("description", d.get("text", "")).split("\n")[0]
    return r["result"].get("value")


def load(b, name, path, ran, extra=None):
    """Opens path; checks its problems and that the expression ran is true.
    extra: an expression evaluated after that (an interaction), which must
    not throw, and whose problems count too."""
    b.events = []
    b.open(path)
    report_problems("page load: %s: no console errors, exceptions, dialogs or requests" % name, b.problems())
    got = evaluate(b, ran)
    check("page load: %s: its script ran and its sheet applied" % name, got is True, "%s gave %r" % (ran, got))
    if extra:
        b.events = []
        got = evaluate(b, extra)
        b.settle(0.3)
        report_problems("page load: %s: no errors after zoom and search" % name,
                        b.problems() + ([] if str(got).startswith("Matched: ") else ["%s gave %r" % (extra, got)]))


PAGE_RAN = ("document.body.getAttribute('data-ready') === '1' && "
            "getComputedStyle(document.querySelector('header')).backgroundColor === 'rgb(36, 41, 47)'")
HISTORY_RAN = "getComputedStyle(document.querySelector('table')).borderCollapse === 'collapse'"
# flame.js's globals: frames read back, one per <g class="f">; buttons styled.
SVG_RAN = ("frames.length > 0 && frames.length === document.querySelectorAll('g.f').length && "
           "getComputedStyle(document.getElementById('reset')).cursor === 'pointer'")
SVG_USE = ("zoomTo(frames[frames.length - 1]); doSearch('.'); "
           "var m = document.getElementById('matched').textContent; clearSearch(); zoomTo(null); m")


def main():
    if not headless.find_chromium():
        skip("page load", "no chromium (Debian package chromium; tools/scripts/deps.sh installs it)")
        finish()
    work = tempdir("page-load")
    try:
        root = os.path.join(work, "traces")
        os.makedirs(root)
        job_a, job_b = launch(root, work), launch(root, work, "--straggler", "1:1.5")
        if not (job_a and job_b):
            finish()
        rep_a, rep_b, diff = (os.path.join(work, n) for n in ("rep-a", "rep-b", "diff"))
        hist = os.path.join(work, "history.html")
        made = (ringside("report of the first job", "report", job_a, "-o", rep_a) and
                ringside("report of the second job", "report", job_b, "-o", rep_b) and
                ringside("diff", "diff", rep_a, rep_b, "-o", diff) and
                ringside("history", "history", root, "--db", os.path.join(work, "h.db"), "-o", hist))
        if not made:
            finish()
        pages = [("report page", os.path.join(rep_a, "index.html"), PAGE_RAN, None),
                 ("diff page", os.path.join(diff, "diff.html"), PAGE_RAN, None),
                 ("history page", hist, HISTORY_RAN, None)]
        # (a report's step-N-KIND.svg, when it has one, is the same SVG again)
        svgs = sorted(glob.glob(os.path.join(rep_a, "flame-*.svg")) + glob.glob(os.path.join(diff, "diff-*.svg")))
        check("page load: flame graphs written (report and diff)",
              any(s.startswith(rep_a) for s in svgs) and any(s.startswith(diff) for s in svgs), str(svgs))
        pages += [(os.path.relpath(s, work), s, SVG_RAN, SVG_USE) for s in svgs]
        files = embedded()
        for name, path, _, _ in pages:
            blocks_are_files(name, path, files)
        with headless.Browser() as b:
            for name, path, ran, extra in pages:
                load(b, name, path, ran, extra)
    finally:
        cleanup(work)
    finish()


if __name__ == "__main__":
    main()
