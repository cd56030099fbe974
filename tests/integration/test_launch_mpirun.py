#!/usr/bin/env python3
"""Open MPI (Debian openmpi-bin): `mpirun -np 4` with the agent in LD_PRELOAD
in front of it runs four ranks of rank_io; the trace folder holds four rank
files, ranks 0..3 from OMPI_COMM_WORLD_*, in the folder named by Open MPI's
job id, with the bytes the ranks wrote; mpirun runs unharmed and no slower
(see launchcheck.py). Twice: mpirun starting the ranks itself, as on one
node, and through Open MPI's daemon orted, started by an ssh stand-in as
on a remote node."""
import os
import shutil

from launchcheck import check_launch, check_no_delay, launch, rank_io_cmd
from rstest import cleanup, finish, skip, tempdir, traced_env

VARS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid")
# Drops ssh's options and the host name, and runs the command here.
FAKE_SSH = """#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
shift
exec sh -c "$*"
"""


def one(name, mpirun, extra, is_launcher, parent):
    out, work = tempdir("trace-mpirun"), tempdir("mpirun")
    try:
        cmd = [mpirun, "-np", "4", "--oversubscribe", "--bind-to", "none"] + extra(work)
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += rank_io_cmd(work, *VARS)
        env = traced_env(out)
        env.pop("OMPI_MCA_ess_base_jobid", None)
        res, pid = launch(cmd, env, work)
        check_launch(name, res, out, work, VARS[0], VARS[1], VARS[2], lambda row: row[VARS[3]],
                     lambda meta: is_launcher(meta, pid), parent)
        none = dict(env)
        del none["LD_PRELOAD"]
        check_no_delay(name, cmd, env, none, work)
    finally:
        cleanup(out, work)


def through_orted(work):
    ssh = os.path.join(work, "fake-ssh")
    with open(ssh, "w") as f:
        f.write(FAKE_SSH)
    os.chmod(ssh, 0o755)
    # An address, not a name: no DNS lookup, and not one of this host's.
    return ["--host", "127.0.0.2:4", "--mca", "plm_rsh_agent", ssh, "--mca", "oob_tcp_if_include", "lo"]


def main():
    mpirun = shutil.which("mpirun")
    if not mpirun:
        skip("mpirun", "no mpirun (Debian openmpi-bin; tools/scripts/deps.sh installs it)")
        finish()
    one("mpirun", mpirun, lambda work: [], lambda meta, pid: meta["pid"] == pid, "mpirun")
    # The ssh stand-in's shell reads its script; orted reads Open MPI's settings.
    one("mpirun via orted", mpirun, through_orted,
        lambda meta, pid: meta["pid"] == pid or os.path.basename(meta["argv"][0]) == "orted"
        or any(a.endswith("/fake-ssh") for a in meta["argv"][:2]), "orted")
    finish()


main()
