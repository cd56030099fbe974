"""The real framework's half of `make soak` (tests/soak/soak.py): a two-rank
DistributedDataParallel job on PyTorch (CPU, gloo), started with
torch.multiprocessing.spawn, training a small network on batches it makes
itself for --seconds. Each step every rank reads a 64 KiB shard of its data
file, and every --ckpt-every steps rank 0 saves a checkpoint with torch.save
(written over the last). The ranks stop together: each step they AllReduce
whether their time is up. Every 20 steps each rank writes the steps done so
far and its pid to OUT/progress-rank<R>.txt (the soak's bytes per step), and at the end
prints {"rank", "pid", "steps", "loss"} as a JSON line.

    ddp_soak.py OUT --seconds S [--ckpt-every K]"""
import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

WORLD = 2
SHARD = 64 << 10


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def progress(out, rank, steps):
    path = os.path.join(out, "progress-rank%d.txt" % rank)
    with open(path + ".tmp", "w") as f:
        f.write("%d %d\n" % (steps, os.getpid()))
    os.replace(path + ".tmp", path)


def rank_main(rank, args, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(1234)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(rank)
    data = os.path.join(args.out, "data-rank%d.bin" % rank)
    with open(data, "wb") as f:
        f.write(os.urandom(16 * SHARD))
    deadline = time.monotonic() + args.seconds
    steps, loss = 0, None
    with open(data, "rb") as f:
        while True:
            f.seek((steps % 16) * SHARD)
            f.read(SHARD)
            x = torch.randn(64, 256, generator=gen)
            y = torch.randint(0, 10, (64,), generator=gen)
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            steps += 1
            if rank == 0 and steps % args.ckpt_every == 0:
                torch.save(model.state_dict(), os.path.join(args.out, "ckpt.pt"))
            if steps % 20 == 0:
                progress(args.out, rank, steps)
            done = torch.tensor([1.0 if time.monotonic() >= deadline else 0.0])
            dist.all_reduce(done, op=dist.ReduceOp.MAX)
            if done.item() > 0:
                break
    progress(args.out, rank, steps)
    print(json.dumps({"rank": rank, "pid": os.getpid(), "steps": steps, "loss": float(loss)}), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--ckpt-every", type=int, default=200)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(rank_main, args=(args, free_port()), nprocs=WORLD, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
