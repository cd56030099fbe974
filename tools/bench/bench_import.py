#!/usr/bin/env python3
"""The start part of `make bench` for real frameworks: what the agent adds to
`import torch` and what one CPU sample costs there, on both stacks the tests
use: Debian's host python3-torch (1.13, Python 3.11) and the chroot of
PyTorch 2.x on Python 3.14 (`make chroot`; its rows say so when it is not
there). For each: `python3 -c 'import torch'` ROUNDS times with the agent and
without, alternating, the medians of the wall time and their ratio; then the
sampler's handler on the PyTorch training loop of tools/bench/bench_torch.py
(RINGSIDE_LOG=2's line at exit: the median cost of a sample, of its native
unwinding and of its Python frames, from the handler's own clock).
Usage: tools/bench/bench_import.py [BUILD]   (env: ROUNDS, default 5; STEPS of the
loop, default 4000; CHROOT, default BUILD/chroot-sid)"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "modern"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

TARGET_IMPORT = 1.2
TARGET_SAMPLE_US = 20


def timed(argv, env):
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit("bench_import.py: %s failed: %s" % (" ".join(argv[-4:]), p.stderr.decode(errors="replace")[-500:]))
    return time.monotonic() - t0, p.stderr.decode(errors="replace")


def stack(name, command, rounds, steps):
    """Rows for one stack; command(argv, traced, what) gives (argv, env)."""
    times = {False: [], True: []}
    for i in range(rounds):
        for traced in ((False, True) if i % 2 == 0 else (True, False)):
            times[traced].append(timed(*command(["python3", "-c", "import torch"], traced, "import"))[0])
    plain, with_agent = statistics.median(times[False]), statistics.median(times[True])
    ratio = with_agent / plain
    _, err = timed(*command(["python3", "bench_torch.py", "--loop", "agent", str(steps), "/dev/null"], True, "loop"))
    m = re.search(r"sampler: (\d+) samples; handler median (\d+) ns.*native unwinding median (\d+) ns.*"
                  r"Python frames median (\d+) ns", err)
    row = "| %s | %.2f s | %.2f s | %.2fx | %s |" % (name, plain, with_agent, ratio,
                                                    "yes" if ratio <= TARGET_IMPORT else "no")
    if not m:
        return row, "| %s | - | - | - | - | no sampler line |" % name
    n, total, native, python = (int(x) for x in m.groups())
    return row, "| %s | %d | %.1f us | %.1f us | %.1f us | %s |" % (
        name, n, total / 1e3, native / 1e3, python / 1e3, "yes" if total <= TARGET_SAMPLE_US * 1000 else "no")


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    rounds = int(os.environ.get("ROUNDS", "5"))
    steps = int(os.environ.get("STEPS", "4000"))
    work = tempfile.mkdtemp(prefix="ringside-bench-import.")
    shutil.copy(os.path.join(build, "libagent.so"), os.path.join(work, "libagent.so"))
    shutil.copy(os.path.join(ROOT, "tools", "bench", "bench_torch.py"), os.path.join(work, "bench_torch.py"))
    agent = os.path.join(work, "libagent.so")
    rows, samples = [], []
    try:
        host_env = {k: v for k, v in os.environ.items() if not k.startswith("RINGSIDE_") and k != "LD_PRELOAD"}

        def host(argv, traced, what):
            env = dict(host_env)
            if traced:
                env.update(LD_PRELOAD=agent, RINGSIDE_OUT=os.path.join(work, "host-" + what), RINGSIDE_LOG="2")
            return ["/usr/bin/python3"] + [os.path.join(work, a) if a == "bench_torch.py" else a for a in argv[1:]], env

        r, s = stack("host: torch 1.13, Python 3.11", host, rounds, steps)
        rows.append(r)
        samples.append(s)

        import torch2env
        chroot = os.environ.get("CHROOT") or os.path.join(build, "chroot-sid")
        name = "chroot: torch 2.x, Python 3.14"
        if os.path.exists(os.path.join(chroot, "usr", "bin", "python3")) and os.geteuid() == 0:
            base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}

            def inside(argv, traced, what):
                env = dict(base)
                if traced:
                    env.update(LD_PRELOAD=agent, RINGSIDE_OUT=os.path.join(work, "chroot-" + what), RINGSIDE_LOG="2")
                argv = [os.path.join(work, a) if a == "bench_torch.py" else a for a in argv]
                return torch2env.in_chroot(chroot, argv, env), None

            r, s = stack(name, inside, rounds, steps)
            rows.append(r)
            samples.append(s)
        else:
            rows.append("| %s | - | - | - | no chroot (make chroot), or not root |" % name)
            samples.append("| %s | - | - | - | - | no chroot |" % name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("import torch with and without the agent (median of %d alternating runs each)" % rounds)
    print()
    print("| stack | without | with the agent | ratio | <= %.1fx |" % TARGET_IMPORT)
    print("|---|---:|---:|---:|---|")
    print("\n".join(rows))
    print()
    print("The sampler's handler on tools/bench/bench_torch.py's loop (%d steps, 99 Hz; medians, the handler's own clock)"
          % steps)
    print()
    print("| stack | samples | a sample | native unwinding | Python frames | <= %d us |" % TARGET_SAMPLE_US)
    print("|---|---:|---:|---:|---:|---|")
    print("\n".join(samples))


if __name__ == "__main__":
    main()
