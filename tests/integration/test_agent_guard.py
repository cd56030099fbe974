#!/usr/bin/env python3
"""Every record is written under the agent's re-entrancy guard.

A CPU sample's signal handler writes its record into the thread's buffer
when it finds rs_th.guard clear; a hook that reserves a record without the
guard can be cut short there, and the sample's record lands inside its own:
the block then holds a broken record (make soak: simtrain's writer found a
record of size 0 after 10 minutes at 99 Hz, its NCCL records being written
without the guard). The checking build of the agent (build/check, made with
RS_RING_CHECK) aborts with the record's kind and where it was reserved from
whenever a record is reserved without the guard: deterministic, where the
race itself needs minutes.

Workloads that write every kind of record the stand-ins can make, each under
the checking agent: the program's exit status as without the agent, no
"ringside check:" line, and the trace holds the record kinds the workload
exists for (so that the check ran on them)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture  # noqa: E402
import rstest  # noqa: E402
from rstest import BUILD, PROG, check, finish, run, skip, tempdir  # noqa: E402

CHECK_AGENT = os.path.join(BUILD, "check", "libagent.so")
LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")


def kinds_of(out):
    """{record type: count} over every trace file under out."""
    seen = {}
    for root, _, files in os.walk(out):
        for name in files:
            if not name.endswith(".trace.lz4"):
                continue
            recs, _, _ = rstest.dump(os.path.join(root, name))
            for r in recs:
                seen[r.get("type")] = seen.get(r.get("type"), 0) + 1
    return seen


def case(work, name, argv, want, **env_extra):
    out, tdir = os.path.join(work, name, "out"), os.path.join(work, name, "truth")
    os.makedirs(out)
    os.makedirs(tdir)
    env = capture.sim_env(out, tdir, RINGSIDE_SAMPLE_HZ=999, **env_extra)
    env["LD_PRELOAD"] = CHECK_AGENT
    p = run(argv, env=env, cwd=os.path.join(work, name), timeout=240)
    err = p.stderr.decode(errors="replace")
    said = [l for l in err.splitlines() if "ringside check:" in l]
    check("%s: exits 0 under the checking agent, no record reserved without the guard" % name,
          p.returncode == 0 and not said, "status %d: %s" % (p.returncode, (said or [err[-400:]])[0]))
    seen = kinds_of(out)
    missing = [k for k in want if not seen.get(k)]
    check("%s: its trace holds %s" % (name, ", ".join(want)), not missing,
          "missing %s; seen %s" % (missing, sorted(k for k in seen if k)))


def main():
    if not os.path.exists(CHECK_AGENT):
        check("the checking agent %s is built (make test-build)" % CHECK_AGENT, False)
        finish()
    if not os.path.exists(os.path.join(capture.SIM, "libnccl.so.2")):
        skip("guard", "build/sim is not built")
        finish()
    work = tempdir("agent-guard")
    ckpt = ["--ckpt-every", "2", "--ckpt-mb", "1", "--ckpt-dir", "."]
    # CUDA launches, syncs, memory, devices and functions; NCCL
    # communicators and collectives; file opens, writes and fsyncs; CPU,
    # wait and GPU samples; the node sampler's series
    case(work, "simtrain", [LAUNCH, "-n", "2", "--", TRAIN, "--steps", "8", "--data-us", "200"] + ckpt,
         ["gpu", "sync", "mem", "coll", "comm", "io", "file", "sample", "series", "point"])
    # graph capture with NCCL inside: graph nodes and edges
    case(work, "graph-nccl", [LAUNCH, "-n", "2", "--", TRAIN, "--steps", "6", "--graph-nccl"],
         ["graph_node", "graph_edge", "coll"])
    # grouped and non-blocking NCCL calls settled later (held records)
    case(work, "nccl-groups", [LAUNCH, "-n", "2", "--", os.path.join(PROG, "nccl_groups"),
                               os.path.join(work, "groups.id"), "2", "5"], ["coll", "comm"])
    case(work, "nccl-nonblocking", [LAUNCH, "-n", "2", "--", os.path.join(PROG, "nccl_ops"),
                                    os.path.join(work, "ops.id")], ["coll", "comm"])
    # NVTX ranges
    case(work, "nvtx", [os.path.join(PROG, "nvtx_ranges"), os.path.join(work, "nvtx.json")], ["range"])
    finish()


if __name__ == "__main__":
    main()
