#!/usr/bin/env python3
"""Symbols from where the job ran (docs/reporter.md, Symbols from elsewhere): a synthetic container, a
root folder holding flame_hot and the C library it links with, the agent
copied in, run with `chroot ROOT` and reported from outside it.

- Without --sysroot flame_hot's frames are [flame_hot+0x...], and report.json
  "symbols" names the module with "file not found here".
- With --sysroot ROOT they are named, with the shares flame_hot measures with
  its own CPU clock (within 5 points or 4 sd: sampled.py).
- A different binary at that path under another root: "build id differs",
  never its names.
- `ringside symbols` run in the chroot's view (chroot ROOT /ringside symbols)
  packs a small file; report --symbols FILE from outside: the same names.
- A debuginfod server on loopback serving ROOT (debuginfod -F ROOT) with
  DEBUGINFOD_URLS: the same names; a dead server is said once, promptly.
- A damaged symbols file: one clear line, exit status 1.
Needs root (chroot) and the debuginfod package for its part."""
import json
import os
import re
import shutil
import socket
import subprocess
import time

from rstest import (AGENT, PROG, RINGSIDE, check, cleanup, finish, free_port, run, skip, tempdir)
from sampled import cpu_samples, samples_in, share_check
from samples import weighted_shares

HOT = os.path.join(PROG, "flame_hot")
HOT3 = os.path.join(PROG, "hot3")
APP = "/opt/app/flame_hot"          # a path this machine does not have
WANTED = ("hot_a", "hot_b", "hot_c")
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"


def libs_of(elf):
    """The files ldd names for elf (the loader included)."""
    out = run(["ldd", elf]).stdout.decode()
    found = re.findall(r"(/\S+) \(0x", out)
    return sorted(set(found))


def copy_in(root, src, dst=None):
    dst = root + (dst or src)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy2(src, dst)


def unwind_lib():
    """The libunwind the agent opens for its CPU samples, as this machine has it."""
    out = run(["ldconfig", "-p"]).stdout.decode()
    m = re.search(r"libunwind\.so\.8 \(libc6,x86-64\) => (\S+)", out)
    return m.group(1) if m else None


def make_root(root, app_binary):
    unwind = unwind_lib()
    extra = [unwind] + libs_of(unwind) if unwind else []
    for lib in set(libs_of(HOT) + libs_of(AGENT) + libs_of(RINGSIDE) + extra):
        copy_in(root, os.path.realpath(lib), lib)
        # its separate debug info too, where this machine has it (an image
        # with the -dbg packages): the chroot's view is then this machine's
        m = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", lib]).stdout.decode())
        debug = m and "/usr/lib/debug/.build-id/%s/%s.debug" % (m.group(1)[:2], m.group(1)[2:])
        if debug and os.path.exists(debug):
            copy_in(root, os.path.realpath(debug), debug)
    copy_in(root, app_binary, APP)
    copy_in(root, AGENT, "/libagent.so")
    copy_in(root, RINGSIDE, "/ringside")
    os.makedirs(root + "/out", exist_ok=True)


def folded_rows(args):
    p = run([RINGSIDE, "flame"] + args + ["--kind", "cpu", "-o", "-"])
    rows = []
    for line in p.stdout.decode().splitlines():
        stack, _, w = line.rpartition(" ")
        if stack:
            rows.append((stack.split(";"), int(w)))
    return rows, p


def leaf_hot(frames):
    for f in reversed(frames):
        if f in WANTED:
            return f
    return None


def report_json(work, name, args, env=None):
    js = os.path.join(work, name + ".json")
    p = run([RINGSIDE, "report"] + args + ["-o", os.path.join(work, name), "--json", js], env=env, timeout=120)
    data = None
    if p.returncode == 0:
        with open(js) as f:
            data = json.load(f)
    return data, p


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def note_of(page):
    """The page's paragraph of unnamed frames, or ""."""
    i = page.find('id="unnamed"')
    return page[i:page.find("</p>", i)] if i >= 0 else ""


def unnamed_of(rep, module):
    return [u for u in rep["symbols"]["unnamed"] if u["module"] == module and u["kind"] == "cpu"]


def truth_shares(stdout):
    got = {}
    for l in stdout.splitlines():
        f = l.split()
        if len(f) == 3 and f[0] == "share":
            got[f[1]] = float(f[2])
    return got


def debuginfod_case(work, root, traces):
    server = shutil.which("debuginfod")
    if not server:
        skip("debuginfod serves the root: same names", "no debuginfod (Debian package debuginfod)")
        return
    port = free_port()
    db = os.path.join(work, "dbg.sqlite")
    log = open(os.path.join(work, "debuginfod.log"), "w")
    srv = subprocess.Popen([server, "-F", root, "-p", str(port), "-d", db, "-t", "0"],
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        env = dict(os.environ, DEBUGINFOD_URLS="http://127.0.0.1:%d" % port,
                   DEBUGINFOD_CACHE_PATH=os.path.join(work, "dcache"))
        # the server scans the root once it starts: wait until it serves the binary
        bid = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", HOT]).stdout.decode()).group(1)
        ready = False
        for _ in range(120):
            p = run(["curl", "-sf", "-o", "/dev/null", "http://127.0.0.1:%d/buildid/%s/executable" % (port, bid)])
            if p.returncode == 0:
                ready = True
                break
            time.sleep(0.5)
        if not check("debuginfod serves the root's binary by build id", ready, "not after 60 s"):
            return
        want, _ = folded_rows([traces, "--sysroot", root])
        env_rows = subprocess.run([RINGSIDE, "flame", traces, "--kind", "cpu", "-o", "-"], env=env,
                                  capture_output=True, timeout=120)
        rows = []
        for line in env_rows.stdout.decode().splitlines():
            stack, _, w = line.rpartition(" ")
            if stack:
                rows.append((stack.split(";"), int(w)))
        # the same rows as --sysroot's, whose shares main() holds to the program's clock
        check("DEBUGINFOD_URLS instead of --sysroot: the same flame graph", rows and sorted(rows) == sorted(want),
              env_rows.stderr.decode()[-300:])
    finally:
        srv.terminate()
        srv.wait(timeout=30)
        log.close()
    # A server that accepts and never answers: said once, no hang.
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(64)
    env = dict(os.environ, DEBUGINFOD_URLS="http://127.0.0.1:%d" % lsn.getsockname()[1],
               DEBUGINFOD_TIMEOUT="2", DEBUGINFOD_CACHE_PATH=os.path.join(work, "dcache2"))
    t0 = time.time()
    p = subprocess.run([RINGSIDE, "flame", traces, "--kind", "cpu", "-o", os.path.join(work, "dead.folded")],
                       env=env, capture_output=True, timeout=120)
    took = time.time() - t0
    lsn.close()
    err = p.stderr.decode()
    said = err.count("debuginfod (")
    check("a debuginfod server that never answers: said once (%d), done in %.1f s, exit 0" % (said, took),
          p.returncode == 0 and said == 1 and took < 30, err[-400:])


def main():
    if os.geteuid() != 0:
        skip("sysroot", "needs root for chroot")
        return
    work = tempdir("sysroot")
    try:
        root = os.path.join(work, "root")
        make_root(root, HOT)
        env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": "/libagent.so", "RINGSIDE_OUT": "/out",
               "RINGSIDE_JOB": "sysroot",
               "RINGSIDE_SAMPLE_HZ": "999"}
        # /proc bound in, as a container has it (the agent reads its maps there)
        os.makedirs(root + "/proc", exist_ok=True)
        if not check("/proc bound into the root", run(["mount", "--bind", "/proc", root + "/proc"]).returncode == 0):
            return
        try:
            p = subprocess.run([CHROOT, root, APP, "4"], env=env, capture_output=True, timeout=120)
        finally:
            run(["umount", root + "/proc"])
        if not check("flame_hot runs in the chroot under the agent", p.returncode == 0,
                     p.stderr.decode()[-300:]):
            return
        truth = truth_shares(p.stdout.decode())
        if not check("flame_hot printed its shares", set(truth) == set(WANTED), p.stdout.decode()):
            return
        traces = os.path.join(root, "out")

        rep, p = report_json(work, "plain", [traces, "-q"])
        if check("report without --sysroot works", rep is not None, p.stderr.decode()[-300:]):
            u = unnamed_of(rep, "flame_hot")
            check("without --sysroot: flame_hot's frames unnamed, 'file not found here' in report.json",
                  u and u[0]["reason"] == "file not found here" and u[0]["path"] == APP and u[0]["samples"] > 0,
                  json.dumps(rep["symbols"])[:400])
            page = read_text(os.path.join(work, "plain", "index.html"))
            share = "flame_hot %.1f%% (%d address" % (100 * u[0]["share"], u[0]["addresses"]) if u else "?"
            check("without --sysroot: the page names the module, its share as report.json has it, and why",
                  'id="unnamed"' in page and share in page and "file not found here" in page and "--sysroot" in page,
                  "%r not in the page's note" % share)
        rows, p = folded_rows([traces])
        check("without --sysroot: no hot_a/b/c in the flame graph, [flame_hot+0x...] instead",
              rows and not any(leaf_hot(f) for f, _ in rows) and
              any(x.startswith("[flame_hot+0x") for f, _ in rows for x in f), str(rows[:3]))
        check("without --sysroot: the flame summary says which module and why",
              "flame_hot" in p.stderr.decode() and "file not found here" in p.stderr.decode(),
              p.stderr.decode()[-300:])

        rows, p = folded_rows([traces, "--sysroot", root])
        sh, w = weighted_shares(rows, leaf_hot, WANTED)
        n = samples_in(w, cpu_samples(traces))
        for k in WANTED:
            share_check("--sysroot ROOT: %s named, its share (the program's own clock)" % k, sh[k], truth[k], n,
                        floor=5.0)
        rep, p = report_json(work, "rooted", [traces, "--sysroot", root, "-q"])
        check("--sysroot ROOT: report.json names no unnamed flame_hot frames, and the sysroot",
              rep is not None and not unnamed_of(rep, "flame_hot") and rep["symbols"]["sysroot"] == root,
              "%s %s" % (json.dumps(rep and rep["symbols"])[:1500], p.stderr.decode()[-300:]))
        check("--sysroot ROOT: the page's note of unnamed frames does not name flame_hot",
              "flame_hot " not in note_of(read_text(os.path.join(work, "rooted", "index.html"))), "")

        other = os.path.join(work, "other")
        copy_in(other, HOT3, APP)
        rep, p = report_json(work, "changed", [traces, "--sysroot", other])
        if check("report with another binary at the path works", rep is not None, p.stderr.decode()[-300:]):
            u = unnamed_of(rep, "flame_hot")
            check("a different binary at the traced path: 'build id differs' in report.json and on stderr",
                  u and u[0]["reason"] == "build id differs" and "build id" in p.stderr.decode(),
                  json.dumps(rep["symbols"])[:300] + p.stderr.decode()[-300:])
        rows, _ = folded_rows([traces, "--sysroot", other])
        check("a different binary at the traced path: none of its names used",
              rows and not any(x in ("main",) or leaf_hot(f) for f, _ in rows for x in f[-1:]), str(rows[:3]))

        p = subprocess.run([CHROOT, root, "/ringside", "symbols", "/out", "-o", "/out.syms"],
                           env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=120)
        packed = root + "/out.syms"
        if check("ringside symbols runs in the chroot", p.returncode == 0 and os.path.exists(packed),
                 p.stderr.decode()[-300:]):
            size = os.path.getsize(packed)
            libc = os.path.getsize(os.path.realpath([l for l in libs_of(HOT) if "/libc.so" in l][0]))
            check("the symbols file is small: %d bytes (the C library alone is %d)" % (size, libc),
                  0 < size < libc // 20)
            plain_rows, _ = folded_rows([traces, "--sysroot", root])
            rows, p = folded_rows([traces, "--symbols", packed])
            check("--symbols FILE from outside: the same flame graph as --sysroot",
                  sorted(rows) == sorted(plain_rows) and rows,
                  "%d vs %d rows; %s" % (len(rows), len(plain_rows), p.stderr.decode()[-300:]))
            with open(packed) as f:
                text = f.read()
            bad = os.path.join(work, "bad.syms")
            for name, body in (("another version", text.replace("ringside-symbols\t1", "ringside-symbols\t9", 1)),
                               ("a cut record", text[:text.index("\nA\t") + 3] + "zz\n"),
                               ("not a symbols file", "hello\n")):
                with open(bad, "w") as f:
                    f.write(body)
                q = run([RINGSIDE, "flame", traces, "--symbols", bad, "-o", "-"])
                err = q.stderr.decode().strip().splitlines()
                check("a damaged symbols file (%s): one line naming the file, status 1" % name,
                      q.returncode == 1 and len(err) == 1 and bad in err[0], q.stderr.decode()[-300:])

        debuginfod_case(work, root, traces)
    finally:
        cleanup(work)


if __name__ == "__main__":
    main()
    finish()
