#!/usr/bin/env python3
"""How the agent names Python frames (preload/pynames.c, built here into a
small shared object and called through ctypes), held against CPython
itself. Lines: under CPython 3.10 to 3.13 (pyenv's) and Debian's python3,
for every instruction of every code object of a set of standard library
modules and of a source written to reach every kind of line table entry
(long lines and columns, big line jumps, lines with no code), the line
rs_py_line decodes from co_linetable is the one co_lines() gives. Paths:
for modules this test lays out on disk (a regular package, a namespace
package in a site-packages folder, a standard-library-like lib/pythonX.Y, a
script folder, a zip archive) and imports with those folders on sys.path, rs_py_relpath of
the module's __file__ is its path below the sys.path entry the import system
found it in; names that are not absolute paths stay as they are."""
import os
import zipfile

from rstest import ROOT, check, cleanup, cpython, finish, relay, run, skip, tempdir

# Run by each interpreter: prints "ok"/"not ok" lines of its own.
PROBE = r'''
import ctypes, importlib, os, sys
lib = ctypes.CDLL(sys.argv[1])
lib.rs_py_line.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint]
lib.rs_py_line.restype = ctypes.c_int
lib.rs_py_relpath.argtypes = [ctypes.c_char_p]
lib.rs_py_relpath.restype = ctypes.c_char_p
label = sys.argv[3]

# A source that reaches every kind of entry: columns past 127 and lines
# longer than the short forms hold, jumps of more than 127 lines either way
# (a loop back over them), a statement over several lines, lines with no code.
far = "\n" * 300
src = ("def wide(a):\n    return [" + ", ".join("a + %d" % i for i in range(60)) + "]\n"
       "def jumps(n):\n    while n:" + far + "        n -= 1" + far + "    return (n +\n        1 +\n"
       "        2)\n"
       "class K:\n    def m(self):\n        try:\n            return 1 / 0\n"
       "        except ZeroDivisionError:\n            pass\n")
codes = [compile(src, "probe.py", "exec")]
for name in ("json.decoder", "json.encoder", "argparse", "dataclasses", "inspect", "typing",
             "collections", "enum", "re._parser" if sys.version_info >= (3, 11) else "sre_parse",
             "email.message", "asyncio.base_events", "unittest.case"):
    m = importlib.import_module(name)
    with open(m.__file__, encoding="utf-8") as f:
        codes.append(compile(f.read(), m.__file__, "exec"))
units = bad = 0
first_bad = ""
while codes:
    co = codes.pop()
    codes += [c for c in co.co_consts if hasattr(c, "co_linetable")]
    want = [None] * (len(co.co_code) // 2)
    for start, end, line in co.co_lines():
        for u in range(start // 2, end // 2):
            want[u] = line
    t = co.co_linetable
    for u, w in enumerate(want):
        got = lib.rs_py_line(t, len(t), co.co_firstlineno, u, sys.version_info[1])
        units += 1
        if got != (-1 if w is None else w):
            bad += 1
            first_bad = first_bad or "%s:%s unit %d: %d, co_lines %s" % (co.co_filename, co.co_qualname
                                                                          if hasattr(co, "co_qualname")
                                                                          else co.co_name, u, got, w)
name = label + ": rs_py_line agrees with co_lines() on every instruction"
print(("ok " + name) if units > 10000 and not bad else
      "not ok %s: %d of %d differ, the first %s" % (name, bad, units, first_bad))

# Paths: the folders of argv[2] go on sys.path; each module's name below
# the entry the import system found it in is the truth.
base = sys.argv[2]
entries = [os.path.join(base, d) for d in ("lib", "app", "venv/lib/python3.11", "venv/lib/python3.11/site-packages",
                                          "eggs.zip")]
sys.path[:0] = entries
bad = []
for mod in ("pkg.sub.mod", "pkg", "train", "json_like.decoder", "nsstd.x", "ns.inner.leaf", "ns2.deep.leaf",
            "zpkg.mod"):
    f = importlib.import_module(mod).__file__
    entry = max((e for e in entries if f.startswith(e + os.sep)), key=len)
    want = os.path.relpath(f, entry)
    got = lib.rs_py_relpath(f.encode()).decode()
    if got != want:
        bad.append("%s: %s, want %s" % (f, got, want))
for name in ("<frozen os>", "<string>", "rel/dir/x.py"):
    got = lib.rs_py_relpath(name.encode()).decode()
    if got != name:
        bad.append("%s: %s" % (name, got))
name = label + ": rs_py_relpath names files below their sys.path entry"
print(("ok " + name) if not bad else "not ok %s: %s" % (name, bad[:3]))
'''

TREE = {
    "lib/pkg/__init__.py": "",
    "lib/pkg/sub/__init__.py": "",
    "lib/pkg/sub/mod.py": "",
    "app/train.py": "",
    "venv/lib/python3.11/json_like/__init__.py": "",
    "venv/lib/python3.11/json_like/decoder.py": "",
    "venv/lib/python3.11/nsstd/x.py": "",
    "venv/lib/python3.11/site-packages/ns/inner/__init__.py": "",
    "venv/lib/python3.11/site-packages/ns/inner/leaf.py": "",
    "venv/lib/python3.11/site-packages/ns2/deep/leaf.py": "",
}


def main():
    work = tempdir("py-names")
    so = os.path.join(work, "libpynames.so")
    cc = os.environ.get("CC", "cc")
    p = run([cc, "-O1", "-shared", "-fPIC", "-I", ROOT, "-o", so, os.path.join(ROOT, "preload", "pynames.c")])
    if not check("pynames.c builds as a shared object", p.returncode == 0, p.stderr.decode()[-300:]):
        cleanup(work)
        finish()
    for rel, text in TREE.items():
        path = os.path.join(work, "tree", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    with zipfile.ZipFile(os.path.join(work, "tree", "eggs.zip"), "w") as z:
        z.writestr("zpkg/__init__.py", "")
        z.writestr("zpkg/mod.py", "")
    pythons = [("pyenv", cpython(m)) for m in (10, 11, 12, 13)] + [("debian", "/usr/bin/python3")]
    for label, py in pythons:
        if not py or not os.path.exists(py):
            skip("python " + label, "not installed")
            continue
        label = "%s %s" % (label, os.path.basename(py))
        p = run([py, "-B", "-c", PROBE, so, os.path.join(work, "tree"), label], timeout=600)
        got = [relay(l, "") for l in p.stdout.decode().splitlines()]
        check("%s: probe ran" % label, p.returncode == 0 and len([g for g in got if g]) == 2,
              p.stderr.decode()[-400:])
    cleanup(work)
    finish()


main()
