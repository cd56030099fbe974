#!/usr/bin/env python3
"""Real programs nobody here wrote, run under the agent: bytes read and
written per file in report.json must equal the truth (the files' sizes and
fio's own totals) to the byte."""
import json
import os
import shutil

from rstest import PYTHON, check, cleanup, finish, io_by_path, report, run, skip, tempdir, traced_env


def case(name, cmd, expect, cwd, env_extra=None, stdin=None):
    out = tempdir("trace-" + name)
    env = traced_env(out, **(env_extra or {}))
    p = run(cmd, env=env, cwd=cwd, input=stdin)
    if not check(name + " runs", p.returncode == 0, p.stderr.decode(errors="replace")[-500:]):
        cleanup(out)
        return None
    got = io_by_path(report(out))
    for path, (rb, wb) in expect.items():
        g = got.get(path, [0, 0])
        check("%s %s read bytes" % (name, os.path.basename(path)), g[0] == rb, "recorded %d, truth %d" % (g[0], rb))
        check("%s %s write bytes" % (name, os.path.basename(path)), g[1] == wb, "recorded %d, truth %d" % (g[1], wb))
    cleanup(out)
    return p


def main():
    work = tempdir("io")
    src = os.path.join(work, "src.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(3 * 1024 * 1024 + 123))
    size = os.path.getsize(src)

    # dd, both directions, with bs and count.
    dst = os.path.join(work, "dd.out")
    case("dd-write", ["dd", "if=/dev/zero", "of=" + dst, "bs=4096", "count=300"], {dst: (0, 4096 * 300)}, work)
    case("dd-read", ["dd", "if=" + dst, "of=/dev/null", "bs=1000", "count=1000"], {dst: (1000 * 1000, 0)}, work)
    case("dd-copy", ["dd", "if=src.bin", "of=dd2.out", "bs=65536"],
         {src: (size, 0), os.path.join(work, "dd2.out"): (0, size)}, work)

    # cp of a 50 MB file (in-kernel copy_file_range on most file systems).
    big = os.path.join(work, "big.bin")
    with open(big, "wb") as f:
        for _ in range(50):
            f.write(os.urandom(1000 * 1000))
    cpy = os.path.join(work, "big.copy")
    case("cp", ["cp", big, cpy], {big: (50 * 1000 * 1000, 0), cpy: (0, 50 * 1000 * 1000)}, work)

    # tar creating an archive.
    arch = os.path.join(work, "a.tar")
    p = case("tar", ["tar", "cf", arch, "src.bin", "dd.out"], {}, work)
    if p is not None:
        out = tempdir("trace-tar")
        os.unlink(arch)
        run(["tar", "cf", arch, "src.bin", "dd.out"], env=traced_env(out), cwd=work)
        got = io_by_path(report(out))
        asize = os.path.getsize(arch)
        check("tar archive write bytes", got.get(arch, [0, 0])[1] == asize,
              "recorded %s, archive is %d" % (got.get(arch), asize))
        check("tar input read bytes", got.get(src, [0, 0])[0] == size and got.get(dst, [0, 0])[0] == 4096 * 300,
              "recorded %s and %s" % (got.get(src), got.get(dst)))
        cleanup(out)

    # python3: buffered text writes, then buffered reads.
    script = os.path.join(work, "buf.py")
    with open(script, "w") as f:
        f.write("with open('py.out', 'w', buffering=8192) as f:\n"
                "    for i in range(200000):\n"
                "        f.write('line %d of the file\\n' % i)\n"
                "n = 0\n"
                "with open('py.out', 'rb', buffering=4096) as f:\n"
                "    while f.read(1000):\n"
                "        n += 1\n")
    out = tempdir("trace-py")
    p = run([PYTHON, script], env=traced_env(out), cwd=work)
    if check("python runs", p.returncode == 0, p.stderr.decode(errors="replace")[-500:]):
        pysize = os.path.getsize(os.path.join(work, "py.out"))
        got = io_by_path(report(out)).get(os.path.join(work, "py.out"), [0, 0])
        check("python write bytes", got[1] == pysize, "recorded %d, file is %d" % (got[1], pysize))
        check("python read bytes", got[0] == pysize, "recorded %d, file is %d" % (got[0], pysize))
    cleanup(out)

    # fio, psync and sync engines: its own totals are the truth.
    if shutil.which("fio") is None:
        skip("fio", "fio is not installed (make deps installs it)")
    else:
        for engine, rw in (("psync", "write"), ("psync", "read"), ("sync", "write"), ("sync", "randread")):
            out = tempdir("trace-fio")
            fname = os.path.join(work, "fio-%s.dat" % engine)
            p = run(["fio", "--name=j", "--filename=" + fname, "--rw=" + rw, "--bs=8k", "--size=4m",
                     "--ioengine=" + engine, "--output-format=json"], env=traced_env(out), cwd=work)
            name = "fio-%s-%s" % (engine, rw)
            if check(name + " runs", p.returncode == 0, p.stderr.decode(errors="replace")[-500:]):
                job = json.loads(p.stdout)["jobs"][0]
                rep = report(out)
                # Only the job's own process (fio forks one per job) did the
                # measured I/O; the parent may lay the file out first.
                jobs = [pr for pr in rep["processes"] if pr["role"] == "child"]
                rb = sum(f["read_bytes"] for pr in jobs for f in pr["io"]["files"] if f["path"] == fname)
                wb = sum(f["write_bytes"] for pr in jobs for f in pr["io"]["files"] if f["path"] == fname)
                check(name + " read bytes", rb == job["read"]["io_bytes"], "recorded %d, fio says %d" % (rb, job["read"]["io_bytes"]))
                check(name + " write bytes", wb == job["write"]["io_bytes"], "recorded %d, fio says %d" % (wb, job["write"]["io_bytes"]))
            cleanup(out)
    cleanup(work)
    finish()


main()
