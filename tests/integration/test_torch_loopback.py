#!/usr/bin/env python3
"""The node's real counters (preload/metrics.c reading /sys and /proc) under
a real PyTorch job (Debian's python3-torch): a 2-rank DDP job on gloo over
loopback, started by torchrun, whose gradients (8.4 M floats a step) make it move hundreds of MB
through `lo`, so that the host's other loopback traffic is small beside it.
The truth is what this test reads itself around the job: report.json's
loopback link tx_bytes within 15% of the change of
/sys/class/net/lo/statistics/tx_bytes, and the node's cpu_pct within 10
points of the busy share of /proc/stat's first line over the same time."""
import os
import socket
import subprocess

from rstest import check, cleanup, finish, report, run, skip, tempdir, traced_env

TORCH_PY = "/usr/bin/python3"   # Debian's torch is for Debian's interpreter
STEPS = 12

DDP = """
import torch, torch.distributed as dist, torch.nn as nn
dist.init_process_group("gloo")
torch.manual_seed(1)
torch.set_num_threads(1)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(%d):
    loss = model(torch.randn(8, 1024)).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
""" % STEPS


def have_torch():
    try:
        return run([TORCH_PY, "-c", "import torch.distributed"], cwd="/", timeout=120).returncode == 0
    except OSError:
        return False


def lo_tx():
    with open("/sys/class/net/lo/statistics/tx_bytes") as f:
        return int(f.read())


def cpu_ticks():
    """(busy, total) of /proc/stat's first line, as the kernel counts them."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    return busy, busy + v[3] + v[4]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if not os.path.exists("/sys/class/net/lo/statistics/tx_bytes"):
        skip("torch loopback", "no /sys/class/net/lo")
        finish()
    if not have_torch():
        skip("torch loopback", "Debian's python3-torch is not installed (%s cannot import torch)" % TORCH_PY)
        finish()
    if not os.path.exists("/usr/bin/torchrun"):
        skip("torch loopback", "Debian's torchrun (/usr/bin/torchrun) is not installed")
        finish()
    work = tempdir("torch-loopback")
    out = os.path.join(work, "trace")
    script = os.path.join(work, "ddp.py")
    with open(script, "w") as f:
        f.write(DDP)
    env = traced_env(out, TORCHELASTIC_RUN_ID="rs-loopback-%d" % os.getpid())
    for k in ("RINGSIDE_METRICS_HZ", "RINGSIDE_TEST_SYSFS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
        env.pop(k, None)
    # torchrun, as a user types it: its agent process and two ranks, all traced
    # (Debian's torchrun 1.13 wants a log folder and redirects, as test_torch.py gives it)
    cmd = ["/usr/bin/torchrun", "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
           str(free_port()), "--rdzv_id", "rs-loopback-%d" % os.getpid(), "-r", "1", "-t", "1",
           "--log_dir", os.path.join(work, "logs"), script]
    tx0, cpu0 = lo_tx(), cpu_ticks()
    p = subprocess.run(cmd, env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    tx1, cpu1 = lo_tx(), cpu_ticks()
    if not check("DDP on gloo: torchrun and both ranks run", p.returncode == 0,
                 p.stderr.decode(errors="replace")[-500:]):
        cleanup(work)
        finish()
    moved = tx1 - tx0
    busy = 100.0 * (cpu1[0] - cpu0[0]) / max(1, cpu1[1] - cpu0[1])
    rep = report(out)
    nodes = rep.get("nodes", [])
    lo = [l for n in nodes for l in n["links"] if l["kind"] == "loopback"]
    check("one node, one loopback link", len(nodes) == 1 and len(lo) == 1,
          str([(n["host"], [l["name"] for l in n["links"]]) for n in nodes]))
    # the job itself must carry most of it for the comparison to mean anything
    check("the job moved tens of MB over lo (%.1f MB)" % (moved / 1e6), moved > 50e6, str(moved))
    if lo:
        got = lo[0]["tx_bytes"]
        check("lo tx_bytes within 15%% of /sys/class/net/lo's change (%.1f MB against %.1f MB)"
              % (got / 1e6, moved / 1e6), abs(got - moved) <= 0.15 * moved, "%d against %d" % (got, moved))
    if nodes:
        got = nodes[0]["cpu_pct"]
        check("cpu_pct within 10 points of /proc/stat over the job (%s against %.1f%%)" % (got, busy),
              got is not None and abs(got - busy) <= 10, "%r against %.1f" % (got, busy))
    cleanup(work)
    finish()


main()
