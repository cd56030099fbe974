#!/usr/bin/env python3
"""The agent at its limits and in the program's symbol scope: a full disk
(a small tmpfs as RINGSIDE_OUT) leaves the program's output and exit status
as they are, with one "ringside:" notice and a trace of whole frames; the
agent exports only its hooks (agent.map) and NVTX's injection entry point,
and needs only the C library."""
import os
import re
import subprocess

from rstest import AGENT, PROG, ROOT, check, cleanup, dump, finish, run, skip, tempdir, trace_files, traced_env


def full_disk():
    mnt, work = tempdir("tmpfs"), tempdir("disk")
    m = run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt])
    if m.returncode != 0:
        skip("full disk", "cannot mount a tmpfs here (needs root): " + m.stderr.decode().strip())
        cleanup(mnt, work)
        return
    try:
        cmd = [os.path.join(PROG, "write_loop"), os.path.join(work, "w.out"), "60000"]
        plain = run(cmd, env=traced_env(mnt, RINGSIDE_DISABLE=1))
        traced = run(cmd, env=traced_env(mnt, RINGSIDE_FLUSH_MS=20))
        po, to = plain.stdout.decode().splitlines(), traced.stdout.decode().splitlines()
        check("full disk: exit status unchanged", plain.returncode == traced.returncode == 3,
              "without %d, with %d" % (plain.returncode, traced.returncode))
        check("full disk: output unchanged", len(po) == len(to) and po[-1] == to[-1] and
              [l.split()[0] for l in po] == [l.split()[0] for l in to], "%s vs %s" % (po[-1:], to[-1:]))
        notices = [l for l in traced.stderr.decode().splitlines() if l.startswith("ringside:")]
        check("full disk: one notice", len(notices) == 1 and "No space left" in notices[0],
              str(traced.stderr.decode().splitlines()))
        check("full disk: nothing else on stderr", traced.stderr.decode().count("\n") == 1,
              traced.stderr.decode())
        files = trace_files(mnt)
        if check("full disk: a trace was started", len(files) == 1, str(files)):
            recs, rc, err = dump(files[0])
            check("full disk: the trace holds only whole frames", rc == 0 and recs, err)
    finally:
        run(["umount", mnt])
        cleanup(mnt, work)


def exports():
    with open(os.path.join(ROOT, "preload", "agent.map")) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    allowed = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text.split("global:")[1].split("local:")[0]))
    nm = run(["nm", "-D", "--defined-only", AGENT])
    exported = {l.split()[-1].split("@")[0] for l in nm.stdout.decode().splitlines() if l.strip()}
    exported.discard("RINGSIDE_0")
    check("exports: only the hooks", exported and exported <= allowed, "extra: %s" % sorted(exported - allowed))
    # NVTX's entry point for injection libraries, and none of NVTX's API (the
    # agent is a tool: it must not define nvtxRangePushA & co. for the program).
    check("exports: NVTX's InitializeInjectionNvtx2", "InitializeInjectionNvtx2" in exported, str(sorted(exported)[:10]))
    check("exports: no NVTX API or NVTX globals", not any(s.lower().startswith("nvtx") for s in exported) and
          "InitializeInjectionNvtx2_fnptr" not in exported, str(sorted(s for s in exported if "nvtx" in s.lower())))
    check("exports: no unwinder or LZ4 symbols",
          not any(s.startswith(("_Unwind", "LZ4", "lz4")) for s in exported), str(sorted(exported)[:10]))
    ldd = run(["ldd", AGENT]).stdout.decode()
    libs = {l.split()[0] for l in ldd.splitlines() if l.strip()}
    ok = all(re.match(r"(linux-vdso\.so\.1|libc\.so\.6|/lib64/ld-linux-x86-64\.so\.2|ld-linux.*)$", x) for x in libs)
    check("ldd: only the C library's own", ok, ldd)


def disabled():
    out, work = tempdir("trace-off"), tempdir("off")
    p = run(["dd", "if=/dev/zero", "of=" + os.path.join(work, "x"), "bs=1k", "count=10", "status=none"],
            env=traced_env(out, RINGSIDE_DISABLE=1))
    check("RINGSIDE_DISABLE=1: no trace", p.returncode == 0 and not trace_files(out), str(trace_files(out)))
    p = run(["dd", "if=/dev/zero", "of=" + os.path.join(work, "x"), "bs=1k", "count=10", "status=none"],
            env=traced_env(out, RINGSIDE_IO=0))
    check("RINGSIDE_IO=0: no trace of a pure I/O program", p.returncode == 0 and not trace_files(out),
          str(trace_files(out)))
    p = run(["true"], env=traced_env(out))
    check("a process without events leaves no file", p.returncode == 0 and not trace_files(out),
          str(trace_files(out)))
    p = run(["dd", "if=/dev/zero", "of=/dev/null", "count=1", "status=none"],
            env=traced_env(out, RINGSIDE_BUFFER_MB="lots"))
    check("a malformed setting gives a notice", p.returncode == 0 and
          p.stderr.decode().startswith("ringside: RINGSIDE_BUFFER_MB=lots"), p.stderr.decode())
    cleanup(out, work)


full_disk()
exports()
disabled()
finish()
