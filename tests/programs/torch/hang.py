"""A data-parallel job on real PyTorch (CPU, gloo) that hangs: each rank
all-reduces a tensor every step; rank --stall-rank sleeps --stall-s seconds
in step --stall-step before its all-reduce (in stall(), called from step()),
so the others wait in theirs until init_process_group's timeout
(--timeout-s) raises in them, as a stuck job's ranks do.

    hang.py [--stall-rank R] [--stall-step S] [--stall-s SEC] [--timeout-s T]

Rendezvous from env:// (torchrun). Prints {"done": rank} at the end of a
run that did not hang."""
import argparse
import datetime
import json
import time

import torch
import torch.distributed as dist


def stall(seconds):
    time.sleep(seconds)


def step(args, rank, s, x):
    if rank == args.stall_rank and s == args.stall_step:
        stall(args.stall_s)
    dist.all_reduce(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stall-rank", type=int, default=1)
    ap.add_argument("--stall-step", type=int, default=5)
    ap.add_argument("--stall-s", type=float, default=600)
    ap.add_argument("--timeout-s", type=float, default=3)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout_s))
    rank = dist.get_rank()
    x = torch.ones(1000)
    for s in range(10):
        step(args, rank, s, x)
        time.sleep(0.01)
    print(json.dumps({"done": rank}), flush=True)


main()
