#!/usr/bin/env python3
"""build/simlaunch -n 4 (torchrun's variables) with the agent in LD_PRELOAD in
front of it runs four ranks of rank_io; the trace folder holds four rank
files, ranks 0..3 from RANK/LOCAL_RANK/WORLD_SIZE, in the folder named by
TORCHELASTIC_RUN_ID, with the bytes the ranks wrote; simlaunch, which
touches no file, leaves no trace and runs no slower (see launchcheck.py)."""
import os

from launchcheck import check_launch, check_no_delay, launch, rank_io_cmd
from rstest import BUILD, cleanup, finish, tempdir, traced_env

VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID")


def main():
    out, work = tempdir("trace-simlaunch"), tempdir("simlaunch")
    try:
        cmd = [os.path.join(BUILD, "simlaunch"), "-n", "4", "--"] + rank_io_cmd(work, *VARS)
        env = traced_env(out)
        env.pop("MASTER_PORT", None)
        res, pid = launch(cmd, env, work)
        check_launch("simlaunch", res, out, work, VARS[0], VARS[1], VARS[2], lambda row: row[VARS[3]],
                     None, "simlaunch")
        none = dict(env)
        del none["LD_PRELOAD"]
        check_no_delay("simlaunch", cmd, env, none, work)
    finally:
        cleanup(out, work)
    finish()


main()
