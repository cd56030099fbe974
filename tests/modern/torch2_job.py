"""A small training job on PyTorch 2.x (CPU, gloo) for the tests in
tests/modern/test_torch2_*.py, run inside the chroot of that stack. One
rank per process, rendezvous from env:// (torchrun with USE_LIBUV=0, or
MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE given by hand). A three-layer
network under DistributedDataParallel (or FSDP2's fully_shard) trains on
seeded random batches; checkpoints are written as --save says:

    torch          rank 0 torch.save's the state dict every --ckpt-every steps
    dcp            torch.distributed.checkpoint.save, every rank its shard
    dcp-async      dcp.async_save (a background thread writes), waited for
                   before the next one
    dcp-process    dcp.async_save with the process checkpointer (a spawned
                   process writes)

With --compile the model is torch.compile'd (Inductor, CPU) and its first
output is compared with the eager model's on the same input.

Each rank prints JSON lines: {"loss": [rank, step, float.hex]}, {"saved":
[rank, path]} per checkpoint written (a folder for DCP), and last {"rank",
"pid", "compile": {"first_s", "next_s", "equal"} (with --compile: the first
compiled call's wall time, compilation included, a later call's, and
whether the compiled result equals the eager one exactly), "params" (sha256
of the final parameters)}."""
import argparse
import hashlib
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

SEED = 20260515


class Net(nn.Module):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def say(obj):
    print(json.dumps(obj), flush=True)


def batch(step, rank, args):
    g = torch.Generator().manual_seed(SEED * 1000 + step * 16 + rank)
    x = torch.randn(args.batch, args.features, generator=g)
    y = torch.randint(0, args.classes, (args.batch,), generator=g)
    return x, y


def train_step(model, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def save_checkpoint(model, args, rank, step, pending, group):
    """Writes one checkpoint as --save says; returns the async save's
    future (or None) for the next call to wait for. DCP's collectives go
    on group, apart from DDP's: a background save's would otherwise
    interleave with the training loop's on one process group."""
    if pending is not None:
        pending.result()
    if args.save == "torch":
        if rank == 0:
            path = os.path.join(args.ckpt, "ckpt-%03d.pt" % step)
            torch.save(model.state_dict(), path)
            say({"saved": [rank, path]})
        return None
    import torch.distributed.checkpoint as dcp
    path = os.path.join(args.ckpt, "dcp-%03d" % step)
    state = {"model": model.state_dict()}
    say({"saved": [rank, path]})
    if args.save == "dcp":
        dcp.save(state, checkpoint_id=path, process_group=group)
        return None
    from torch.distributed.checkpoint.state_dict_saver import AsyncCheckpointerType
    kind = AsyncCheckpointerType.PROCESS if args.save == "dcp-process" else AsyncCheckpointerType.THREAD
    fut = dcp.async_save(state, checkpoint_id=path, async_checkpointer_type=kind, process_group=group)
    return getattr(fut, "upload_completion", fut)


def compare_compiled(model, args):
    """Eager against torch.compile on the same input: the first compiled
    call (compilation included) and a second one, timed on this clock."""
    x, _ = batch(10 ** 6, 0, args)
    with torch.no_grad():
        eager = model(x)
        compiled = torch.compile(model)
        t0 = time.perf_counter()
        first = compiled(x)
        t1 = time.perf_counter()
        compiled(x)
        t2 = time.perf_counter()
    return {"first_s": t1 - t0, "next_s": t2 - t1, "equal": bool(torch.equal(eager, first)),
            "max_diff": float((eager - first).abs().max())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--ckpt-every", type=int, default=3)
    ap.add_argument("--save", default="torch", choices=["torch", "dcp", "dcp-async", "dcp-process", "none"])
    ap.add_argument("--fsdp", action="store_true")
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = Net(args.features, args.hidden, args.classes)
    result = {"rank": rank, "pid": os.getpid()}
    if args.compile:
        result["compile"] = compare_compiled(model, args)
    if args.fsdp:
        from torch.distributed.fsdp import fully_shard
        fully_shard(model.fc1)
        fully_shard(model.fc2)
        fully_shard(model)
        wrapped = model
    else:
        wrapped = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.05)
    group = dist.new_group(backend="gloo") if args.save.startswith("dcp") else None
    pending = None
    for step in range(args.steps):
        x, y = batch(step, rank, args)
        loss = train_step(wrapped, opt, x, y)
        say({"loss": [rank, step, float(loss.item()).hex()]})
        if args.save != "none" and (step + 1) % args.ckpt_every == 0:
            pending = save_checkpoint(model, args, rank, step, pending, group)
    if pending is not None:
        pending.result()
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        t = p.full_tensor() if hasattr(p, "full_tensor") else p
        h.update(name.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    result["params"] = h.hexdigest()
    say(result)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
