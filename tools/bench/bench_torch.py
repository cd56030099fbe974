#!/usr/bin/env python3
"""The PyTorch part of `make bench`: ringside's agent against the PyTorch
profiler on the same real training loop. A 3-layer MLP trained on the CPU
(one thread, fixed seed) for STEPS steps runs three ways in alternating
order, ROUNDS times each: with no tool; under LD_PRELOAD=BUILD/libagent.so
with its defaults; inside torch.profiler.profile(activities=[CPU],
record_shapes=True, with_stack=True), its trace exported with
export_chrome_trace at the end, as a user would. Prints a Markdown table of
the medians (the loop's wall and CPU time, from the program's own clocks;
the whole process's wall and CPU time, from outside), their ratios to no
tool, and the bytes each tool writes per step (the agent's trace files, the
profiler's exported trace). The three runs must end with the same loss.
Usage: tools/bench/bench_torch.py [BUILD]
       (env: ROUNDS, default 3; STEPS, default 2000; PYTHON, the interpreter
       with torch, default /usr/bin/python3 and Debian's python3-torch)
The driver needs only the standard library; `--loop MODE STEPS [TRACE]` is
the training program itself."""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MODES = ("none", "agent", "profiler")
LABELS = {"none": "no tool", "agent": "ringside agent (defaults)",
          "profiler": "PyTorch profiler (CPU, shapes, stacks, Chrome trace)"}
TARGET = 1.02


def loop(mode, steps, trace):
    """The training program: prints the loop's wall and CPU seconds and the
    last loss."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [(torch.randn(32, 64), torch.randint(0, 10, (32,))) for _ in range(16)]

    def train():
        for step in range(steps):
            x, y = batches[step % len(batches)]
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return loss.item()

    if mode == "profiler":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
            wall, cpu = time.perf_counter(), time.thread_time()
            loss = train()
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        prof.export_chrome_trace(trace)
    else:
        wall, cpu = time.perf_counter(), time.thread_time()
        loss = train()
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    print("loop_s=%.6f loop_cpu_s=%.6f loss=%.6f" % (wall, cpu, loss))


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(python, agent, mode, steps, work):
    """One run of the program MODE's way: a dict of its figures."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RINGSIDE_") and k != "LD_PRELOAD"}
    out = os.path.join(work, mode)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    trace = os.path.join(out, "trace.json")
    if mode == "agent":
        env.update(LD_PRELOAD=agent, RINGSIDE_OUT=out)
    cmd = [python, os.path.abspath(__file__), "--loop", mode, str(steps), trace]
    cpu, wall = children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    if p.returncode != 0:
        sys.exit("bench_torch.py: the %s run failed (status %d): %s"
                 % (mode, p.returncode, p.stderr.decode(errors="replace").strip()[-500:]))
    got = dict(kv.split("=") for kv in p.stdout.decode().split())
    written = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs)
    return {"loop": float(got["loop_s"]), "loop_cpu": float(got["loop_cpu_s"]), "loss": got["loss"],
            "wall": wall, "cpu": cpu, "bytes": written}


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds, steps = int(os.environ.get("ROUNDS", "3")), int(os.environ.get("STEPS", "2000"))
    python = os.environ.get("PYTHON", "/usr/bin/python3")
    agent = os.path.abspath(os.path.join(build, "libagent.so"))
    if not os.path.isfile(agent):
        sys.exit("bench_torch.py: %s is missing (make %s)" % (agent, agent))
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        sys.exit("bench_torch.py: %s cannot import torch (Debian: python3-torch; make deps)" % python)
    work = tempfile.mkdtemp(prefix="ringside-bench-torch.", dir=os.environ.get("TMPDIR", "/tmp"))
    runs = {m: [] for m in MODES}
    try:
        for i in range(rounds):
            order = MODES if i % 2 == 0 else tuple(reversed(MODES))
            for m in order:
                runs[m].append(run_once(python, agent, m, steps, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    losses = {r["loss"] for m in MODES for r in runs[m]}
    if len(losses) != 1:
        sys.exit("bench_torch.py: the runs end with different losses: %s" % sorted(losses))

    med = {m: {k: statistics.median(r[k] for r in runs[m]) for k in ("loop", "loop_cpu", "wall", "cpu", "bytes")}
           for m in MODES}
    base = med["none"]
    print()
    print("PyTorch training loop (a 3-layer MLP, %d steps, CPU, one thread; torch %s under %s): no"
          % (steps, torch_version(python), python))
    print("tool, ringside's agent with its defaults, and the PyTorch profiler, in alternating order;")
    print("medians of %d rounds. Loop: the training steps alone (the program's own clocks; CPU of the"
          % rounds)
    print("training thread); process: start to exit, measured from outside (CPU: the process's user +")
    print("system time), which includes the profiler's processing and export after the loop.")
    print()
    print("| case | loop wall | ratio | loop CPU | ratio | process wall | ratio | process CPU | ratio "
          "| bytes per step | target (loop wall) | met |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for m in MODES:
        f = med[m]
        target = "<= %.2fx" % TARGET if m == "agent" else "-"
        met = ("yes" if f["loop"] / base["loop"] <= TARGET else "no") if m == "agent" else "-"
        print("| %s | %.3f s | %.3fx | %.3f s | %.3fx | %.2f s | %.2fx | %.2f s | %.2fx | %s | %s | %s |"
              % (LABELS[m], f["loop"], f["loop"] / base["loop"], f["loop_cpu"], f["loop_cpu"] / base["loop_cpu"],
                 f["wall"], f["wall"] / base["wall"], f["cpu"], f["cpu"] / base["cpu"],
                 "-" if m == "none" else "%.0f B" % (f["bytes"] / steps), target, met))
    print()
    for m in ("agent", "profiler"):
        own = sorted(a["loop"] / b["loop"] for a, b in zip(runs[m], runs["none"]))
        print("%s, loop wall: the rounds' own ratios %s" % (LABELS[m], " ".join("%.3fx" % r for r in own)))


def torch_version(python):
    p = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True)
    return p.stdout.decode().strip() or "?"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--loop":
        loop(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
