#!/usr/bin/env python3
"""torch.compile (Inductor, CPU; PyTorch 2.x in its chroot) under the agent,
reported from outside: tests/modern/torch2_job.py --compile as one env://
rank, no training checkpoints.

- the compiled model's first result equals the eager one exactly, and the
  job exits 0 (the workload compares them itself);
- the compile's processes: every process the report marks a compile worker
  or compiler run is a child of rank 0 (role child, parent_rank 0, from the
  launch) and works for the rank's process (for_pid: the pid the workload
  printed); there is at least one (Inductor's C++ kernels are built by the
  compiler); report.json "compile" counts them; none of their writes (code,
  a precompiled header) is a checkpoint (the job saves none);
- compilation time (waits on Python 3.14 frames, which the agent reads
  from _Py_DebugOffsets): the rank's processes[].compile.time_s (Dynamo and Inductor) is
  within 25% (and 0.5 s) of what the workload timed, its first compiled
  call less a later one, and Inductor's part is not zero;
- the page says the same: its torch.compile card has report.json's time,
  its process table "compile worker of rank 0" / "compiler run of rank 0"
  for each of them."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch2env  # noqa: E402
import json  # noqa: E402
from rstest import RINGSIDE, check, cleanup, finish, report_problems, run  # noqa: E402


def main():
    chroot, work, job = torch2env.start("test_torch2_compile")
    try:
        out = os.path.join(work, "trace")
        ck = os.path.join(work, "ck")
        os.makedirs(ck)
        env = {"LD_PRELOAD": os.path.join(work, "libagent.so"), "RINGSIDE_OUT": out, "RINGSIDE_JOB": "compile",
               "RINGSIDE_SAMPLE_HZ": "199", "TORCHINDUCTOR_CACHE_DIR": os.path.join(work, "inductor")}
        (rc, stdout, stderr), = torch2env.run_ranks(chroot, job, [ck, "--compile", "--save", "none", "--steps", "2"],
                                                    env, world=1)
        last = [o for o in torch2env.json_lines(stdout) if "compile" in o]
        if not check("job exits 0 and reports its compile", rc == 0 and last, "%s: %s" % (rc, stderr[-2000:])):
            finish()
        res = last[0]
        c = res["compile"]
        check("compiled result equals the eager one", c["equal"], "max difference %g" % c["max_diff"])
        pdir, js = os.path.join(work, "report"), os.path.join(work, "report.json")
        p = run([RINGSIDE, "report", out, "-o", pdir, "--json", js, "-q"])
        if not check("ringside report", p.returncode == 0, p.stderr.decode(errors="replace")[-2000:]):
            finish()
        with open(js) as f:
            rep = json.load(f)
        with open(os.path.join(pdir, "index.html")) as f:
            page = f.read()
        procs = rep["processes"]
        rank = [p for p in procs if p["rank"] == 0]
        check("one rank 0, the workload's process", [p["pid"] for p in rank] == [res["pid"]],
              str([(p["pid"], p["rank"]) for p in procs]))
        helpers = [p for p in procs if "kind" in p.get("compile", {})]
        check("compile processes found", helpers, "none of %d processes" % len(procs))
        problems = ["pid %d: role %s, parent_rank %s, for_pid %s" % (p["pid"], p["role"], p["parent_rank"],
                                                                     p["compile"]["for_pid"])
                    for p in helpers if p["role"] != "child" or p["parent_rank"] != 0 or
                    p["compile"]["for_pid"] not in (res["pid"], None)]
        report_problems("compile workers and compiler runs are rank 0's children", problems)
        owned = rank[0].get("compile", {}) if rank else {}
        mine = [p for p in helpers if p["compile"]["for_pid"] == res["pid"]]
        check("the rank's compile counts its compiler runs and workers",
              owned.get("compiler_runs") == sum(p["compile"]["kind"] == "compiler" for p in mine) and
              sorted(owned.get("workers", [])) == sorted(p["pid"] for p in mine if p["compile"]["kind"] == "worker"),
              "%s; %d compile processes for it" % (owned, len(mine)))
        job_c = rep.get("compile", {})
        check("report.json compile counts them all",
              job_c.get("compiler_runs", 0) + job_c.get("workers", 0) == len(helpers), "%s vs %d" % (job_c, len(helpers)))
        check("no checkpoint in a job that saves none", rep["checkpoints"] == [], str(rep["checkpoints"])[:300])
        truth = c["first_s"] - c["next_s"]
        got = owned.get("time_s", 0)
        check("compilation time within 25%% of the workload's (%.2f s)" % truth,
              abs(got - truth) <= 0.25 * truth + 0.5, "report %.2f s" % got)
        check("Inductor's part of it is not zero", owned.get("inductor_s", 0) > 0, str(owned))
        card = "%.2f s</div><div class=\"k\">torch.compile" % job_c.get("time_s", -1)
        check("the page's torch.compile card has report.json's time", card in page, "%r not in the page" % card)
        roles = ["compile worker of rank 0" if p["compile"]["kind"] == "worker" else "compiler run of rank 0"
                 for p in mine]
        check("the page's process table names each compile process's rank",
              all(page.count('"%s"' % r) >= roles.count(r) for r in set(roles)), str(sorted(set(roles))))
    finally:
        cleanup(work)
    finish()


if __name__ == "__main__":
    main()
