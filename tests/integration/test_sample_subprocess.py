#!/usr/bin/env python3
"""CPU sampling and file I/O go on after a Python program starts a child
process (docs/agent.md, CPU and wait stacks): subprocess.run, os.system, os.posix_spawn and a
multiprocessing child with the fork, spawn and forkserver start methods,
under pyenv's CPython 3.10 to 3.13 and Debian's /usr/bin/python3. Several
of these start the child with vfork, and the child, which shares the
parent's memory, resets signal handlers and closes fds before it execs:
none of that may turn the parent's sampler off or make the agent forget
the parent's fds. Per interpreter and way, tests/programs/py_subproc.py
spins for the same CPU time before and after the call; truths:
- the CPU time in the parent's samples under before_MODE and after_MODE
  splits as the workload's own process_time measures did, within 5 points
  or 4 sd (sampled.py; and no notice that CPU samples are off);
- the bytes read from a file opened before the call, the rest of it read
  after, are the file's size;
- stdout, stderr (less the agent's own "ringside:" lines) and the exit
  status are those of the same run without the agent, which runs beside it."""
import json
import os
import subprocess

from rstest import (ROOT, check, cleanup, cpython, finish, report, skip, tempdir, trace_files,
                    traced_env)
from sampled import effective_n, share_check
from samples import PYBIT, Trace, py_split

SCRIPT = os.path.join(ROOT, "tests", "programs", "py_subproc.py")
MODES = ("run", "system", "posix_spawn", "mp_fork", "mp_spawn", "mp_forkserver")
# CPU seconds per side: 0.6 s gives 150 samples per side from a 250 Hz
# kernel tick on (CPU-time timers fire at most once a tick: 4 sd of a
# half are 11.5 points), and the 30 cases of two sides each stay within
# about a minute on two cores.
SECONDS = 0.6
DATA_BYTES = 1000003


def interpreters():
    """(label, path) of each interpreter to test; skips the missing ones."""
    found = []
    for minor in (10, 11, 12, 13):
        py = cpython(minor)
        if py:
            found.append(("3.%d" % minor, py))
        else:
            skip("python 3.%d" % minor, "no CPython 3.%d installed (pyenv)" % minor)
    if os.path.exists("/usr/bin/python3"):
        found.append(("debian python3", "/usr/bin/python3"))
    else:
        skip("debian python3", "no /usr/bin/python3")
    return found


def innermost_function(t, stack):
    """The innermost Python frame's "file.py:function", without the line
    number a frame's name may end with."""
    for a in t.stacks.get(stack, []):
        if a & PYBIT:
            return py_split(t.strings.get(a & 0xFFFFFFFF))[0]
    return None


def own_lines(err):
    """stderr without the agent's notices."""
    return [l for l in err.decode(errors="replace").splitlines() if not l.startswith("ringside:")]


def one(label, py, mode, data, work):
    name = "%s %s" % (label, mode)
    out = tempdir("sample-subproc")
    plain_truth, truth_path = os.path.join(work, mode + ".plain.json"), os.path.join(work, mode + ".json")
    args = [py, SCRIPT, mode, str(SECONDS), data]
    # The run without the agent beside the one with it: both spin for CPU
    # time, so sharing the machine changes neither's figures.
    plain = subprocess.Popen(args + [plain_truth], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    traced = subprocess.Popen(args + [truth_path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    t_out, t_err = traced.communicate(timeout=120)
    p_out, p_err = plain.communicate(timeout=120)
    check(name + ": same output and exit status as without the agent",
          plain.returncode == 0 and traced.returncode == plain.returncode and t_out == p_out
          and own_lines(t_err) == own_lines(p_err),
          "status %d / %d without; stdout %r / %r; stderr %r" % (traced.returncode, plain.returncode,
                                                                 t_out[-200:], p_out[-200:], t_err[-300:]))
    check(name + ": no notice that CPU samples are off", b"CPU samples are off" not in t_err,
          t_err.decode(errors="replace").strip()[-200:])
    try:
        with open(truth_path) as f:
            truth = json.load(f)
    except (OSError, ValueError) as e:
        check(name + ": workload's truth written", False, str(e))
        cleanup(out)
        return
    pid = truth["pid"]
    mine = [p for p in trace_files(out) if p.endswith(".%d.trace.lz4" % pid)]
    if not check(name + ": the parent's trace written", len(mine) == 1,
                 "%d files for pid %d among %s" % (len(mine), pid, trace_files(out))):
        cleanup(out)
        return

    t = Trace(mine[0])
    cpu = {"py_subproc.py:" + fn: 0 for fn in truth["cpu_s"]}
    weights = []
    for s in t.of_kind("cpu"):
        fn = innermost_function(t, s["stack"])
        if fn in cpu:
            cpu[fn] += s["weight_ns"]
            weights.append(s["weight_ns"])
    n = effective_n(weights)
    total, want_total = sum(cpu.values()), sum(truth["cpu_s"].values())
    for fn, secs in truth["cpu_s"].items():
        want = 100.0 * secs / want_total
        got = 100.0 * cpu["py_subproc.py:" + fn] / total if total else 0.0
        share_check("%s: %s's CPU share" % (name, fn), got, want, n, floor=5.0,
                    detail=", ".join("%s %.0f ms" % (k.split(":")[1], v / 1e6) for k, v in cpu.items()))

    size = os.path.getsize(data)
    rep = report(out)
    read = sum(f["read_bytes"] for p in rep["processes"] if p["pid"] == pid
               for f in p["io"]["files"] if f["path"] == data)
    check(name + ": reads of the file opened before the call, recorded after it",
          read == size and t_out.endswith(b"read 65536 bytes before, %d after\n" % (size - 65536)),
          "recorded %d bytes, the file has %d (65536 read before the call); the workload said %r"
          % (read, size, t_out.strip()[-80:]))
    cleanup(out)


def main():
    work = tempdir("subproc")
    data = os.path.join(work, "data.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(DATA_BYTES))
    for label, py in interpreters():
        for mode in MODES:
            one(label, py, mode, data, work)
    cleanup(work)
    finish()


main()
