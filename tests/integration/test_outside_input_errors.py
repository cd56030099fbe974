#!/usr/bin/env python3
"""The messages for bad outside input, on crafted files whose fault is at a
place known here (Python's json module and the bytes written say where):
`ringside import-kineto` on broken JSON, a cut and a damaged gzip file and
JSON that is no trace; `ringside diff` on a report.json that is not JSON and
on a folded file with a bad line. Each must exit 1, by status and not by a
signal, with one line on stderr that names the file and where (byte or
line). The fuzzers (tests/fuzz/) hold the readers to no crash on any input;
this holds the words they leave."""
import gzip
import json
import os
import re
import shutil
import subprocess
from rstest import BUILD, check, finish, tempdir

SANITIZED = os.path.join(BUILD, "asan", "ringside")
RINGSIDE = SANITIZED if os.path.exists(SANITIZED) else os.path.join(BUILD, "ringside")
ENV = dict(os.environ, ASAN_OPTIONS="abort_on_error=1:detect_leaks=0",
           UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1")

GOOD = ('{"schemaVersion": 1, "traceEvents": [\n'
        '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100.0, "dur": 5.0,'
        ' "args": {"stream": 7, "device": 0, "correlation": 1}},\n'
        '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 90.0,'
        ' "dur": 3.0, "args": {"correlation": 1}}\n]}\n')


def one_line(name, r, path, where):
    """r failed by status with one stderr line naming path and matching where
    (a regular expression); returns the match or None."""
    err = r.stderr.decode(errors="replace")
    lines = [x for x in err.splitlines() if x.strip()]
    m = re.search(where, lines[0]) if len(lines) == 1 else None
    check(name, r.returncode == 1 and len(lines) == 1 and path in lines[0] and m is not None,
          "status %d, stderr %r" % (r.returncode, err[-400:]))
    return m


def kineto_cases(d):
    out = os.path.join(d, "imported")

    def load(name, data):
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(data)
        return p, subprocess.run([RINGSIDE, "import-kineto", "-q", p, "-o", out], env=ENV,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)

    # broken JSON: a doubled comma inside an event
    text = GOOD.replace('"dur": 5.0,', '"dur": 5.0,,')
    try:
        json.loads(text)
        at = None
    except json.JSONDecodeError as e:
        at = len(text[:e.pos].encode())
    p, r = load("broken.json", text.encode())
    m = one_line("import-kineto: broken JSON named with its byte", r, p, r"byte (\d+): malformed JSON")
    if m:
        check("import-kineto: the byte said is where the JSON breaks (%s, Python's json: %s)" % (m.group(1), at),
              at is not None and abs(int(m.group(1)) - at) <= 1)
    # the same, gzipped: the byte is one of the JSON text
    p, r = load("broken.json.gz", gzip.compress(text.encode()))
    m = one_line("import-kineto: broken JSON in gzip named with its byte", r, p, r"byte (\d+): malformed JSON")
    if m:
        check("import-kineto: gzip: the byte said is the JSON's (%s, Python's json: %s)" % (m.group(1), at),
              at is not None and abs(int(m.group(1)) - at) <= 1)
    # a gzip file cut in half, and one with its deflate data damaged
    big = GOOD.replace("]}", "," + ",".join(['{"ph": "i", "name": "m%d", "pid": 0, "ts": %d}' % (i, i)
                                            for i in range(3000)]) + "]}").encode()
    z = gzip.compress(big, 6)
    p, r = load("cut.json.gz", z[:len(z) // 2])
    one_line("import-kineto: a cut gzip file says it is cut short", r, p, r"cut short")
    bad = bytearray(z)
    for i in range(len(z) // 3, len(z) // 3 + 8):
        bad[i] ^= 0x55
    p, r = load("damaged.json.gz", bytes(bad))
    one_line("import-kineto: damaged gzip data named with the compressed byte", r, p,
             r"(corrupt gzip data at compressed byte \d+|byte \d+: malformed JSON)")
    p, r = load("other.json", b'{"hello": [1, 2, 3]}\n')
    one_line("import-kineto: JSON that is no trace says so", r, p, r"not a PyTorch profiler trace")


def diff_cases(d):
    def side(name, report, folded=None):
        s = os.path.join(d, name)
        os.makedirs(s)
        with open(os.path.join(s, "report.json"), "w") as f:
            f.write(report)
        if folded is not None:
            with open(os.path.join(s, "flame-wait.folded"), "w") as f:
                f.write(folded)
        return s

    def diff(b, a, *extra):
        return subprocess.run([RINGSIDE, "diff", b, a, "-q", *extra], env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)

    good = '{"schema": "ringside-report/1", "processes": []}\n'
    text = '{"schema": "ringside-report/1",\n "processes": [ {"rank": 0,, "gpu": {}} ]}\n'
    try:
        json.loads(text)
        at = None
    except json.JSONDecodeError as e:
        at = e.pos
    b = side("bad-json", text)
    a = side("good", good, "main;wait 5\n")
    m = one_line("diff: a report.json that is not JSON named with its byte", diff(b, a),
                 os.path.join(b, "report.json"), r"byte (\d+)")
    if m:
        check("diff: the byte said is where the JSON breaks (%s, Python's json: %s)" % (m.group(1), at),
              at is not None and abs(int(m.group(1)) - at) <= 1)
    m = one_line("diff: a report.json cut short says so", diff(side("cut-json", good[:20]), a),
                 os.path.join(d, "cut-json", "report.json"), r"byte \d+: the JSON ends early")
    b = side("bad-folded", good, "main;a 1\nmain;b 2\nmain;c x3\n")
    out = os.path.join(d, "out")
    for extra, label in (([ "-o", out], "folder"), (["--kind", "wait", "-o", out + ".folded"], "--kind")):
        m = one_line("diff %s: a bad folded line named with its file and line" % label, diff(b, a, *extra),
                     os.path.join(b, "flame-wait.folded"), r"line (\d+): not a folded line")
        if m:
            check("diff %s: the line said is the bad one (%s, written: 3)" % (label, m.group(1)), m.group(1) == "3")


def main():
    d = tempdir("outside")
    kineto_cases(d)
    diff_cases(d)
    shutil.rmtree(d, ignore_errors=True)
    finish()


main()
