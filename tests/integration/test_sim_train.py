#!/usr/bin/env python3
"""simlaunch and simtrain: the torchrun-style environment, the worst exit status
(signals as 128+n), SIGTERM forwarding; simtrain's checkpoint files, data reads,
kernel names and option errors, checked against files on disk and the truth file."""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

BUILD = os.environ.get("BUILD", "build")
LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
failed = 0


def check(name, ok, why=""):
    global failed
    if ok:
        print("ok " + name)
    else:
        failed += 1
        print("not ok %s: %s" % (name, why))


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


env = dict(os.environ, SIMNCCL_TIMEOUT_S="20")
for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "SIMGPU_TRUTH"):
    env.pop(v, None)

p = run([LAUNCH, "-n", "3", "--", "sh", "-c",
         'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $MASTER_ADDR $MASTER_PORT $TORCHELASTIC_RUN_ID"'],
        env=env)
rows = sorted(line.split() for line in p.stdout.splitlines())
check("launch_environment", p.returncode == 0 and [r[:4] for r in rows] == [[str(i), str(i), "3", "3"] for i in range(3)]
      and len({tuple(r[4:]) for r in rows}) == 1 and len(rows[0]) == 7, "rows %r" % rows)
p = run([LAUNCH, "-n", "3", "--", "sh", "-c", "exit $RANK"], env=env)
check("launch_worst_exit_status", p.returncode == 2, "status %d" % p.returncode)
p = run([LAUNCH, "-n", "2", "--", "sh", "-c", 'if [ "$RANK" = 1 ]; then kill -KILL $$; fi'], env=env)
check("launch_signal_status", p.returncode == 128 + 9, "status %d" % p.returncode)
p = run([LAUNCH, "-n", "2"], env=env)
check("launch_usage_error", p.returncode == 2 and "usage" in p.stderr, "status %d: %s" % (p.returncode, p.stderr))
q = subprocess.Popen([LAUNCH, "-n", "2", "--", "sleep", "30"], env=env)
time.sleep(0.3)
t0 = time.monotonic()
q.send_signal(signal.SIGTERM)
try:
    rc = q.wait(timeout=10)
except subprocess.TimeoutExpired:
    q.kill()
    rc = None
check("launch_forwards_sigterm", rc == 128 + 15 and time.monotonic() - t0 < 5, "status %r" % rc)

tmp = tempfile.mkdtemp(prefix="test_sim_train.")
ckpt = os.path.join(tmp, "ckpt")
tenv = dict(env, SIMGPU_TRUTH=os.path.join(tmp, "truth-%p.jsonl"))
p = run([LAUNCH, "-n", "2", "--", TRAIN, "--steps", "4", "--layers", "3", "--fwd-us", "100", "--bwd-us", "200",
         "--bucket-mb", "0.5", "--overlap", "--data-us", "300", "--ckpt-every", "2", "--ckpt-mb", "1.5",
         "--ckpt-dir", ckpt, "--seed", "7"], env=tenv)
check("simtrain_runs", p.returncode == 0 and p.stdout.count("4 steps") == 2, "status %d: %s" % (p.returncode, p.stderr))
files = sorted(os.path.basename(f) for f in glob.glob(os.path.join(ckpt, "*")))
want = ["ckpt-rank%d-step%d.bin" % (r, s) for r in (0, 1) for s in (2, 4)]
check("checkpoint_files", files == want, "files %r" % files)
sizes = [os.path.getsize(os.path.join(ckpt, f)) for f in want if os.path.exists(os.path.join(ckpt, f))]
check("checkpoint_sizes", sizes == [int(1.5 * 1048576)] * 4, "sizes %r" % sizes)
lines = []
for path in glob.glob(os.path.join(tmp, "truth-*.jsonl")):
    with open(path) as f:
        lines += [json.loads(line) for line in f]
# simtrain's own account of its steps: one line per rank and step, each
# step (from its data loading to its checkpoint's end) holding its kernels
steps = [t for t in lines if t["kind"] == "step"]
lines = [t for t in lines if t["kind"] != "step"]
check("step_truth_lines", sorted((t["rank"], t["index"], t["phase"]) for t in steps) ==
      [(r, i, "train") for r in (0, 1) for i in range(4)] and
      all(t["start_ns"] <= k["start_ns"] and k["end_ns"] <= t["end_ns"]
          for t in steps for k in lines if k["kind"] == "kernel" and k["name"] == "fwd_gemm_l1" and
          k["rank"] == t["rank"] and t["start_ns"] <= k["launch_ns"] <= t["end_ns"]) and
      sum(1 for t in steps for k in lines if k["kind"] == "kernel" and k["name"] == "fwd_gemm_l1" and
          k["rank"] == t["rank"] and t["start_ns"] <= k["start_ns"] and k["end_ns"] <= t["end_ns"]) == 8,
      "step lines %r" % steps)
names = {t["name"] for t in lines if t["kind"] == "kernel"}
check("kernel_names", {"fwd_gemm_l0", "fwd_gemm_l2", "bwd_gemm_l1", "optimizer_step"} <= names, "names %r" % names)
fwd = [t for t in lines if t["name"] == "fwd_gemm_l1"]
check("kernel_durations", len(fwd) == 8 and all(t["end_ns"] - t["start_ns"] == 100000 for t in fwd),
      "fwd_gemm_l1: %r" % [t["end_ns"] - t["start_ns"] for t in fwd])
dtoh = [t for t in lines if t["kind"] == "memcpy" and t["direction"] == "DtoH"]
check("checkpoint_copies", len(dtoh) == 4 and all(t["bytes"] == int(1.5 * 1048576) for t in dtoh), "%r" % dtoh)
htod = [t for t in lines if t["kind"] == "memcpy" and t["direction"] == "HtoD" and t["bytes"] == 256 * 1024]
check("data_batches_copied", len(htod) == 8, "%d batch copies" % len(htod))
colls = [t for t in lines if t["kind"] == "collective"]
check("overlap_comm_stream", len(colls) == 24 and all(
    t["stream"] != f["stream"] for t in colls for f in fwd if f["pid"] == t["pid"]),
    "%d collectives, streams %r" % (len(colls), {t["stream"] for t in colls}))

# --no-overlap puts the AllReduces on the compute stream.
tenv["SIMGPU_TRUTH"] = os.path.join(tmp, "single-%p.jsonl")
p = run([TRAIN, "--steps", "2", "--layers", "2", "--no-overlap", "--bucket-mb", "1"], env=tenv)
lines = []
for path in glob.glob(os.path.join(tmp, "single-*.jsonl")):
    with open(path) as f:
        lines += [json.loads(line) for line in f]
streams = {t["stream"] for t in lines if t["kind"] in ("kernel", "collective")}
check("no_overlap_one_stream", p.returncode == 0 and len(streams) == 1 and
      sum(t["kind"] == "collective" for t in lines) == 4, "status %d, streams %r" % (p.returncode, streams))

for args, what in [(["--steps", "x"], "--steps"), (["--straggler", "1"], "RANK:FACTOR"),
                   (["--overlap", "--no-overlap"], "exclude"), (["--bogus"], "--bogus"),
                   (["--bucket-mb", "0"], "--bucket-mb")]:
    p = run([TRAIN] + args, env=env)
    check("bad_option_" + args[0].lstrip("-").replace("-", "_") + ("_" + args[1] if len(args) > 1 else ""),
          p.returncode == 2 and what in p.stderr, "status %d: %s" % (p.returncode, p.stderr.strip()))
p = run([TRAIN, "--help"], env=env)
opts = ["--steps", "--layers", "--fwd-us", "--bwd-us", "--bucket-mb", "--overlap", "--no-overlap", "--data-us",
        "--ckpt-every", "--ckpt-mb", "--ckpt-dir", "--straggler", "--bw-gbs", "--seed", "--eval-every",
        "--eval-steps", "--drift"]
check("help_lists_options", p.returncode == 0 and all(o in p.stdout for o in opts), p.stdout[:200])
sys.exit(1 if failed else 0)
