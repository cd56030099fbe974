#!/usr/bin/env python3
"""Open MPI (Debian openmpi-bin): `mpirun -np 4` with the agent in LD_PRELOAD
in front of it runs four ranks of rank_io; the trace folder holds four rank
files, ranks 0..3 from OMPI_COMM_WORLD_*, in the folder named by Open MPI's
job id, with the bytes the ranks wrote; mpirun runs unharmed and no slower
(see launchcheck.py)."""
import os
import shutil
import subprocess

from launchcheck import check_launch, check_no_delay, rank_io_cmd
from rstest import AGENT, cleanup, finish, skip, tempdir, traced_env

VARS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid")


def main():
    mpirun = shutil.which("mpirun")
    if not mpirun:
        skip("mpirun", "no mpirun (Debian openmpi-bin; tools/deps.sh installs it)")
        finish()
    out, work = tempdir("trace-mpirun"), tempdir("mpirun")
    try:
        cmd = [mpirun, "-np", "4", "--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += rank_io_cmd(work, *VARS)
        env = traced_env(out)
        env.pop("OMPI_MCA_ess_base_jobid", None)
        p = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            stdout, stderr = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        res = subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr)
        check_launch("mpirun", res, out, work, VARS[0], VARS[1], VARS[2], lambda row: row[VARS[3]],
                     p.pid, launcher_may_write=True)
        none = dict(env)
        del none["LD_PRELOAD"]
        check_no_delay("mpirun", cmd, env, none, work)
    finally:
        cleanup(out, work)
    finish()


main()
