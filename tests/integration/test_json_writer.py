#!/usr/bin/env python3
"""Every JSON the reporter writes goes through its one writer
(reporter/base/json.c, docs/design.md "The reporter's rooms"): no source of
reporter/ but the writer's own writes a key ("\\"pid\\":"), JSON's
punctuation ("]}", putc('{')), a JSON literal (fputs("null")) or a JSON
escape ("\\\\u%04x") by hand. Fails naming file and line; and fails so on
copies of reporter/ with one of each planted."""
import os
import re
import shutil
import sys
import tempfile

from rstest import ROOT, check, failures, report_problems

WRITER = {"reporter/base/json.c", "reporter/base/json.h"}
# Braces that are not JSON: Prometheus' text format, metric{label="v"}.
NOT_JSON = {"reporter/out/prom.c": "punctuation"}
OUTPUT = re.compile(r"\b(?:putc|fputc|putchar|fputs|puts|fprintf|printf|fwrite)\s*\(")
KEY = re.compile(r'\\"[^"\\]*\\"\s*:')
PUNCT = re.compile(r"(?:\s|\\n|\\\"|[,:\[\]{}])*")
ESCAPE = re.compile(r"\\\\u%0?4")


def literals(src):
    """(line, quote, text) of each string and character literal of C source
    src, text as written (escapes not undone), comments skipped."""
    i, n, line = 0, len(src), 1
    while i < n:
        c = src[i]
        if c == "\n":
            line += 1
            i += 1
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += src.count("\n", i, j)
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            yield line, c, src[i + 1:j]
            i = j + 1
        else:
            i += 1


def by_hand(root):
    """'FILE:LINE: what: literal' for each piece of JSON written by hand in
    root's reporter/ sources outside the writer."""
    found = []
    for d, dirs, files in os.walk(os.path.join(root, "reporter")):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(d, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel in WRITER:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                src = f.read()
            lines = src.split("\n")
            for line, quote, text in literals(src):
                out = OUTPUT.search(lines[line - 1]) is not None
                what = None
                if quote == '"' and KEY.search(text):
                    what = "a key written by hand"
                elif ESCAPE.search(text):
                    what = "a JSON escape of its own"
                elif out and PUNCT.fullmatch(text) and re.search(r"[\[\]{}]", text) and \
                        NOT_JSON.get(rel) != "punctuation":
                    what = "JSON punctuation written by hand"
                elif out and quote == '"' and text in ("null", "true", "false"):
                    what = "a JSON literal written by hand"
                if what:
                    found.append("%s:%d: %s: %s%s%s" % (rel, line, what, quote, text[:60], quote))
    return found


def planted(work, name, path, code):
    """by_hand() of a copy of reporter/ with code added after path's first
    function's opening brace; and the line it went to."""
    root = os.path.join(work, name)
    shutil.copytree(os.path.join(ROOT, "reporter"), os.path.join(root, "reporter"))
    full = os.path.join(root, path)
    with open(full, encoding="utf-8") as f:
        lines = f.read().split("\n")
    at = lines.index("{") + 1
    lines.insert(at, "    " + code)
    with open(full, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return by_hand(root), at + 1


def main():
    found = by_hand(ROOT)
    report_problems("json_writer: no JSON written by hand outside reporter/base/json.c (%d found)" % len(found),
                    found)
    plants = [
        ("key", "reporter/out/html_nodes.c", 'fprintf(stdout, "{\\"rank\\":%d}", 1);', "a key written by hand"),
        ("punct", "reporter/job/history.c", "putc('[', stdout);", "JSON punctuation written by hand"),
        ("closing", "reporter/out/flame_svg.c", 'fputs("]}\\n", stdout);', "JSON punctuation written by hand"),
        ("null", "reporter/analyse/findings.c", 'fputs("null", stdout);', "a JSON literal written by hand"),
        ("escape", "reporter/out/html_json.c", 'fprintf(stdout, "\\\\u%04x", 1);', "a JSON escape of its own"),
    ]
    with tempfile.TemporaryDirectory(prefix="rs-json-writer-") as work:
        for name, path, code, what in plants:
            got, line = planted(work, name, path, code)
            want = "%s:%d: %s" % (path, line, what)
            check("json_writer: a planted %s is found, with its file and line" % name,
                  len(got) == len(found) + 1 and any(g.startswith(want) for g in got),
                  "want %s, got %s" % (want, [g for g in got if g not in found][:3]))
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
