#!/usr/bin/env python3
"""A short process pays for what it records, not for the stacks it never
takes: a process started by file I/O loads libunwind a few milliseconds on
(at once for GPU work, or when a sample or a wait wants a stack), so one
that ends first never loads it.

- `cat FILE` under the agent: the same output and status as without; one
  trace file, whole, naming FILE; its module map holds neither libunwind
  nor liblzma (which libunwind brings).
- A process whose first event is file I/O and that then computes (python3
  reading a file, then spinning 0.6 s of CPU by its own clock): libunwind
  is in its module map, and its CPU samples weigh what it spun, within 15%
  (the samples lost while the unwinder came, before the deferral's end,
  would show here)."""
import os
import re
import sys

from rstest import check, cleanup, dump, finish, run, tempdir, trace_files, traced_env

SPIN = r"""
import sys, time
open(sys.argv[1]).read()
t0 = time.process_time()
x = 0
while time.process_time() - t0 < 0.6:
    for i in range(2000):
        x += i * i
print("spun %.6f" % (time.process_time() - t0))
"""


def modules(recs):
    return [r.get("path_text", "") for r in recs if r["type"] == "module"]


def main():
    out = tempdir("agent-short")
    data = os.path.join(out, "data.txt")
    with open(data, "w") as f:
        f.write("forty-two\n" * 100)
    traces = os.path.join(out, "traces")

    plain = run(["cat", data])
    p = run(["cat", data], env=traced_env(traces))
    check("cat: output and status as without the agent",
          p.returncode == plain.returncode == 0 and p.stdout == plain.stdout, p.stderr.decode()[-300:])
    files = trace_files(traces)
    if check("cat: one trace file", len(files) == 1, "%d files" % len(files)):
        recs, rc, err = dump(files[0])
        chunks = [r for r in recs if r["type"] == "chunk"]
        check("cat: the trace is whole and names the file",
              rc == 0 and chunks and chunks[-1].get("end") is True and
              any(r.get("path") == data for r in recs if r["type"] == "io"),
              err[-300:] + str([r for r in recs if r["type"] == "io"][:3]))
        mods = modules(recs)
        check("cat: neither libunwind nor liblzma loaded",
              mods and not any(re.search(r"/lib(unwind|lzma)\.so", m) for m in mods),
              str([m for m in mods if "unwind" in m or "lzma" in m]) or "%d modules" % len(mods))
    cleanup(traces)

    p = run([sys.executable, "-c", SPIN, data], env=traced_env(traces))
    m = re.search(rb"^spun ([0-9.]+)$", p.stdout, re.M)
    check("spinning python: runs", p.returncode == 0 and m, p.stderr.decode()[-300:])
    files = trace_files(traces)
    if check("spinning python: one trace file", len(files) == 1, "%d files" % len(files)) and m:
        recs, rc, err = dump(files[0])
        check("spinning python: libunwind loaded", any("libunwind.so" in x for x in modules(recs)),
              "%d modules" % len(modules(recs)))
        spun = float(m.group(1)) * 1e9
        cpu = sum(r.get("weight_ns", 0) for r in recs if r["type"] == "sample" and r.get("kind") == "cpu")
        check("spinning python: CPU samples weigh what it spun (within 15%)",
              spun > 0 and cpu >= 0.85 * spun,
              "samples %.0f ms, spun %.0f ms" % (cpu / 1e6, spun / 1e6))
    cleanup(out)
    finish()


main()
