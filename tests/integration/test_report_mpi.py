#!/usr/bin/env python3
"""ringside report as an MPI program: under `mpirun -n 2` and `-n 3`, each
process reads its share of the files and the first writes the report, which
must be the one a single process writes: report.json equal as data except
its "reporter" key, every other output (index.html, trace.json, the flame
graphs) byte for byte. Jobs: gen_job with one file cut short (the same
warnings), a simtrain job under the agent (CPU, wait and GPU stacks: the
flame trees travel too), a Kineto import with fewer files than processes.
The "reporter" key against the outside: mpi_processes as launched,
peak_rss_mb against the kernel's peak for the finished process, wall_s
within the command's wall. Errors: no trace files (exit 1 everywhere),
tasks that MPI does not join (srun without --mpi=pmix) and a build without
MPI (`make MPI=0`, built here) under mpirun: exit 1 with a line saying why,
and the plain build's single-process report the same as the MPI build's."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import AGENT, BUILD, RINGSIDE, ROOT, check, cleanup, finish, report_problems, run, skip, tempdir  # noqa: E402
from samereport import compare, reporter_key  # noqa: E402

GEN_JOB = os.path.join(BUILD, "gen_job")
LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
KINETO = os.path.join(ROOT, "..", "shared", "data", "kineto", "a100-2rank-r0-nccl.json.gz")
MPIRUN = shutil.which("mpirun")


def mpirun(n):
    return [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-n", str(n)]


def peak_of(cmd, env=None):
    """Runs cmd in a fresh Python whose only child it is: (returncode, stderr,
    the child's peak RSS in MB from the kernel, wall s)."""
    probe = ("import resource,subprocess,sys,time\n"
             "t=time.monotonic(); p=subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.PIPE)\n"
             "w=time.monotonic()-t\n"
             "sys.stdout.write('%d %d %f\\n' % (p.returncode, "
             "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, w)); sys.stdout.write(p.stderr.decode())")
    p = run([sys.executable, "-c", probe] + cmd, env=env, timeout=300)
    first, _, err = p.stdout.decode().partition("\n")
    rc, kb, wall = first.split()
    return int(rc), err, int(kb) / 1024.0, float(wall)


def same_as_single(name, traces, nprocs):
    """Single process, then mpirun -n N for each N: the same outputs."""
    one = tempdir("mpi-one")
    try:
        rc, err, peak, wall = peak_of([RINGSIDE, "report", traces, "-o", one, "-q"])
        if not check(name + ": one process", rc == 0, err[-400:]):
            return
        key = reporter_key(one)
        check(name + ": reporter key of one process", key.get("mpi_processes") == 1 and
              key.get("version") and 0 < key.get("wall_s", -1) <= wall and
              0.5 * peak <= key.get("peak_rss_mb", -1) <= peak + 1, "%r; measured peak %.1f MB, wall %.3f s" %
              (key, peak, wall))
        for n in nprocs:
            many = tempdir("mpi-many")
            try:
                t = time.monotonic()
                p = run(mpirun(n) + [RINGSIDE, "report", traces, "-o", many, "-q"], timeout=300)
                wall = time.monotonic() - t
                if not check("%s: mpirun -n %d" % (name, n), p.returncode == 0, p.stderr.decode()[-600:]):
                    continue
                report_problems("%s: mpirun -n %d writes what one process writes" % (name, n), compare(one, many))
                key = reporter_key(many)
                check("%s: mpirun -n %d: reporter key" % (name, n), key.get("mpi_processes") == n and
                      0 < key.get("wall_s", -1) <= wall and key.get("peak_rss_mb", 0) > 0, repr(key))
                same_err = sorted(line for line in p.stderr.decode().splitlines() if line.startswith("ringside:"))
                one_err = sorted(line for line in err.splitlines() if line.startswith("ringside:"))
                check("%s: mpirun -n %d: the same warnings" % (name, n), same_err == one_err,
                      "%r vs %r" % (same_err, one_err))
            finally:
                cleanup(many)
    finally:
        cleanup(one)


def gen_job_case():
    d = tempdir("mpi-gen")
    try:
        p = run([GEN_JOB, "-n", "6", "-e", "40000", "-o", d])
        if not check("gen_job", p.returncode == 0, p.stderr.decode()[-300:]):
            return
        # one file cut short: its warnings come from whichever process read it
        f = sorted(x for x in os.listdir(d) if x.endswith(".trace.lz4"))[3]
        path = os.path.join(d, f)
        os.truncate(path, os.path.getsize(path) * 2 // 3)
        same_as_single("gen_job 6 ranks, one cut short", d, (2, 3))
    finally:
        cleanup(d)


def simtrain_case():
    d = tempdir("mpi-sim")
    out = os.path.join(d, "trace")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(BUILD, "sim"), RINGSIDE_OUT=out, AGENT_SO=AGENT,
               SIMNCCL_TIMEOUT_S="30")
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LD_PRELOAD"):
        env.pop(k, None)
    try:
        p = run([LAUNCH, "-n", "3", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", TRAIN,
                 "--steps", "20", "--layers", "4", "--data-us", "2000", "--ckpt-every", "10", "--ckpt-mb", "8",
                 "--ckpt-dir", os.path.join(d, "ckpt"), "--straggler", "2:1.5"], env=env, timeout=180)
        if not check("simtrain under the agent", p.returncode == 0, p.stderr.decode()[-400:]):
            return
        same_as_single("simtrain 3 ranks", out, (2, 3))
        # flame graphs were part of the comparison only if there were some
        one = tempdir("mpi-flames")
        try:
            run([RINGSIDE, "report", out, "-o", one, "-q"])
            check("simtrain: the report has flame graphs to compare",
                  any(x.startswith("flame-") for x in os.listdir(one)), str(os.listdir(one)))
        finally:
            cleanup(one)
    finally:
        cleanup(d)


def kineto_case():
    if not os.path.exists(KINETO):
        skip("kineto import under mpirun", "no %s" % KINETO)
        return
    d = tempdir("mpi-kineto")
    try:
        p = run([RINGSIDE, "import-kineto", KINETO, "-o", d])
        if check("import-kineto", p.returncode == 0, p.stderr.decode()[-300:]):
            same_as_single("kineto import (1 file, 3 processes)", d, (3,))
    finally:
        cleanup(d)


def errors_case():
    d = tempdir("mpi-empty")
    try:
        p = run(mpirun(2) + [RINGSIDE, "report", d, "-o", os.path.join(d, "out")], timeout=60)
        err = p.stderr.decode()
        check("no trace files under mpirun: exit 1, said once", p.returncode == 1 and
              err.count("no trace files") == 1 and not os.path.exists(os.path.join(d, "out")), err[-400:])
    finally:
        cleanup(d)
    # A launcher that started two tasks which MPI does not join (srun with
    # MpiDefault=none): each would write the whole report; refuse.
    env = dict(os.environ, SLURM_STEP_NUM_TASKS="2", SLURM_PROCID="0", SLURM_STEP_ID="0")
    d = tempdir("mpi-unjoined")
    try:
        p = run([GEN_JOB, "-n", "2", "-e", "1000", "-o", d])
        p = run([RINGSIDE, "report", d, "-o", os.path.join(d, "out")], env=env, timeout=60)
        err = p.stderr.decode()
        check("tasks MPI does not join: exit 1 naming --mpi=pmix", p.returncode == 1 and "--mpi=pmix" in err and
              not os.path.exists(os.path.join(d, "out")), "%d %s" % (p.returncode, err[-300:]))
        env["RINGSIDE_MPI"] = "0"
        p = run([RINGSIDE, "report", d, "-o", os.path.join(d, "out"), "-q"], env=env, timeout=60)
        check("RINGSIDE_MPI=0: one process in spite of the launcher", p.returncode == 0 and
              reporter_key(os.path.join(d, "out")).get("mpi_processes") == 1, p.stderr.decode()[-300:])
    finally:
        cleanup(d)


def plain_build_case():
    """make MPI=0: no libmpi, the same report, and a clear refusal under mpirun."""
    plain = os.path.join(BUILD, "plain")
    rel = os.path.relpath(plain, ROOT)
    p = run(["make", "-C", ROOT, "-j2", "BUILD=" + rel, "MPI=0", rel + "/ringside"], timeout=600)
    if not check("make MPI=0 builds ringside", p.returncode == 0, (p.stdout + p.stderr).decode()[-600:]):
        return
    exe = os.path.join(plain, "ringside")
    ldd = run(["ldd", exe]).stdout.decode()
    check("the plain build does not link libmpi", "libmpi" not in ldd, ldd)
    d = tempdir("mpi-plain")
    try:
        run([GEN_JOB, "-n", "4", "-e", "20000", "-o", os.path.join(d, "t")])
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        pa = run([RINGSIDE, "report", os.path.join(d, "t"), "-o", a, "-q"])
        pb = run([exe, "report", os.path.join(d, "t"), "-o", b, "-q"])
        if check("plain and MPI builds report", pa.returncode == 0 and pb.returncode == 0,
                 (pa.stderr + pb.stderr).decode()[-400:]):
            report_problems("the plain build writes what the MPI build writes", compare(a, b))
        p = run(mpirun(2) + [exe, "report", os.path.join(d, "t"), "-o", os.path.join(d, "c")], timeout=60)
        err = p.stderr.decode()
        check("the plain build under mpirun: exit 1, says it has no MPI", p.returncode != 0 and
              "built without MPI" in err and not os.path.exists(os.path.join(d, "c")), err[-400:])
    finally:
        cleanup(d)


def main():
    if not MPIRUN:
        skip("report under mpirun", "no mpirun (Debian openmpi-bin; tools/scripts/deps.sh installs it)")
        finish()
    ldd = run(["ldd", RINGSIDE]).stdout.decode()
    check("the default build is an MPI program (libopenmpi-dev is installed by make deps)", "libmpi" in ldd, ldd)
    gen_job_case()
    simtrain_case()
    kineto_case()
    errors_case()
    plain_build_case()
    finish()


main()
