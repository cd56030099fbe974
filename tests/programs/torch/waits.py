"""Programs that wait in known ways, for tests/integration/test_torch_waits.py.
Each prints one JSON line with its own account of the time it waited.

    waits.py loader WORKERS   a loop over a DataLoader whose Dataset sleeps
                              SLEEP s a sample; the loop spins LOOP_CPU s of
                              CPU a batch. {"waited": s around iter() and
                              next(), "wall": s}
    waits.py ddp SLOW         one rank of a gloo DDP job (env:// ranks); rank
                              1 spins SLOW s of CPU a step in slow_down().
                              {"rank", "slow_cpu": its thread's CPU s there,
                              "slow_wall": the wall time that took}
    waits.py gil THREADS      THREADS threads (1: the main thread alone) burn
                              pure Python CPU. {"wall": s, "cpu": s,
                              "run_delay": s the burning threads were
                              runnable and waited for a CPU (schedstat)}
"""
import json
import sys
import threading
import time

SAMPLES, BATCH, SLEEP, LOOP_CPU = 256, 4, 0.02, 0.03
STEPS = 40


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


def loader(workers):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Slow(Dataset):
        def __len__(self):
            return SAMPLES

        def __getitem__(self, i):
            time.sleep(SLEEP)
            return torch.zeros(8), i

    t0 = time.monotonic()
    dl = DataLoader(Slow(), batch_size=BATCH, num_workers=workers)
    a = time.monotonic()
    it = iter(dl)
    waited = time.monotonic() - a
    while True:
        a = time.monotonic()
        try:
            next(it)
        except StopIteration:
            waited += time.monotonic() - a
            break
        waited += time.monotonic() - a
        spin(LOOP_CPU)
    return {"waited": waited, "wall": time.monotonic() - t0}


def ddp(slow):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1)
    torch.set_num_threads(1)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    slow_cpu = slow_wall = 0.0
    for _ in range(STEPS):
        x, y = torch.randn(16, 64), torch.randint(0, 10, (16,))
        if rank == 1:
            t0 = time.monotonic()
            slow_cpu += slow_down(slow)
            slow_wall += time.monotonic() - t0
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()
    return {"rank": rank, "slow_cpu": slow_cpu, "slow_wall": slow_wall}


def burn(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def run_delay():
    """This thread's time runnable but waiting for a CPU so far, s (the
    kernel's schedstat; 0 where it has none)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def gil(nthreads):
    t0, c0 = time.monotonic(), time.process_time()
    delays = []

    def worker(n):
        d0 = run_delay()
        burn(n)
        delays.append(run_delay() - d0)

    if nthreads == 1:
        worker(4_000_000)
    else:
        ts = [threading.Thread(target=worker, args=(4_000_000 // nthreads * 2,)) for _ in range(nthreads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    return {"wall": time.monotonic() - t0, "cpu": time.process_time() - c0, "run_delay": sum(delays)}


def main():
    mode, arg = sys.argv[1], sys.argv[2]
    out = {"loader": lambda: loader(int(arg)), "ddp": lambda: ddp(float(arg)),
           "gil": lambda: gil(int(arg))}[mode]()
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
