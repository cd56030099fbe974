#!/usr/bin/env python3
"""GPU memory end to end: simulated jobs of 4 ranks under the agent, one rank
leaking --leak-mb a step on a device of SIMGPU_MEM_MB small enough to fill in
about 30 steps, and `ringside report` of their traces, held against the
simulator's truth file (simtrain's train_memory and oom lines, the stand-in
libcuda's device_memory lines, the steps' live bytes), which ringside did not
compute:

- the leaking rank, which dies of CUDA_ERROR_OUT_OF_MEMORY: the time per step
  that of the steps the ranks finished (not the others' wait for it); the first finding
  is out_of_memory naming that rank, the step the truth's oom line says, and
  the leaking function (sim_train_leak) as the stack holding the most at the
  peak; memory_grows names the rank and the function; report.json's peak is
  the truth's within 1%; the agent's alloc_failed record (ringside dump) has
  the bytes asked and the driver's free and total of the truth's oom line;
- the same job stopped at half the steps it ran: the predicted full-at step
  within 2 steps of the step the whole job died at;
- the same through the caching allocator (--cache): the retries that got
  past a full device counted and timed as the truth says, and told apart
  from the fatal one;
- a job without a leak: no memory finding, no leak, the bytes held after
  warm-up flat, and the driver's in-use figure less the program's bytes
  equal to what the stand-in NCCL holds (within 1%);
- the page: in headless Chromium, the memory chart of each rank shown with
  the device's memory as a line, no console errors; flame-mem.svg there;
- a Python program that allocates through ctypes in a function of its own:
  the stack holding the most at the peak is named up to that function, the
  innermost Python frame (not the native frames below it).

The leaking rank, its leak and the device's size differ from run to run
(seeded by the test's pid) within bounds that fill the device within 30
steps, as the issue asks (in 20 to 29)."""
import glob
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import headless  # noqa: E402
from rstest import BUILD, RINGSIDE, check, cleanup, finish, report_problems, run, skip, tempdir  # noqa: E402

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
AGENT = os.path.join(BUILD, "libagent.so")
MIB = 1 << 20
WORLD = 4


def job(work, name, args, leak_rank=None, leak_mb=0, mem_mb=81920):
    """simtrain on WORLD ranks, the agent in the ranks, rank leak_rank with
    --leak-mb; (exit status, report.json, report folder, truth lines, trace
    folder) or None when the report failed."""
    d = os.path.join(work, name)
    os.makedirs(d)
    e = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LD_PRELOAD", "RINGSIDE_JOB",
              "RINGSIDE_RANK_PID", "SIMGPU_MEM_GB", "SIMGPU_CTX_MB"):
        e.pop(k, None)
    e.update(LD_LIBRARY_PATH=SIM, SIMNCCL_TIMEOUT_S="20", RINGSIDE_OUT=os.path.join(d, "trace"), AGENT_SO=AGENT,
             SIMGPU_TRUTH=os.path.join(d, "truth.%p"), SIMGPU_TRUTH_MEMORY="1", SIMGPU_MEM_MB=str(mem_mb),
             LEAK_RANK=str(leak_rank if leak_rank is not None else -1), LEAK_MB=str(leak_mb))
    shell = 'export LD_PRELOAD="$AGENT_SO"; [ "$RANK" = "$LEAK_RANK" ] && set -- "$@" --leak-mb "$LEAK_MB"; exec "$@"'
    p = run([LAUNCH, "-n", str(WORLD), "--", "sh", "-c", shell, "sh", TRAIN] + args, env=e, timeout=120)
    out = os.path.join(d, "report")
    r = run([RINGSIDE, "report", os.path.join(d, "trace"), "-o", out])
    if not check(name + ": report succeeds", r.returncode == 0, r.stderr.decode(errors="replace")[-400:]):
        return None
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    truth = []
    for path in glob.glob(os.path.join(d, "truth.*")):
        with open(path) as f:
            truth += [json.loads(x) for x in f if x.strip()]
    return p.returncode, rep, out, truth, os.path.join(d, "trace")


def of_kind(truth, kind, rank=None):
    return [t for t in truth if t.get("kind") == kind and (rank is None or t.get("rank") == rank)]


def proc(rep, rank):
    for p in rep["processes"]:
        if p.get("rank") == rank:
            return p
    return None


def findings(rep, fid):
    return [f for f in rep.get("findings", []) if f["id"] == fid]


def within(a, b, rel):
    return b and abs(a - b) <= rel * abs(b)


def leak_checks(name, got, rank, cache):
    rc, rep, _, truth, trace = got
    check(name + ": the leaking rank ends the job (status 1)", rc == 1, "status %d" % rc)
    oom = of_kind(truth, "oom", rank)
    tm = of_kind(truth, "train_memory", rank)
    if not check(name + ": the truth has rank %d's out-of-memory" % rank, len(oom) == 1 and len(tm) == 1,
                 str(oom + tm)):
        return None
    oom, tm = oom[0], tm[0]
    f = rep.get("findings", [])
    first = f[0] if f else {}
    check(name + ": the first finding is out_of_memory, naming rank %d, step %d and sim_train_leak" % (rank, oom["step"]),
          first.get("id") == "out_of_memory" and ("rank %d at step %d:" % (rank, oom["step"])) in first.get("evidence", "")
          and "sim_train_leak" in first.get("evidence", "").split("holding the most at the peak:")[-1],
          json.dumps(first)[:600])
    jm = rep.get("memory", {})
    jo = jm.get("oom") or {}
    check(name + ": report.json memory.oom: rank, step and bytes asked as the truth's",
          jo.get("rank") == rank and jo.get("step") == oom["step"] and jo.get("asked_bytes") == oom["bytes"],
          "%s against %s" % (jo, oom))
    check(name + ": the driver's free and total at the failure as the truth's",
          jo.get("free_bytes") == oom["free_bytes"] and jo.get("total_bytes") == oom["total_bytes"],
          "%s against %s" % (jo, oom))
    grows = findings(rep, "memory_grows")
    check(name + ": memory_grows names rank %d and sim_train_leak" % rank,
          len(grows) == 1 and grows[0]["evidence"].startswith("rank %d:" % rank) and
          "sim_train_leak" in grows[0]["evidence"], json.dumps(grows)[:500])
    pm = (proc(rep, rank) or {}).get("memory", {})
    check(name + ": the peak within 1%% of the truth's (%d bytes)" % tm["peak_bytes"],
          within(pm.get("peak_bytes", 0), tm["peak_bytes"], 0.01), str(pm.get("peak_bytes")))
    check(name + ": the peak's step as the truth's (%s)" % tm["peak_index"], pm.get("peak_step") == tm["peak_index"],
          str(pm.get("peak_step")))
    check(name + ": the leak, bytes a step within 5%% of the truth's %d" % tm["leak_bytes_per_step"],
          within(pm.get("growth", {}).get("bytes_per_step", 0), tm["leak_bytes_per_step"], 0.05),
          str(pm.get("growth")))
    # the step time: the steps the ranks finished, not the others' wait for the dead one
    steps = sorted((t for t in truth if t.get("kind") == "step" and t.get("rank") == rank), key=lambda t: t["index"])
    want = (steps[-1]["end_ns"] - steps[0]["start_ns"]) / 1e6 / len(steps) if steps else 0
    longest = max((t["end_ns"] - t["start_ns"]) / 1e6 for t in steps) if steps else 0
    st = rep.get("steps") or {}
    check(name + ": the time per step within 15%% of the truth's %.3f ms, the longest step under 1.5x the truth's "
          "%.3f ms (the others' wait after the failure left out)" % (want, longest),
          within(st.get("per_step_ms", 0), want, 0.15) and st.get("max_ms", 1e9) <= 1.5 * longest,
          "%.3f ms, longest %.3f ms" % (st.get("per_step_ms", 0), st.get("max_ms", 0)))
    # the agent's own record of the failure
    files = [x for x in glob.glob(os.path.join(trace, "**", "*.trace.lz4"), recursive=True)
             if os.path.basename(x).startswith("rank-%d." % rank)]
    failed = []
    if files:
        d = run([RINGSIDE, "dump", files[0]])
        failed = [json.loads(x) for x in d.stdout.decode(errors="replace").splitlines()
                  if '"kind":"alloc_failed"' in x]
    last = failed[-1] if failed else {}
    check(name + ": the agent's alloc_failed record: the bytes asked, CUDA_ERROR_OUT_OF_MEMORY, a stack",
          last.get("bytes") == oom["bytes"] and last.get("result") == 2 and last.get("stack", 0) > 0,
          json.dumps(last))
    if cache:
        fails = pm.get("failures", [])
        retried = [x for x in fails if x.get("retried")]
        check(name + ": the retries counted as the truth's (%d)" % tm["cache_retries"],
              pm.get("retries", {}).get("count") == tm["cache_retries"] == len(retried) and tm["cache_retries"] > 0,
              "%s, failures %s" % (pm.get("retries"), fails))
        ms = pm.get("retries", {}).get("ms", 0)
        check(name + ": the retries timed as the truth's (%.3f ms) within 25%% or 0.05 ms" % (tm["cache_retry_ns"] / 1e6),
              abs(ms - tm["cache_retry_ns"] / 1e6) <= max(0.25 * tm["cache_retry_ns"] / 1e6, 0.05), str(ms))
        check(name + ": the fatal failure told apart: the last one, not retried, after the retries",
              fails and not fails[-1].get("retried") and pm.get("oom", {}).get("failure") == len(fails) - 1 and
              pm.get("oom", {}).get("retries_before") == tm["cache_retries"], json.dumps(fails)[:500])
    return oom


def flat_checks(name, got):
    rc, rep, out, truth, _ = got
    check(name + ": the job ends well", rc == 0, "status %d" % rc)
    ids = {f["id"] for f in rep.get("findings", [])}
    check(name + ": no memory finding", not ids & {"out_of_memory", "memory_grows", "allocator_retries"}, str(ids))
    devs = {t["rank"]: t for t in truth if t.get("kind") == "device_memory"}
    for r in range(WORLD):
        pm = (proc(rep, r) or {}).get("memory", {})
        g = pm.get("growth", {})
        check("%s: rank %d: no leak" % (name, r), g.get("leak") is False, str(g))
        steps = pm.get("per_step", {}).get("peak_bytes", [])
        tail = steps[len(steps) // 10 + 1:-1]
        check("%s: rank %d: bytes held flat after warm-up" % (name, r),
              tail and max(tail) - min(tail) <= 0.01 * max(tail), str(steps))
        want = devs.get(r, {}).get("nccl_bytes")
        check("%s: rank %d: in use beyond the program's bytes = the stand-in NCCL's (%s) within 1%%" % (name, r, want),
              want and within(pm.get("other_bytes") or 0, want, 0.01), str(pm.get("other_bytes")))


def page_checks(name, out):
    check(name + ": flame-mem.svg written", os.path.exists(os.path.join(out, "flame-mem.svg")), out)
    if not headless.find_chromium():
        skip(name + ": the page in headless Chromium", "no chromium (Debian package chromium)")
        return
    with headless.Browser() as b:
        b.open(os.path.join(out, "index.html"))
        report_problems(name + ": the page: no console errors, exceptions, dialogs or requests", b.problems())
        got = b.eval("(function(){var s=document.getElementById('memory');if(!s)return 'no section';"
                     "var c=s.querySelectorAll('svg');var cap=s.querySelectorAll('line[stroke-dasharray] title');"
                     "var n=0;cap.forEach(function(t){if(/device's memory/.test(t.textContent))n++;});"
                     "var r=s.getBoundingClientRect();return c.length+' charts, '+n+' capacity lines, '+"
                     "(r.height>100?'shown':'not shown');})()")
        check(name + ": the page's memory section: a chart per rank, each with the capacity line, shown",
              got == "%d charts, %d capacity lines, shown" % (WORLD, WORLD), str(got))


PY_LEAK = r"""
import ctypes, sys
cu = ctypes.CDLL("libcuda.so.1")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
for r in (cu.cuInit(0), cu.cuDeviceGet(ctypes.byref(dev), 0), cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
          cu.cuCtxSetCurrent(ctx)):
    if r:
        raise SystemExit("driver call failed: %d" % r)
keep = []


def keep_block(n):
    p = ctypes.c_uint64()
    if cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)):
        raise MemoryError
    keep.append(p.value)


def train(steps):
    for _ in range(steps):
        keep_block(32 << 20)


train(int(sys.argv[1]))
"""


def python_checks(work):
    d = os.path.join(work, "python")
    os.makedirs(d)
    prog = os.path.join(d, "leak.py")
    with open(prog, "w") as f:
        f.write(PY_LEAK)
    e = dict(os.environ, LD_LIBRARY_PATH=SIM, LD_PRELOAD=AGENT, RINGSIDE_OUT=os.path.join(d, "trace"))
    p = run([sys.executable, prog, "12"], env=e)
    if not check("python: the program runs under the agent", p.returncode == 0, p.stderr.decode(errors="replace")):
        return
    r = run([RINGSIDE, "report", os.path.join(d, "trace"), "-o", os.path.join(d, "report")])
    if not check("python: report succeeds", r.returncode == 0, r.stderr.decode(errors="replace")[-300:]):
        return
    with open(os.path.join(d, "report", "report.json")) as f:
        rep = json.load(f)
    stacks = [x for p in rep["processes"] for x in p.get("memory", {}).get("peak_stacks", [])]
    top = stacks[0]["frames"] if stacks else ""
    check("python: the stack holding the most at the peak ends at keep_block, the innermost Python frame",
          top.endswith("leak.py:keep_block") and "leak.py:train" in top and stacks[0]["bytes"] == 12 * 32 * MIB,
          json.dumps(stacks))


def main():
    rnd = random.Random(os.getpid())
    rank = rnd.randrange(WORLD)
    leak_mb = rnd.choice((48, 64, 80))
    # NCCL's 192 MiB, the program's 100 MiB; the rest fills within 30 steps (20 to 29)
    mem_mb = 192 + 100 + leak_mb * rnd.randint(20, 29) + leak_mb // 2
    common = ["--steps", "60"]
    work = tempdir("memory")
    try:
        got = job(work, "leak", common, rank, leak_mb, mem_mb)
        oom = leak_checks("leak", got, rank, False) if got else None
        if got:
            page_checks("leak", got[2])
        if oom:
            # the first half of the steps it ran: no failure yet; the prediction
            half = job(work, "half", ["--steps", str(max(6, oom["step"] // 2))], rank, leak_mb, mem_mb)
            if half:
                pm = (proc(half[1], rank) or {}).get("memory", {})
                full = pm.get("growth", {}).get("full_at_step")
                check("half: the device full at step %s predicted from %d steps, within 2 of %d" %
                      (full, max(6, oom["step"] // 2), oom["step"]),
                      full is not None and abs(full - oom["step"]) <= 2, str(pm.get("growth")))
        got = job(work, "cache", common + ["--cache"], rank, leak_mb, mem_mb)
        if got:
            leak_checks("cache", got, rank, True)
        got = job(work, "flat", ["--steps", "30"], None, 0, mem_mb)
        if got:
            flat_checks("flat", got)
        python_checks(work)
    finally:
        cleanup(work)
    finish()


if __name__ == "__main__":
    main()
