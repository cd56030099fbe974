#!/usr/bin/env python3
"""A program that dies of a fault or an abort under the agent
(tests/programs/crash_ways.c): the same exit status (the same signal), the
same output as without it (its first event a file written, which starts
the agent, as a training process's always has); the trace ends with a fatal mark naming the
signal and a CPU sample of no weight whose stack starts at the faulting
function (crash_here, by the program's own symbol table), and is whole (its
end mark). A program with its own SIGSEGV handler keeps it: the handler runs,
the status is its own, and the agent writes no fatal mark."""
import os
import subprocess

from rstest import PROG, check, cleanup, dump, finish, run, tempdir, trace_files, traced_env

CRASH = os.path.join(PROG, "crash_ways")
SIGNALS = {"segv": 11, "abort": 6, "fpe": 8}


def symbol_at(addr, maps):
    """The crash_ways function addr is in, by nm over its module records."""
    for m in maps:
        if m["start"] <= addr < m["end"] and m.get("path_text", "").endswith("crash_ways"):
            off = addr - m["start"] + m["file_off"]
            out = subprocess.run(["addr2line", "-f", "-e", CRASH, hex(off)], capture_output=True, text=True)
            return out.stdout.split("\n")[0]
    return None


def main():
    for how in ("segv", "abort", "fpe", "handled"):
        out = tempdir("crash-" + how)
        plain = run([CRASH, how, os.path.join(out, "plain.txt")])
        p = run([CRASH, how, os.path.join(out, "traced.txt")], env=traced_env(os.path.join(out, "trace")))
        check("%s: the same status as without the agent (%d)" % (how, plain.returncode),
              p.returncode == plain.returncode, "%d vs %d" % (p.returncode, plain.returncode))
        check("%s: the same output" % how, p.stdout == plain.stdout, "%r vs %r" % (p.stdout, plain.stdout))
        files = trace_files(os.path.join(out, "trace"))
        if not check("%s: one trace file" % how, len(files) == 1, str(files)):
            continue
        recs, rc, err = dump(files[0])
        marks = [r for r in recs if r["type"] == "mark"]
        if how == "handled":
            check("handled: its own handler ran (status 3, 'handled')", p.returncode == 3 and b"handled" in p.stdout,
                  "%d %r" % (p.returncode, p.stdout))
            check("handled: no fatal mark", not marks, str(marks))
            cleanup(out)
            continue
        check("%s: a fatal mark with signal %d" % (how, SIGNALS[how]),
              len(marks) == 1 and marks[0]["kind"] == "fatal" and marks[0]["sig"] == SIGNALS[how], str(marks))
        check("%s: the file is whole, with its end mark" % how,
              rc == 0 and any(r["type"] == "chunk" and r.get("end") for r in recs), err[-200:] if err else "")
        if how != "segv" or not marks:
            cleanup(out)
            continue
        stacks = {r["id"]: r["frames"] for r in recs if r["type"] == "stack"}
        fatal = [r for r in recs if r["type"] == "sample" and r["kind"] == "cpu" and r["ts_ns"] == marks[0]["ts_ns"]]
        maps = [r for r in recs if r["type"] == "module"]
        leaf = symbol_at(stacks.get(fatal[0]["stack"], [0])[0], maps) if fatal else None
        check("segv: the fatal sample weighs nothing, its stack starts at crash_here",
              len(fatal) == 1 and fatal[0]["weight_ns"] == 0 and leaf == "crash_here", "%r %r" % (fatal, leaf))
        cleanup(out)
    finish()


main()
