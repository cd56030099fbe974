"""A small data-parallel training job on real PyTorch (CPU, gloo), for the
tests in tests/integration/test_torch.py. Each rank reads its share of the
sample files (one sample a file, text "label x1 x2 ...") through a
DataLoader with worker processes, trains a three-layer network under
DistributedDataParallel, and rank 0 saves a checkpoint with torch.save every
--ckpt-every steps. After the checkpoint nearest the middle, every rank runs
`sha256sum` on it in a subprocess, then late_work() spins for --late seconds
of CPU. Rank 1 calls slow_down() every step, spinning for --slow seconds of
its own CPU time.

    train.py ddp DATA CKPT [options]     one rank; rendezvous from env://
                                         (torchrun, or MASTER_ADDR/MASTER_PORT/
                                         RANK/WORLD_SIZE/LOCAL_RANK given)
    train.py spawn DATA CKPT [options]   starts two ranks itself with
                                         torch.multiprocessing.spawn

Each rank prints JSON lines: {"loss": [rank, step, float.hex], "t": the
time it printed it (time.monotonic(), s)}, {"hash":
[rank, path, digest]}, {"saved": path}, and last {"rank": ..., "pid", "ppid",
"workers": [pids that served its batches], "slow_cpu", "late_cpu" (its
thread's CPU seconds in slow_down and late_work), "cpu" (the process's CPU
seconds at the end), "main_blocked_s" and "main_off_cpu_s" (the seconds
its main thread spent blocked since the process began, by the kernel's
count: the time since it began less the thread's time on a CPU and waiting
for one, from /proc/thread-self/schedstat; and off a CPU: blocked or
waiting for one), "params" (sha256 of the final parameters)}; the
process ends with status --exit-status (default 0)."""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

SEED = 20240515
FEATURES = 64
CLASSES = 10


class SampleFiles(Dataset):
    """One sample per file, read whole with a plain open() and read()."""

    def __init__(self, folder):
        self.paths = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".txt"))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            words = f.read().split()
        x = torch.tensor([float(w) for w in words[1:]], dtype=torch.float32)
        return x, int(words[0]), os.getpid()


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.inp = nn.Linear(FEATURES, hidden)
        self.mid = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, CLASSES)

    def forward(self, x):
        return self.out(torch.relu(self.mid(torch.relu(self.inp(x)))))


def spin(seconds):
    """Burns this thread's CPU for seconds; returns the CPU time it took."""
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < seconds:
        for i in range(200):
            x += i * i
    return time.thread_time() - t0


def slow_down(seconds):
    return spin(seconds)


def late_work(seconds):
    return spin(seconds)


def main_blocked_s():
    """Seconds this (main) thread spent off a CPU and not waiting for one
    since the process began, and off a CPU (the kernel's counts)."""
    with open("/proc/thread-self/schedstat") as f:
        run_ns, queued_ns = (int(x) for x in f.read().split()[:2])
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    since = up - start_ticks / os.sysconf("SC_CLK_TCK")
    return since - (run_ns + queued_ns) / 1e9, since - run_ns / 1e9


def emit(obj):
    """One line, one write: ranks may share a pipe (torch.multiprocessing.spawn)."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def train(rank, world, args):
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    data = SampleFiles(args.data)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=SEED)
    sampler.set_epoch(0)
    context = args.context
    if context == "per-rank":
        context = "spawn" if rank == 0 else "forkserver"
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler, num_workers=args.workers,
                        multiprocessing_context=context)
    model = nn.parallel.DistributedDataParallel(Net(args.hidden))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    steps = len(loader)
    check_at = (steps // args.ckpt_every // 2 or 1) * args.ckpt_every
    workers, slow_cpu, late_cpu = set(), 0.0, 0.0
    for step, (x, y, pids) in enumerate(loader, 1):
        workers.update(pids.tolist())
        if rank == 1:
            slow_cpu += slow_down(args.slow)
        loss = lossf(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        emit({"loss": [rank, step, loss.item().hex()], "t": time.monotonic()})
        if step % args.ckpt_every == 0:
            path = os.path.join(args.ckpt, "ckpt-%04d.pt" % step)
            if rank == 0:
                torch.save({"step": step, "model": model.module.state_dict(), "optim": opt.state_dict()}, path)
                emit({"saved": path})
            if step == check_at:
                dist.barrier()
                done = subprocess.run(["sha256sum", path], capture_output=True, check=True)
                emit({"hash": [rank, path, done.stdout.split()[0].decode()]})
                late_cpu += late_work(args.late)
    digest = hashlib.sha256()
    for p in model.module.parameters():
        digest.update(p.detach().numpy().tobytes())
    dist.destroy_process_group()
    blocked, off_cpu = main_blocked_s()
    emit({"rank": rank, "pid": os.getpid(), "ppid": os.getppid(), "workers": sorted(workers),
          "slow_cpu": slow_cpu, "late_cpu": late_cpu, "params": digest.hexdigest(),
          "cpu": time.process_time(), "main_blocked_s": blocked, "main_off_cpu_s": off_cpu})


def spawned(rank, world, args):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    train(rank, world, args)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("ddp", "spawn"))
    ap.add_argument("data")
    ap.add_argument("ckpt")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--context", choices=("fork", "spawn", "forkserver", "per-rank"), default="fork")
    ap.add_argument("--ckpt-every", type=int, default=8)
    ap.add_argument("--slow", type=float, default=0.03)
    ap.add_argument("--late", type=float, default=0.5)
    ap.add_argument("--exit-status", type=int, default=0)
    args = ap.parse_args()
    if args.mode == "ddp":
        dist.init_process_group("gloo")
        train(dist.get_rank(), dist.get_world_size(), args)
    else:
        mp.spawn(spawned, args=(2, args), nprocs=2)
    sys.exit(args.exit_status)


if __name__ == "__main__":
    main()
