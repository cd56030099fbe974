#!/usr/bin/env python3
"""A trace file written by the agent of 2026-11-30 (format version 1) still
reads as it did: tests/data/format-1/ keeps one simtrain rank's file (10
steps, two layers, a checkpoint every 5 steps, under the simulated
libcuda and libnccl) beside what the simulator and the program said of the
same run: truth.jsonl (SIMGPU_TRUTH: every kernel, copy and collective)
and simtrain.txt (the program's own time per step). A later format (a new
minor version, another chunk layout) must go on reading it.

Checks: `ringside dump` reads the file whole (its end mark, nothing
dropped); its kernels by name, copies by bytes and collectives by
(sequence, bytes) are the truth's, each compute kernel's time the truth's
(within 3%: the file holds what the GPU's events measured); `ringside report` finds the program's 10 steps at
its own time per step (within 3%)."""
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import RINGSIDE, ROOT, check, cleanup, dump, finish, run, tempdir  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "format-1")
TRACE = os.path.join(DATA, "proc.vm.25447.trace.lz4")


def truth():
    with open(os.path.join(DATA, "truth.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def program_ms_per_step():
    with open(os.path.join(DATA, "simtrain.txt")) as f:
        m = re.search(r"(\d+) steps in [0-9.]+ s \(([0-9.]+) ms/step\)", f.read())
    return int(m.group(1)), float(m.group(2))


def main():
    recs, rc, err = dump(TRACE)
    check("dump reads the kept file", rc == 0 and recs, "%d %s" % (rc, err[-300:]))
    chunks = [r for r in recs if r.get("type") == "chunk"]
    check("dump: the file ends with its end mark", chunks and chunks[-1].get("end") is True,
          repr(chunks[-1] if chunks else None))
    dropped = {k: v for c in chunks for k, v in c.get("counters", {}).items() if k.startswith("dropped") and v}
    check("dump: nothing dropped", not dropped, repr(dropped))
    meta = [r for r in recs if r.get("type") == "meta"]
    check("dump: format version 1", meta and meta[0].get("format_version") == 1, repr(meta[:1]))

    t = truth()
    gpu = [r for r in recs if r.get("type") == "gpu"]
    # an NCCL kernel is a kernel in the file, a collective in the truth
    want_k = collections.Counter(x["name"] for x in t if x["kind"] in ("kernel", "collective"))
    got_k = collections.Counter(r["name_text"] for r in gpu if r.get("kind") == "kernel")
    check("kernels by name as the truth's", got_k == want_k, "%r != %r" % (got_k, want_k))
    want_d, got_d = collections.Counter(), collections.Counter()
    for x in t:
        if x["kind"] == "kernel":
            want_d[x["name"]] += x["end_ns"] - x["start_ns"]
    for r in gpu:
        if r.get("kind") == "kernel" and r["name_text"] in want_d:
            got_d[r["name_text"]] += r["gpu_end_ns"] - r["gpu_start_ns"]
    off = [(n, want_d[n], got_d[n]) for n in want_d if abs(got_d[n] - want_d[n]) > 0.03 * want_d[n]]
    check("each compute kernel's time as the truth's (within 3%)", not off, repr(off))
    want_c = sorted(x["bytes"] for x in t if x["kind"] == "memcpy")
    got_c = sorted(r["bytes"] for r in gpu if r.get("kind") == "memcpy")
    check("copies by bytes as the truth's", got_c == want_c, "%r != %r" % (got_c, want_c))
    want_n = sorted((x["seq"], x["bytes"]) for x in t if x["kind"] == "collective")
    got_n = sorted((r["seq"], r["bytes"]) for r in recs if r.get("type") == "coll")
    check("collectives by sequence and bytes as the truth's", got_n == want_n, "%r != %r" % (got_n[:4], want_n[:4]))

    steps, ms = program_ms_per_step()
    work = tempdir("format-fixture")
    try:
        job = os.path.join(work, "job")
        os.makedirs(job)
        os.symlink(TRACE, os.path.join(job, os.path.basename(TRACE)))
        p = run([RINGSIDE, "report", job, "-o", os.path.join(work, "out"), "-q"])
        check("report reads the kept file", p.returncode == 0, p.stderr.decode(errors="replace")[-300:])
        if p.returncode == 0:
            with open(os.path.join(work, "out", "report.json")) as f:
                s = json.load(f)["steps"]
            check("report: the program's %d steps" % steps, s.get("count") == steps, repr(s.get("count")))
            per = s.get("per_step_ms") or 0
            check("report: the program's time per step (within 3%%): %.4g against %.4g ms" % (per, ms),
                  abs(per - ms) <= 0.03 * ms)
    finally:
        cleanup(work)
    finish()


main()
