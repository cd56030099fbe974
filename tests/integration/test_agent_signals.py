#!/usr/bin/env python3
"""Endings under the agent: SIGKILL during a write-heavy run leaves every
whole frame readable, loses at most the last flush interval, and the report
says the file has no end; SIGTERM gives a clean end chunk and the program
still dies of SIGTERM; a program's own SIGTERM handler still runs."""
import os
import signal
import subprocess
import time

from rstest import (PROG, PYTHON, check, cleanup, dump, finish, report, run, tempdir, trace_files,
                    traced_env)

FLUSH_MS = 200


def start_writer(out, work):
    env = traced_env(out, RINGSIDE_FLUSH_MS=FLUSH_MS)
    return subprocess.Popen([os.path.join(PROG, "write_loop"), os.path.join(work, "w.out"), "0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def progress_until(p, seconds):
    """Reads the program's "COUNT MONO_NS" lines for a while."""
    lines, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        line = p.stdout.readline()
        if not line:
            break
        lines.append(tuple(int(x) for x in line.split()))
    return lines


def writes_in(trace):
    recs, rc, err = dump(trace)
    return [r for r in recs if r["type"] == "io" and r["op"] == "write" and r["path"].endswith("w.out")], recs, rc, err


def main():
    # SIGKILL: nothing can run at the kill; what was flushed must be whole.
    out, work = tempdir("trace-kill"), tempdir("kill")
    p = start_writer(out, work)
    lines = progress_until(p, 1.5)
    p.kill()
    kill_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    p.wait()
    files = trace_files(out)
    if check("sigkill: a trace exists", len(files) == 1, str(files)):
        writes, recs, rc, err = writes_in(files[0])
        chunks = [r for r in recs if r["type"] == "chunk"]
        check("sigkill: no end mark", chunks and not chunks[-1]["end"], "end mark present")
        # Writes the program had finished one flush interval (and margin)
        # before the kill must all be on disk.
        margin = (2 * FLUSH_MS + 300) * 1000000
        done_before = max([c for c, t in lines if t < kill_ns - margin] or [0])
        check("sigkill: at most the last flush interval lost", len(writes) >= done_before and done_before > 0,
              "%d writes recorded, %d were done %d ms before the kill" % (len(writes), done_before, margin // 1000000))
        rep = report(out)
        tr = rep["processes"][0]["trace"]
        check("sigkill: report says cut short", tr["cut_short"] and not tr["complete"], str(tr))
        check("sigkill: report counts unread bytes", "unread_bytes" in tr and tr["unread_bytes"] >= 0, str(tr))
        # The same file cut in the middle of its last frame: everything
        # before it is still read, and the report says how much was not.
        with open(files[0], "rb") as f:
            data = f.read()
        last = data.rfind(b"\x04\x22\x4d\x18")  # LZ4 frame magic: the last frame's start
        cutdir = tempdir("cut")
        cut = os.path.join(cutdir, "cut.trace.lz4")
        with open(cut, "wb") as f:
            f.write(data[: last + (len(data) - last) // 2])
        cut_writes, _, rc, err = writes_in(cut)
        whole = writes_in_prefix(files[0], data[:last], work)
        check("cut frame: every whole frame read", len(cut_writes) == len(whole),
              "%d writes read, %d in the whole frames" % (len(cut_writes), len(whole)))
        check("cut frame: dump exits 1 naming file and offset", rc == 1 and "cut.trace.lz4: offset %d" % last in err, err)
        tr = report(cutdir)["processes"][0]["trace"]
        check("cut frame: report counts the unread bytes",
              tr["cut_short"] and tr["unread_bytes"] == (len(data) - last) // 2, str(tr))
        cleanup(cutdir)
    cleanup(out, work)

    # SIGTERM with the default action: flushed, end mark, still killed by SIGTERM.
    out, work = tempdir("trace-term"), tempdir("term")
    p = start_writer(out, work)
    lines = progress_until(p, 1.0)
    p.terminate()
    rc = p.wait()
    err = p.stderr.read().decode()
    check("sigterm: program dies of SIGTERM", rc == -signal.SIGTERM, "exit %s" % rc)
    files = trace_files(out)
    if check("sigterm: a trace exists", len(files) == 1, str(files)):
        writes, recs, drc, derr = writes_in(files[0])
        chunks = [r for r in recs if r["type"] == "chunk"]
        check("sigterm: clean end chunk", chunks and chunks[-1]["end"] and drc == 0, derr)
        check("sigterm: every write the program reported is recorded", len(writes) >= lines[-1][0],
              "%d recorded, program reported %d" % (len(writes), lines[-1][0]))
        check("sigterm: recorded count equals events", chunks[-1]["counters"]["recorded"] ==
              sum(1 for r in recs if r["type"] in ("io", "sample", "point")), str(chunks[-1]))
    check("sigterm: agent said nothing", "ringside" not in err, err)
    cleanup(out, work)

    # A program with its own SIGTERM handler and a SIGINT it ignores: they
    # see their own dispositions, and the handler runs.
    out, work = tempdir("trace-handler"), tempdir("handler")
    code = ("import signal, os, sys, time\n"
            "print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, flush=True)\n"
            "def h(s, f):\n"
            "    open('handled', 'w').write('yes')\n"
            "    sys.exit(7)\n"
            "signal.signal(signal.SIGTERM, h)\n"
            "print(signal.getsignal(signal.SIGTERM) is h, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGTERM)\n"
            "time.sleep(5)\n")
    p = run([PYTHON, "-c", code], env=traced_env(out), cwd=work)
    check("own handler: dispositions as set", p.stdout.decode().split() == ["True", "True"], p.stdout.decode())
    check("own handler: runs and exits its way", p.returncode == 7 and
          os.path.exists(os.path.join(work, "handled")), "exit %d %s" % (p.returncode, p.stderr.decode()[-300:]))
    files = trace_files(out)
    check("own handler: trace complete", files and all(report(out)["processes"][i]["trace"]["complete"]
                                                       for i in range(len(files))), str(files))
    cleanup(out, work)

    finish()


def writes_in_prefix(trace, prefix, work):
    """Writes recorded in the first bytes of a trace (whole frames only)."""
    tmp = os.path.join(work, "prefix.trace.lz4")
    with open(tmp, "wb") as f:
        f.write(prefix)
    writes, _, _, _ = writes_in(tmp)
    os.unlink(tmp)
    return writes


main()
