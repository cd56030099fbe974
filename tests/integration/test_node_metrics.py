#!/usr/bin/env python3
"""The node's counters (preload/metrics.c, reporter/analyse/nodes.c) on a fake tree
(RINGSIDE_TEST_SYSFS) whose numbers this test and the simulated NCCL move:
a 2-rank simtrain job whose simnccl adds every byte each rank sends and
receives to a fake InfiniBand port (SIMNCCL_PORT_COUNTERS), while this test
moves an Ethernet interface's, a disk's, an NFS mount's and the CPU's
counters by known amounts inside the job. report.json's nodes[] against
those: the port's bytes against what simnccl's log says it added between
the sampler's first and last reading of the port (a process samples from
its first trace chunk on, so the job's first collectives may come before),
simnccl's whole account against the simulator's truth file (each
collective's bytes times the ring's share), the interface's, disk's and
mount's against what the test added, CPU busy share and memory use against
the fake files' own ratios, the throughput during collectives against the
port's bytes over the union of the collectives' times in the truth file,
link_underused and host_cpu_saturated named; a partition and a loop device
left out. The election: at most one sampler at a time (files with points
never overlap in time), and a hand-over (two plain processes at
RINGSIDE_METRICS_HZ=20: the first exits after 1.5 s, the second samples
after it, within about a second); RINGSIDE_METRICS_HZ=0 records nothing;
garbled and missing files in the tree are left out and the rest is read."""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import (AGENT, BUILD, PYTHON, check, cleanup, dump, finish, report, report_problems, run,  # noqa: E402
                    skip, tempdir, trace_files, traced_env)
from simtruth import union, length  # noqa: E402

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
PORT = "sys/class/infiniband/mlx5_0/ports/1/"
ETH = "sys/class/net/eth9/"
NFS = "/mnt/ckpt"
TX0, RX0 = 1000, 2000          # the port's counters at the start, 4-byte units
ETH_TX, ETH_RX = 123456789, 2345678
SECTORS_R, SECTORS_W = 4000, 90000
NFS_R, NFS_W = 777777, 5555555
BUSY, IDLE = 19, 1              # CPU ticks added per step: 95% busy
BW_GBS = 10.0


def put(root, path, text):
    """Writes a fake file whole (a new file renamed over the old, so the
    sampler never reads half of it)."""
    p = os.path.join(root, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p + ".new", "w") as f:
        f.write(text)
    os.replace(p + ".new", p)


def diskstats(r, w):
    return ("   8       0 sda 10 0 %d 5 20 0 %d 9 0 0 0 0 0 0 0 0 0\n"
            "   8       1 sda1 10 0 %d 5 20 0 %d 9 0 0 0 0 0 0 0 0 0\n"
            "   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0\n" % (r, w, r, w))


def mountstats(r, w):
    return ("device /dev/vda1 mounted on / with fstype ext4\n"
            "device srv:/export mounted on %s with fstype nfs4 statvers=1.1\n"
            "\topts:\trw,vers=4.2\n"
            "\tbytes:\t%d %d 0 0 %d %d 0 0\n" % (NFS, r * 3, w * 3, r, w))


def fake_tree(root, rate="400 Gb/sec (4X NDR)"):
    put(root, PORT + "rate", rate + "\n")
    put(root, PORT + "link_layer", "InfiniBand\n")
    put(root, PORT + "counters/port_xmit_data", "%d\n" % TX0)
    put(root, PORT + "counters/port_rcv_data", "%d\n" % RX0)
    put(root, ETH + "type", "1\n")
    put(root, ETH + "speed", "25000\n")
    put(root, ETH + "statistics/tx_bytes", "5\n")
    put(root, ETH + "statistics/rx_bytes", "7\n")
    put(root, "sys/class/net/lo/type", "772\n")
    put(root, "sys/class/net/lo/speed", "-1\n")
    put(root, "sys/class/net/lo/statistics/tx_bytes", "0\n")
    put(root, "sys/class/net/lo/statistics/rx_bytes", "0\n")
    os.makedirs(os.path.join(root, "sys/block/sda"), exist_ok=True)
    os.makedirs(os.path.join(root, "sys/block/loop0"), exist_ok=True)
    put(root, "proc/diskstats", diskstats(0, 0))
    put(root, "proc/self/mountstats", mountstats(0, 0))
    put(root, "proc/stat", "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0 0 0\n")
    put(root, "proc/meminfo", "MemTotal: 1000000 kB\nMemFree: 1 kB\nMemAvailable: 250000 kB\nDirty: 2048 kB\n")


class Mover(threading.Thread):
    """Moves the interface's, disk's, mount's and CPU's counters by the
    totals above in STEPS steps, from `after` s to about `after` + 1 s."""
    STEPS = 20

    def __init__(self, root, after):
        super().__init__(daemon=True)
        self.root, self.after, self.done = root, after, False

    def run(self):
        time.sleep(self.after)
        n = self.STEPS
        for i in range(1, n + 1):
            put(self.root, ETH + "statistics/tx_bytes", "%d\n" % (5 + ETH_TX * i // n))
            put(self.root, ETH + "statistics/rx_bytes", "%d\n" % (7 + ETH_RX * i // n))
            put(self.root, "proc/diskstats", diskstats(SECTORS_R * i // n, SECTORS_W * i // n))
            put(self.root, "proc/self/mountstats", mountstats(NFS_R * i // n, NFS_W * i // n))
            put(self.root, "proc/stat", "cpu  %d 0 100 %d 0 0 0 0 0 0\n" % (100 + BUSY * i, 800 + IDLE * i))
            time.sleep(1.0 / n)
        self.done = True


def counter(root, name):
    with open(os.path.join(root, PORT, "counters", name)) as f:
        return int(f.read())


def points_by_file(out):
    """{trace file: (series records, point records)} of the node's series:
    the GPU's (gpu_*, sampled by every process that has a GPU, through
    NVML) and the process's own (run_delay, its main thread's wait for a
    CPU) left out."""
    res = {}
    for t in trace_files(out):
        recs, _, _ = dump(t)
        series = [r for r in recs if r["type"] == "series" and not r["kind"].startswith("gpu_") and
                  r["kind"] != "run_delay"]
        ids = {r["id"] for r in series}
        res[t] = (series, [r for r in recs if r["type"] == "point" and r["series"] in ids])
    return res


def overlapping(by_file):
    """Pairs of files whose points overlap in time (two samplers at once)."""
    spans = sorted((min(p["ts_ns"] for p in pts), max(p["ts_ns"] for p in pts), os.path.basename(f))
                   for f, (_, pts) in by_file.items() if pts)
    return [(a[2], b[2]) for a, b in zip(spans, spans[1:]) if b[0] <= a[1]]


def arrival_union(truth, a, b):
    """The union over ranks of each collective's time on its rank's GPU:
    from when the stream reached it (its launch, or the end of the work
    before it on the stream) to its end, as simtruth.truth_gpu counts
    communication without --overlap; clipped to [a, b]."""
    by_stream = {}
    for t in truth:
        if t.get("kind") in ("kernel", "collective", "memcpy", "memset"):
            by_stream.setdefault((t["pid"], t["stream"]), []).append(t)
    iv = []
    for lst in by_stream.values():
        lst.sort(key=lambda t: (t["start_ns"], t["end_ns"]))
        prev = 0
        for t in lst:
            if t["kind"] == "collective":
                s, e = max(t["launch_ns"], prev, a), min(t["end_ns"], b)
                if e > s:
                    iv.append((s, e))
            prev = t["end_ns"]
    return length(union(iv))


def job(d):
    """The 2-rank job; (report, truth lines, root, out) or None."""
    root, out = os.path.join(d, "sysfs"), os.path.join(d, "trace")
    fake_tree(root)
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "LD_PRELOAD",
              "RINGSIDE_JOB", "RINGSIDE_RANK_PID", "RINGSIDE_METRICS_HZ"):
        env.pop(k, None)
    env.update(LD_LIBRARY_PATH=SIM, SIMGPU_TRUTH=os.path.join(d, "truth"), SIMNCCL_TIMEOUT_S="30",
               RINGSIDE_OUT=out, RINGSIDE_TEST_SYSFS=root, SIMNCCL_PORT_COUNTERS=os.path.join(root, PORT, "counters"),
               AGENT_SO=AGENT)
    cmd = [LAUNCH, "-n", "2", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", TRAIN,
           "--steps", "20", "--layers", "4", "--bucket-mb", "8", "--bw-gbs", str(BW_GBS), "--fwd-us", "20000",
           "--bwd-us", "40000", "--no-overlap"]
    mover = Mover(root, 1.5)
    mover.start()
    t0 = time.monotonic()
    p = run(cmd, env=env, timeout=180)
    wall = time.monotonic() - t0
    mover.join(10)
    if not check("job: simtrain on 2 ranks runs", p.returncode == 0, p.stderr.decode(errors="replace")[-500:]):
        return None
    # the counters must have moved inside the job for the sampler to see all of it
    if not check("job: the test moved its counters inside the job", mover.done and wall > 3.0,
                 "mover done %s, job %.1f s" % (mover.done, wall)):
        return None
    with open(os.path.join(d, "truth")) as f:
        truth = [json.loads(l) for l in f if l.strip()]
    return report(out), truth, root, out


def node_checks(rep, truth, root, out):
    nodes = rep.get("nodes", [])
    if not check("one node in report.json", len(nodes) == 1, str([n.get("host") for n in nodes])):
        return
    nd = nodes[0]
    links = {l["name"]: l for l in nd["links"]}
    disks = {x["name"]: x for x in nd["disks"]}
    ib = links.get("mlx5_0:1")
    if not check("the fake port is a link of kind ib at 400 Gb/s", ib is not None and ib["kind"] == "ib" and
                 abs((ib["rate_gbs"] or 0) - 50.0) < 1e-6, str(ib and {k: ib[k] for k in ("kind", "rate_gbs")})):
        return
    tx, rx = (counter(root, "port_xmit_data") - TX0) * 4, (counter(root, "port_rcv_data") - RX0) * 4
    # the simulator's own account: each rank sends and receives 2(n-1)/n of
    # an AllReduce's bytes (to 4 bytes per rank)
    colls = [t for t in truth if t.get("kind") == "collective"]
    want = sum(int(t["bytes"] * 2 * (t["nranks"] - 1) / t["nranks"]) for t in colls)
    check("simnccl added the collectives' bytes to the port (truth file)", colls and tx == rx and
          abs(tx - want) <= 8, "counters moved %d, %d; truth %d (%d collectives)" % (tx, rx, want, len(colls)))
    # what moved while the node was sampled: simnccl's log between the first
    # and the last reading of the port (an update within 1 ms of a reading
    # may fall either side of it)
    by_file = points_by_file(out)
    ts = [x["ts_ns"] for series, pts in by_file.values() for x in pts
          if any(s["id"] == x["series"] and s["name_text"] == "mlx5_0:1" and s["kind"] == "link_tx" for s in series)]
    with open(os.path.join(root, PORT, "counters", ".log")) as f:
        log = [tuple(int(v) for v in l.split()) for l in f if l.strip()]
    a, b = (min(ts), max(ts)) if ts else (0, 0)
    lo = sum(x[1] for x in log if a + 1e6 < x[0] <= b - 1e6)
    hi = sum(x[1] for x in log if a - 1e6 < x[0] <= b + 1e6)
    check("port bytes: what simnccl added while the node was sampled (%.1f of %.1f MB)" % (lo / 1e6, tx / 1e6),
          ts and lo <= ib["tx_bytes"] <= hi and lo <= ib["rx_bytes"] <= hi and lo > 0.5 * tx,
          "report tx %d rx %d, simnccl's log %d..%d over %.3f s" % (ib["tx_bytes"], ib["rx_bytes"], lo, hi,
                                                                  (b - a) / 1e9))
    span = arrival_union(truth, a, b)
    got = ib["in_collectives_gbs"]
    truth_gbs = ib["tx_bytes"] / span if span else 0
    check("throughput during collectives within 20% of bytes over the collectives' time",
          got is not None and abs(got - truth_gbs) <= 0.2 * truth_gbs,
          "report %r GB/s, truth %.2f GB/s (%.3f s of collectives)" % (got, truth_gbs, span / 1e9))
    eth = links.get("eth9")
    check("interface: kind eth at 25 Gb/s, the bytes the test added",
          eth is not None and eth["kind"] == "eth" and abs((eth["rate_gbs"] or 0) - 3.125) < 1e-6 and
          (eth["tx_bytes"], eth["rx_bytes"]) == (ETH_TX, ETH_RX), str(eth))
    lo = links.get("lo")
    check("loopback: kind loopback, rate unknown (speed -1)", lo is not None and lo["kind"] == "loopback" and
          lo["rate_gbs"] is None, str(lo))
    sda = disks.get("sda")
    check("disk: sectors x 512 the test added", sda is not None and not sda["nfs"] and
          (sda["read_bytes"], sda["write_bytes"]) == (SECTORS_R * 512, SECTORS_W * 512), str(sda))
    check("partition and loop device left out", "sda1" not in disks and "loop0" not in disks, sorted(disks))
    nfs = disks.get(NFS)
    check("NFS mount: the server bytes the test added", nfs is not None and nfs["nfs"] and
          (nfs["read_bytes"], nfs["write_bytes"]) == (NFS_R, NFS_W), str(nfs))
    check("cpu_pct: the busy share the test gave (95%)", nd["cpu_pct"] is not None and
          abs(nd["cpu_pct"] - 100.0 * BUSY / (BUSY + IDLE)) < 0.01, str(nd["cpu_pct"]))
    check("mem_used_pct: 1 - available / total of the fake meminfo", nd["mem_used_pct"] is not None and
          abs(nd["mem_used_pct"] - 75.0) < 0.01, str(nd["mem_used_pct"]))
    f = {x["id"]: x for x in rep["findings"]}
    lu = f.get("link_underused")
    check("link_underused names the port, its rate and what it carried",
          lu is not None and "mlx5_0:1" in lu["evidence"] and "50.0 GB/s" in lu["evidence"],
          str(lu or sorted(f)))
    hc = f.get("host_cpu_saturated")
    check("host_cpu_saturated names the host", hc is not None and nd["host"] in hc["evidence"], str(hc or sorted(f)))
    sampled = [t for t, (s, p) in by_file.items() if p]
    check("the node was sampled, by one process at a time", sampled and not overlapping(by_file),
          "files with points %s, overlapping %s" % ([os.path.basename(t) for t in sampled], overlapping(by_file)))
    problems = []
    for t, (series, pts) in by_file.items():
        ids = [s["id"] for s in series]
        if len(ids) != len(set(ids)) or len({(s["name_text"], s["kind"]) for s in series}) != len(series):
            problems.append("%s: a series defined twice" % os.path.basename(t))
        if pts and not series:
            problems.append("%s: points without series" % os.path.basename(t))
    report_problems("each sampler's file defines its series once", problems)


def plain(out, root, secs, hz=20, **extra):
    """A plain process under the agent that writes a file (so it has a
    trace of its own) and sleeps secs."""
    code = "import os,time; open(os.path.join(%r, 'f%%d' %% os.getpid()), 'w').write('x'); time.sleep(%r)" % (
        os.path.dirname(out), secs)
    env = traced_env(out, RINGSIDE_TEST_SYSFS=root, RINGSIDE_METRICS_HZ=hz, RINGSIDE_JOB="plain", **extra)
    return subprocess.Popen([PYTHON, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def handover(d):
    root, out = os.path.join(d, "sysfs2"), os.path.join(d, "trace2")
    fake_tree(root)
    first = plain(out, root, 1.5)
    time.sleep(0.3)
    second = plain(out, root, 3.5)
    rc = (first.wait(30), second.wait(30))
    if not check("hand-over: both processes exit 0", rc == (0, 0), str(rc)):
        return
    by_file = points_by_file(out)
    pid = {first.pid: None, second.pid: None}
    for t, (_, pts) in by_file.items():
        for p in pid:
            if (".%d." % p) in os.path.basename(t) and pts:
                pid[p] = (min(x["ts_ns"] for x in pts), max(x["ts_ns"] for x in pts))
    a, b = pid[first.pid], pid[second.pid]
    if not check("hand-over: both processes' files have points", a and b, str(pid)):
        return
    check("hand-over: no overlap, the second takes over within 1.5 s of the first's last sample",
          a[1] < b[0] <= a[1] + 1.5e9 and not overlapping(by_file),
          "first %.3f..%.3f s, second %.3f..%.3f s" % (0, (a[1] - a[0]) / 1e9, (b[0] - a[0]) / 1e9,
                                                       (b[1] - a[0]) / 1e9))
    rep = report(out)
    nd = rep.get("nodes", [{}])[0]
    check("hand-over: report.json merges the two files of one host", len(rep.get("nodes", [])) == 1 and
          nd.get("files") == 2 and nd.get("mem_used_pct") is not None and abs(nd["mem_used_pct"] - 75) < 0.01,
          str({k: nd.get(k) for k in ("host", "files", "mem_used_pct")}))


def off_and_garbled(d):
    root, out = os.path.join(d, "sysfs3"), os.path.join(d, "trace3")
    fake_tree(root)
    p = plain(out, root, 0.5, hz=0)
    check("RINGSIDE_METRICS_HZ=0: runs", p.wait(30) == 0)
    check("RINGSIDE_METRICS_HZ=0: no series, no points",
          not any(s or pts for s, pts in points_by_file(out).values()), str(points_by_file(out).keys()))
    # garbled and missing files: the rest is read
    put(root, PORT + "counters/port_rcv_data", "garbage\n")
    put(root, ETH + "statistics/tx_bytes", "")
    os.unlink(os.path.join(root, "proc/meminfo"))
    put(root, "proc/diskstats", "   8       0 sda 10 0\n")
    put(root, "proc/stat", "cpu  x y z\n")
    out = os.path.join(d, "trace4")
    p = plain(out, root, 1.0, hz=20)
    err = p.stderr.read().decode(errors="replace")
    check("bad files: the process runs, the agent silent", p.wait(30) == 0 and "ringside:" not in err, err[-300:])
    by_file = points_by_file(out)
    names = {}
    for series, pts in by_file.values():
        ids = {s["id"]: (s["name_text"], s["kind"]) for s in series}
        for x in pts:
            k = ids.get(x["series"])
            names[k] = names.get(k, 0) + 1
    ok = names.get(("mlx5_0:1", "link_tx"), 0) > 5 and names.get(("eth9", "link_rx"), 0) > 5 and \
        not names.get(("mlx5_0:1", "link_rx")) and not names.get(("eth9", "link_tx")) and \
        not names.get(("mem", "mem_total")) and not names.get(("sda", "disk_read")) and \
        not names.get(("cpu", "cpu_busy"))
    check("bad files: left out, the others read", ok, str(names))
    rep = report(out)
    check("bad files: report.json has the node", len(rep.get("nodes", [])) == 1 and
          rep["nodes"][0]["cpu_pct"] is None and rep["nodes"][0]["mem_used_pct"] is None,
          str([{k: n.get(k) for k in ("host", "cpu_pct", "mem_used_pct")} for n in rep.get("nodes", [])]))


def main():
    if not os.path.exists(os.path.join(SIM, "libnccl.so.2")):
        skip("node metrics", "build/sim is not built")
        finish()
    d = tempdir("node-metrics")
    got = job(d)
    if got:
        node_checks(*got)
    handover(d)
    off_and_garbled(d)
    cleanup(d)
    finish()


main()
