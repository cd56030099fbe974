#!/usr/bin/env python3
"""Slurm for real: starts munged, slurmctld and slurmd on this machine (Debian
munge and slurm-wlm; loopback, a slurm.conf for this host in a temporary
folder, 4 CPUs, no cgroups), then `srun -n 4` with the agent in LD_PRELOAD in
front of srun (srun exports it to the tasks) runs four ranks of rank_io. The
trace folder holds four rank files, ranks 0..3 from SLURM_PROCID/
SLURM_LOCALID/SLURM_NTASKS, in the folder SLURM_JOB_ID.SLURM_STEP_ID, with the
bytes the ranks wrote; srun runs unharmed and no slower (see launchcheck.py).
Then launchers inside launchers, whose ranks inherit the outer one's
variables: srun in a batch script (which has SLURM_PROCID 0 and no step),
mpirun in a batch script, and a torchrun-like simlaunch as the one task of
an srun step: four ranks each, numbered by the inner launcher.
The daemons are stopped however the test ends. Needs root (slurmd starts
tasks as their user); skipped, with the reason, only without root or
without the packages."""
import os
import shutil
import signal
import socket
import subprocess
import time

from launchcheck import check_launch, check_no_delay, launch, rank_io_cmd
from rstest import AGENT, BUILD, RINGSIDE, check, cleanup, finish, report_problems, run, skip, tempdir, traced_env
from samereport import compare, reporter_key

VARS = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_JOB_ID", "SLURM_STEP_ID")
MARK = "RS_SLURM_TEST"   # in every daemon's environment, to find what they left running

CONF = """\
ClusterName=rstest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={dir}/run/munge.sock
CredType=cred/munge
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={host} NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=rs Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


def find(name):
    return shutil.which(name) or next((p for p in ("/usr/sbin/" + name, "/sbin/" + name) if os.access(p, os.X_OK)),
                                      None)


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def tail(path, n=1500):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError as e:
        return str(e)


class Cluster:
    """munged, slurmctld and slurmd in a folder of their own."""

    def __init__(self, bins):
        self.bins = bins
        self.dir = tempdir("slurm")
        os.chmod(self.dir, 0o755)   # munged wants every folder above its socket searchable
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=os.path.join(self.dir, "slurm.conf"))
        self.env[MARK] = self.dir
        self.host = socket.gethostname().split(".")[0]

    def start(self, name, argv):
        log = open(os.path.join(self.dir, name + ".out"), "wb")
        p = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        log.close()
        self.procs.append((name, p))
        return p

    def wait_for(self, what, test, timeout):
        """Polls test() until true; else the reason, with the daemons' logs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if test():
                return None
            dead = [(n, p.returncode) for n, p in self.procs if p.poll() is not None]
            if dead:
                break
            time.sleep(0.2)
        logs = "; ".join("%s: %s" % (n, tail(os.path.join(self.dir, n + ".out"), 400)) for n, _ in self.procs)
        return "%s: not within %d s (exited: %s) %s" % (what, timeout, dead, logs)

    def up(self):
        """Starts the daemons; None when the node is idle, else why not."""
        d = self.dir
        for sub in ("run", "state", "spool"):
            os.mkdir(os.path.join(d, sub), 0o755)
        key = os.path.join(d, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        sock = os.path.join(d, "run", "munge.sock")
        self.start("munged", [self.bins["munged"], "-F", "--key-file=" + key, "--socket=" + sock,
                              "--pid-file=" + os.path.join(d, "munged.pid"),
                              "--log-file=" + os.path.join(d, "munged.log"),
                              "--seed-file=" + os.path.join(d, "munged.seed")])
        why = self.wait_for("munged", lambda: subprocess.run(
            [self.bins["munge"], "-n", "-S", sock], capture_output=True, env=self.env).returncode == 0, 10)
        if why:
            return why
        ctld_port, slurmd_port = free_ports(2)
        with open(self.env["SLURM_CONF"], "w") as f:
            f.write(CONF.format(host=self.host, dir=d, ctld_port=ctld_port, slurmd_port=slurmd_port))
        self.start("slurmctld", [self.bins["slurmctld"], "-D", "-c", "-f", self.env["SLURM_CONF"]])
        self.start("slurmd", [self.bins["slurmd"], "-D", "-f", self.env["SLURM_CONF"], "-N", self.host])

        def idle():
            p = subprocess.run([self.bins["sinfo"], "-h", "-n", self.host, "-o", "%t"], capture_output=True,
                               env=self.env)
            return p.returncode == 0 and p.stdout.strip() == b"idle"
        return self.wait_for("node idle", idle, 30)

    def down(self):
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for _, p in reversed(self.procs):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        # What the daemons started (slurmstepd, tasks) carries the mark.
        mark = ("%s=%s" % (MARK, self.dir)).encode()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    if mark in f.read().split(b"\0"):
                        os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass
        cleanup(self.dir)


def run_srun(srun, cluster, out, work):
    """srun -n 4 of rank_io under the agent, then the launcher checks."""
    cmd = [srun, "-n", "4", "--time=1"] + rank_io_cmd(work, *VARS)
    env = traced_env(out, SLURM_CONF=cluster.env["SLURM_CONF"])
    env[MARK] = cluster.dir
    for k in list(env):
        if k.startswith("SLURM_") and k != "SLURM_CONF":
            del env[k]
    res, pid = launch(cmd, env, work)
    check_launch("srun", res, out, work, VARS[0], VARS[1], VARS[2],
                 lambda row: "%s.%s" % (row["SLURM_JOB_ID"], row["SLURM_STEP_ID"]),
                 lambda meta: meta["pid"] == pid, "slurmstepd")
    none = dict(env)
    del none["LD_PRELOAD"]
    check_no_delay("srun", cmd, env, none, work)


BATCH = """#!/bin/sh
echo "${{SLURM_PROCID-none}} ${{SLURM_STEP_ID-none}}" > {work}/batch-env
LD_PRELOAD={agent} exec {launcher}
"""


def run_batch(name, bins, cluster, out, work, launcher, rank_vars, job_of, parent):
    """sbatch --wait of a script that starts launcher (argv) with the agent
    in front of it; the agent is not in the batch script's own environment."""
    script = os.path.join(work, "job.sh")
    with open(script, "w") as f:
        f.write(BATCH.format(work=work, agent=AGENT, launcher=" ".join(launcher)))
    os.chmod(script, 0o755)
    env = traced_env(out, SLURM_CONF=cluster.env["SLURM_CONF"])
    del env["LD_PRELOAD"]
    env[MARK] = cluster.dir
    for k in list(env):
        if k.startswith("SLURM_") and k != "SLURM_CONF":
            del env[k]
    so, se = os.path.join(work, "job.out"), os.path.join(work, "job.err")
    p = run([bins["sbatch"], "--wait", "-n", "4", "--time=1", "-o", so, "-e", se, script], env=env, cwd=work,
            timeout=60)
    outs = []
    for path in (so, se):
        with open(path, "rb") if os.path.exists(path) else open(os.devnull, "rb") as f:
            outs.append(f.read())
    if os.path.exists(os.path.join(work, "batch-env")):
        with open(os.path.join(work, "batch-env")) as f:
            benv = f.read().split()
    else:
        benv = []
    check(name + ": the batch script has SLURM_PROCID 0 and no step", benv == ["0", "none"], str(benv))
    res = subprocess.CompletedProcess(launcher, p.returncode, outs[0], outs[1] + p.stderr)
    tool = os.path.basename(launcher[0])
    check_launch(name, res, out, work, rank_vars[0], rank_vars[1], rank_vars[2], job_of,
                 lambda meta: os.path.basename(meta["argv"][0]) == tool, parent)


def run_nested(bins, cluster):
    """The launchers inside launchers, each in folders of its own."""
    mpirun = shutil.which("mpirun")
    cases = [("srun in sbatch", lambda work: [bins["srun"], "-n", "4"] + rank_io_cmd(work, *VARS), VARS,
              lambda row: "%s.%s" % (row["SLURM_JOB_ID"], row["SLURM_STEP_ID"]), "slurmstepd")]
    if mpirun:
        ompi = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
                "OMPI_MCA_ess_base_jobid", "SLURM_PROCID")
        cases.append(("mpirun in sbatch", lambda work: [mpirun, "-np", "4", "--oversubscribe", "--bind-to", "none",
                                                        "--allow-run-as-root"] + rank_io_cmd(work, *ompi),
                      ompi, lambda row: row["OMPI_MCA_ess_base_jobid"], "mpirun"))
    else:
        skip("mpirun in sbatch", "no mpirun (Debian openmpi-bin; tools/scripts/deps.sh installs it)")
    for name, launcher, rank_vars, job_of, parent in cases:
        out, work = tempdir("trace-nested"), tempdir("nested")
        try:
            run_batch(name, bins, cluster, out, work, launcher(work), rank_vars, job_of, parent)
        finally:
            cleanup(out, work)

    # torchrun in an srun task: simlaunch is task 0 of the step, its workers are ranks 0..3.
    out, work = tempdir("trace-nested"), tempdir("nested")
    try:
        tv = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "SLURM_PROCID")
        cmd = [bins["srun"], "-n", "1", "--time=1", os.path.join(BUILD, "simlaunch"), "-n", "4", "--"] + \
            rank_io_cmd(work, *tv)
        env = traced_env(out, SLURM_CONF=cluster.env["SLURM_CONF"])
        env[MARK] = cluster.dir
        for k in list(env):
            if k.startswith(("SLURM_", "MASTER_")) and k != "SLURM_CONF":
                del env[k]
        res, pid = launch(cmd, env, work)
        check_launch("simlaunch in srun", res, out, work, tv[0], tv[1], tv[2], lambda row: row[tv[3]],
                     lambda meta: meta["pid"] == pid, "simlaunch")
    finally:
        cleanup(out, work)


def run_report_srun(bins, cluster):
    """ringside report as an MPI program under srun --mpi=pmix: the report
    one process writes; plain srun (MpiDefault=none: MPI does not join the
    tasks) is refused with a line that says what to give."""
    d = tempdir("slurm-report")
    env = dict(cluster.env)
    for k in list(env):
        if k.startswith(("SLURM_", "OMPI_", "PMIX_")) and k != "SLURM_CONF":
            del env[k]
    try:
        traces, one, many = (os.path.join(d, x) for x in ("t", "one", "many"))
        p = run([os.path.join(BUILD, "gen_job"), "-n", "4", "-e", "20000", "-o", traces])
        p = run([RINGSIDE, "report", traces, "-o", one, "-q"])
        if not check("report: one process", p.returncode == 0, p.stderr.decode()[-300:]):
            return
        p = run([bins["srun"], "--mpi=pmix", "-n", "2", "--time=1", RINGSIDE, "report", traces, "-o", many, "-q"],
                env=env, timeout=120)
        if check("srun --mpi=pmix -n 2 ringside report", p.returncode == 0, p.stderr.decode()[-600:]):
            report_problems("srun --mpi=pmix -n 2 writes what one process writes", compare(one, many))
            key = reporter_key(many)
            check("srun --mpi=pmix -n 2: reporter key says 2 processes", key.get("mpi_processes") == 2, repr(key))
        bad = os.path.join(d, "bad")
        p = run([bins["srun"], "-n", "2", "--time=1", RINGSIDE, "report", traces, "-o", bad, "-q"], env=env,
                timeout=120)
        err = p.stderr.decode()
        check("srun -n 2 without --mpi: refused, naming --mpi=pmix", p.returncode != 0 and "--mpi=pmix" in err and
              not os.path.exists(bad), "%d %s" % (p.returncode, err[-500:]))
    finally:
        cleanup(d)


def main():
    names = ("munged", "munge", "slurmctld", "slurmd", "srun", "sinfo", "sbatch")
    bins = {n: find(n) for n in names}
    missing = [n for n in names if not bins[n]]
    if missing:
        skip("slurm", "not installed: %s (Debian munge, slurmctld, slurmd, slurm-client; tools/scripts/deps.sh installs "
             "them)" % " ".join(missing))
        finish()
    if os.geteuid() != 0:
        skip("slurm", "needs root: slurmd runs the tasks as their user and this test runs it as root")
        finish()

    def stop(sig, frame):
        raise SystemExit(1)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    cluster = Cluster(bins)
    out, work = tempdir("trace-slurm"), tempdir("slurm-work")
    try:
        why = cluster.up()
        if check("slurm: munged, slurmctld and slurmd up", why is None, why or ""):
            run_srun(bins["srun"], cluster, out, work)
            run_nested(bins, cluster)
            run_report_srun(bins, cluster)
    finally:
        cluster.down()
        cleanup(out, work)
    finish()


main()
