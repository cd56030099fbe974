"""A simulated job for the tests: simtrain on N ranks under simlaunch, the
agent in the ranks alone (not the launcher), then `ringside report` of its
traces; with the simulator's truth file when asked."""
import glob
import json
import os

from rstest import BUILD, RINGSIDE, check, cleanup, run, tempdir

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")


def sim_job(name, world, args, truth=False, timeout=300, nodes=0):
    """Runs it (as `nodes` nodes, each its host name, when given); checks
    "NAME: simtrain runs" and "NAME: report succeeds".
    Returns (report.json, the summary's text, the page, the truth's lines
    or []) or None."""
    d = tempdir("simjob-" + name.replace(" ", "-"))
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LD_PRELOAD", "RINGSIDE_JOB",
              "RINGSIDE_RANK_PID"):
        env.pop(k, None)
    env.update(LD_LIBRARY_PATH=SIM, SIMNCCL_TIMEOUT_S="60", RINGSIDE_OUT=os.path.join(d, "trace"),
               AGENT_SO=os.path.join(BUILD, "libagent.so"))
    if truth:
        env["SIMGPU_TRUTH"] = os.path.join(d, "truth.%p")
    cmd = [LAUNCH, "-n", str(world)] + (["--nodes", str(nodes)] if nodes else []) + ["--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh",
           TRAIN] + args
    p = run(cmd, env=env, timeout=timeout)
    out = None
    if check(name + ": simtrain runs", p.returncode == 0, p.stderr.decode(errors="replace")[-400:]):
        r = run([RINGSIDE, "report", os.path.join(d, "trace"), "-o", os.path.join(d, "report")])
        if check(name + ": report succeeds", r.returncode == 0, r.stderr.decode(errors="replace")[-400:]):
            with open(os.path.join(d, "report", "report.json")) as f:
                rep = json.load(f)
            with open(os.path.join(d, "report", "index.html")) as f:
                page = f.read()
            lines = []
            for path in glob.glob(os.path.join(d, "truth.*")):
                with open(path) as f:
                    lines += [json.loads(x) for x in f if x.strip()]
            out = rep, r.stdout.decode(errors="replace"), page, lines
    cleanup(d)
    return out
