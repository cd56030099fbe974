#!/usr/bin/env python3
"""The reporter's part of `make bench` (`make bench-report` runs it alone).

(a) Kineto: `ringside import-kineto` + `ringside report` on the real PyTorch
traces in ../shared/data/kineto against HTA's own load + analyse time for
them (expected-hta.json, measured on the same kind of machine), best of
ROUNDS runs.
(b) Generated jobs (`BUILD/gen_job -n RANKS -e EVENTS -o DIR`), each read
with the command a user types, `ringside report DIR -o OUT`, all its
default outputs written; the targets are printed beside the figures:
  1. RANKS x EVENTS (64 x 1M): wall, CPU, records per second per core
     (records / (wall x the cores the run may use); the baseline is 64M records in 74 s on 2 cores, 432 k/s/core), peak
     memory (ru_maxrss of the child, from wait4) and the size of OUT and of
     each output; then the whole job's Perfetto export (`ringside export
     perfetto DIR -o FILE.pftrace`) against that report: CPU and peak
     memory at most twice the report's.
  2. Memory flat in the job's length: RANKS x EVENTS/4, x EVENTS (row 1)
     and x 4 EVENTS (64 x 250k, 1M, 4M): the peaks and their ratio to the
     first.
  3. WIDE_RANKS x WIDE_EVENTS (1,024 x 100k): wall and peak.
  4. MPI: `mpirun -n MPI_NP ringside report DIR -o OUT2` on row 1's job
     against row 1's one process: report.json compared key by key (every
     key but `reporter`) and the speed-up. Skipped, with the reason, when
     there is no mpirun or the reporter does not say it was built with MPI.
Each job is generated once into a temporary folder under BENCH_TMP and
deleted after its rows; a row is skipped, with a line saying why, when the
disk lacks room for its job. Every reporter command runs under an
address-space limit (RLIMIT_AS, MEM_LIMIT_GB; it counts mapped files too),
and every command (gen_job too) under a time limit (TIMEOUT) and a watch
that stops it when the disk or the machine's memory runs low, so a
reporter that needs too much prints 'out of memory (limit N GB)' in its row
instead of taking the machine down. GB are 10^9 bytes.

Usage: tools/bench/bench_report.py [BUILD]
Knobs (environment):
  ROUNDS=5            Kineto: best of ROUNDS runs; KINETO=0 leaves it out
  RANKS=64            ranks of rows 1 and 2; 0 leaves every generated job out
  EVENTS=1000000      records a rank in row 1 (row 2: a quarter, 1x, 4x)
  SCALE=1             0 leaves rows 2, 3 and 4 out (Kineto and row 1 only)
  WIDE_RANKS=1024     row 3's ranks (0 leaves it out); WIDE_EVENTS=100000
  MPI=auto            0 leaves row 4 out; 1 runs it even where the reporter
                      does not say MPI; MPI_NP=2 processes
  SMALL=0             1: small defaults for a quick check (RANKS=8,
                      EVENTS=20000, WIDE_RANKS=128, WIDE_EVENTS=2000); a
                      knob set explicitly still wins
  MEM_LIMIT_GB        limit of each reporter command, default the smaller of 8 and
                      the memory available at the start; 0: none
  TIMEOUT=1800        seconds any one command may run
  BENCH_TMP=/tmp      where jobs and outputs are written"""
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "kineto")
if not os.path.isdir(DATA):
    DATA = "/work/shared/data/kineto"
RINGSIDE = os.path.join(BUILD, "ringside")
GEN = os.path.join(BUILD, "gen_job")
SMALL = os.environ.get("SMALL", "0") not in ("", "0")


def knob(name, default, small=None):
    return int(os.environ.get(name) or (small if SMALL and small is not None else default))


def meminfo(key):
    """A /proc/meminfo figure in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


ROUNDS = knob("ROUNDS", 5)
KINETO = os.environ.get("KINETO", "1") != "0"
RANKS = knob("RANKS", 64, 8)
EVENTS = knob("EVENTS", 1000000, 20000)
SCALE = os.environ.get("SCALE", "1") != "0"
WIDE_RANKS = knob("WIDE_RANKS", 1024, 128)
WIDE_EVENTS = knob("WIDE_EVENTS", 100000, 2000)
MPI = os.environ.get("MPI", "auto")
MPI_NP = knob("MPI_NP", 2)
_avail = meminfo("MemAvailable")
MEM_LIMIT_GB = float(os.environ.get("MEM_LIMIT_GB") or
                     (min(8, int(_avail / 1e9)) if _avail else 8))
TIMEOUT = float(os.environ.get("TIMEOUT") or 1800)
BENCH_TMP = os.environ.get("BENCH_TMP") or "/tmp"
CORES = len(os.sched_getaffinity(0))

# The baseline the targets were set from, and the targets.
BASE_RECORDS, BASE_WALL, BASE_CORES = 64e6, 74.0, 2
BASE_RATE = BASE_RECORDS / (BASE_WALL * BASE_CORES)  # records / s / core
TARGET_RATE = 4 * BASE_RATE
TARGET_PEAK = 1e9
TARGET_OUTPUTS = 200e6
TARGET_FLAT = 0.20
KINETO_TARGET = 50  # import + report against HTA's load + analyse, wall
DISK_FLOOR = 2e9      # the watch stops a command when less is free
MEM_FLOOR = 0.5e9     # ... or when the machine has less memory available
BYTES_PER_RECORD = 20.6  # gen_job's files, until one job has been measured


def timed(cmd):
    """Wall seconds of cmd, its CPU seconds (user + system, all threads) and
    its peak resident memory in KiB (ru_maxrss of that child, from wait4)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench_report: %s failed: %s" % (" ".join(cmd), err.strip()))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def kineto_part(work):
    with open(os.path.join(DATA, "expected-hta.json")) as f:
        expected = json.load(f)
    print("Kineto traces: import-kineto + report (best of %d) vs. HTA's load + analyse. CPU: user +"
          % ROUNDS)
    print("system time of both commands, all threads: what the wall time would be on an idle core;")
    print("on a shared machine the wall time also holds the time others took.")
    print()
    print("| trace | HTA | ringside wall | ringside CPU | ratio (wall) | ratio (CPU) | target | met (wall) |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    total_hta = total_ours = total_cpu = 0.0
    for entry, want in sorted(expected.items()):
        if entry.endswith(" (both files)"):
            files = sorted(glob.glob(os.path.join(DATA, entry[: -len(" (both files)")], "*.json*")))
        else:
            files = [os.path.join(DATA, entry)]
        hta = want["load_s"] + want["analyze_s"]
        best = cpu = None
        for _ in range(ROUNDS):
            job = os.path.join(work, "kineto")
            shutil.rmtree(job, ignore_errors=True)
            t1, c1, _ = timed([RINGSIDE, "import-kineto", "-q", *files, "-o", job])
            t2, c2, _ = timed([RINGSIDE, "report", "-q", job, "--json", os.path.join(work, "k.json")])
            best = t1 + t2 if best is None else min(best, t1 + t2)
            cpu = c1 + c2 if cpu is None else min(cpu, c1 + c2)
        total_hta += hta
        total_ours += best
        total_cpu += cpu
        print("| %s | %.2f s | %.3f s | %.3f s | %.1fx | %.1fx | >= %gx | %s |" %
              (entry.replace(" (both files)", ""), hta, best, cpu, hta / best, hta / cpu, KINETO_TARGET,
               "yes" if hta / best >= KINETO_TARGET else "no"))
    print("| all | %.2f s | %.3f s | %.3f s | %.1fx | %.1fx | >= %gx | %s |" %
          (total_hta, total_ours, total_cpu, total_hta / total_ours, total_hta / total_cpu, KINETO_TARGET,
           "yes" if total_hta / total_ours >= KINETO_TARGET else "no"))
    print()


def size(b):
    """Bytes, decimal units."""
    if b >= 1e9:
        return "%.2f GB" % (b / 1e9)
    if b >= 1e6:
        return "%.1f MB" % (b / 1e6)
    if b >= 1e3:
        return "%.0f kB" % (b / 1e3)
    return "%d B" % b


def count(n):
    """Records: 64M, 250k, 102.4M."""
    if n >= 1e6:
        return ("%.1fM" % (n / 1e6)).replace(".0M", "M")
    if n >= 1e3:
        return ("%.1fk" % (n / 1e3)).replace(".0k", "k")
    return "%d" % n


def secs(t):
    return "%.2f s" % t if t < 10 else "%.1f s" % t


def rate(r):
    return "%.2f M" % (r / 1e6) if r >= 1e6 else "%.0f k" % (r / 1e3)


def yes(ok):
    return "yes" if ok else "no"


def say(msg):
    """Progress, on stderr, so the tables on stdout stay clean."""
    print("bench_report: " + msg, file=sys.stderr, flush=True)


def disk_free(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def tree_size(path):
    total = 0
    for d, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(d, n)).st_size
            except OSError:
                pass
    return total


def run(cmd, work, limited=True):
    """Runs cmd with stdout and stderr in files under work, under the memory
    limit (RLIMIT_AS, where limited; no core dumps), the time limit and the
    watch on the disk and the machine's memory. Returns a dict: wall and cpu (seconds;
    CPU is user + system of the child and the descendants it waited for),
    rss (bytes: ru_maxrss from wait4, the largest of those processes), code
    (exit status, or -signal), stopped (why the watch stopped it, or None),
    out and err (their text, the last 64 kB)."""
    limit = int(MEM_LIMIT_GB * 1e9) if limited else 0

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if limit > 0:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    paths = os.path.join(work, "cmd.out"), os.path.join(work, "cmd.err")
    with open(paths[0], "wb") as out, open(paths[1], "wb") as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             preexec_fn=limits, start_new_session=True)
    done = threading.Event()
    stopped = []

    def watch():
        while not done.wait(0.5):
            why = None
            avail = meminfo("MemAvailable")
            if time.perf_counter() - t > TIMEOUT:
                why = "timed out after %.0f s" % TIMEOUT
            elif disk_free(work) < DISK_FLOOR:
                why = "stopped: the disk was nearly full (%s left in %s)" % (size(disk_free(work)), work)
            elif avail is not None and avail < MEM_FLOOR:
                why = "stopped: the machine had only %s of memory left" % size(avail)
            if why and not done.is_set():
                stopped.append(why)
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    wall = time.perf_counter() - t
    done.set()
    watcher.join()
    p.returncode = code = os.waitstatus_to_exitcode(status)
    text = []
    for path in paths:
        with open(path, "rb") as f:
            skip = max(0, os.path.getsize(path) - 65536)
            f.seek(skip)
            t = f.read().decode(errors="replace")
            text.append(t.split("\n", 1)[-1] if skip else t)  # not the line cut in two
        os.unlink(path)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss * 1024,
            "code": code, "stopped": stopped[0] if stopped else None,
            "out": text[0], "err": text[1]}


COMPLAINT = re.compile(r"corrupt|error|cannot|could not|failed|out of memory|cut short|"
                       r"truncated|unreadable|bad_alloc|ENOMEM", re.I)
OOM = re.compile(r"out of memory|cannot allocate|ENOMEM|bad_alloc|alloc\w* fail|failed to alloc", re.I)


def failure(res, ranks=None, out=None):
    """Why a run of the reporter on a job gen_job has just written did not
    give a whole report, or None. Today's reporter, when an allocation
    fails, says 'FILE: offset N: corrupt LZ4 frame' and exits 0: on a job
    just generated, complaints about the files mean the memory ran out."""
    lim = "limit %g GB" % MEM_LIMIT_GB if MEM_LIMIT_GB > 0 else "no limit"
    if res["stopped"]:
        return res["stopped"]
    code = res["code"]
    lines = [l.strip() for l in res["err"].splitlines() if l.strip()]
    complaints = [l for l in lines if COMPLAINT.search(l)]
    oom = [l for l in complaints if OOM.search(l)]
    first = (oom or complaints or lines or [""])[0][:160]
    if code < 0:
        name = signal.Signals(-code).name
        if name == "SIGKILL":
            return "killed by SIGKILL (the kernel's OOM killer?) %s" % first
        if name == "SIGXFSZ":
            return "killed by SIGXFSZ (an output over the file size limit)"
        return "killed by %s under the memory limit (%s): out of memory? %s" % (name, lim, first)
    if oom:
        return "out of memory (%s): %s" % (lim, first)
    if code != 0:
        return "failed (exit %d): %s" % (code, first)
    if complaints:
        return ("out of memory (%s), by all signs: exit 0, but %d complaints about files gen_job "
                "has just written, such as '%s'" % (lim, len(complaints), first))
    if out is not None:
        try:
            with open(os.path.join(out, "report.json")) as f:
                got = len(json.load(f).get("processes", []))
        except (OSError, ValueError) as e:
            return "no readable report.json: %s" % e
        if ranks is not None and got != ranks:
            return "incomplete report: %d of %d processes" % (got, ranks)
    return None


def generate(ranks, events, work, hang_rank=None):
    """Writes a gen_job job of ranks x events under work (hang_rank: one
    that never enters the last all-reduce, gen_job -H). Returns a dict
    (dir, records, bytes, secs) or a string saying why there is none."""
    global BYTES_PER_RECORD
    job = os.path.join(work, "job-%dx%d%s" % (ranks, events, "" if hang_rank is None else "-hang"))
    need = ranks * events * BYTES_PER_RECORD * 1.05
    free = disk_free(work)
    if free < need + DISK_FLOOR + 1e9:
        return ("skipped: not enough disk: its job needs about %s, and %s more are kept free for "
                "outputs; %s has %s free" % (size(need), size(DISK_FLOOR + 1e9), work, size(free)))
    say("generating %d ranks x %d records (about %s) in %s" % (ranks, events, size(need), job))
    # Not under the reporter's limit: gen_job's needs are its own (2.4 GB for
    # 64 x 4M on 2 cores); the watch still guards the machine.
    res = run([GEN, "-n", str(ranks), "-e", str(events), "-o", job, "-j", str(CORES)] +
              ([] if hang_rank is None else ["-H", str(hang_rank)]), work, limited=False)
    if res["stopped"] or res["code"] != 0:
        shutil.rmtree(job, ignore_errors=True)
        return "skipped: gen_job failed: %s" % (res["stopped"] or " ".join(res["err"].split())[-300:])
    m = re.search(r"ranks (\d+) events (\d+) bytes (\d+)", res["out"])
    records = int(m.group(2)) if m else ranks * events
    nbytes = int(m.group(3)) if m else tree_size(job)
    BYTES_PER_RECORD = nbytes / max(1, records)
    return {"dir": job, "records": records, "bytes": nbytes, "secs": res["wall"]}


def outputs(out):
    """The outputs in out: [(label, files, bytes)] for report.json,
    index.html, trace.json and flame-*.svg (listed even when absent), then
    every other file, and the whole folder last."""
    groups = [["report.json", 0, 0], ["index.html", 0, 0], ["trace.json", 0, 0], ["flame-*.svg", 0, 0]]
    other = []
    total = files = 0
    for d, _, names in os.walk(out):
        for n in sorted(names):
            b = os.lstat(os.path.join(d, n)).st_size
            rel = os.path.relpath(os.path.join(d, n), out)
            total += b
            files += 1
            for g in groups:
                if rel == g[0] or (g[0] == "flame-*.svg" and re.fullmatch(r"flame-.*\.svg", rel)):
                    g[1] += 1
                    g[2] += b
                    break
            else:
                other.append([rel, 1, b])
    return [tuple(g) for g in groups] + [tuple(o) for o in other] + [("all (OUT)", files, total)]


def report(job, ranks, work, tag, cmd_prefix=(), keep_json=None):
    """Runs `[cmd_prefix] ringside report JOB -o OUT` and measures it; OUT is
    deleted after (its report.json copied to keep_json first, if given).
    Returns the run's dict with why (failure() or None) and outputs."""
    out = os.path.join(work, "out-" + tag)
    shutil.rmtree(out, ignore_errors=True)
    cmd = list(cmd_prefix) + [RINGSIDE, "report", job, "-o", out]
    say("%s (limit %g GB)" % (" ".join(cmd), MEM_LIMIT_GB))
    res = run(cmd, work)
    res["why"] = failure(res, ranks, out)
    res["outputs"] = outputs(out) if os.path.isdir(out) else [("all (OUT)", 0, 0)]
    if keep_json and os.path.isfile(os.path.join(out, "report.json")):
        shutil.copyfile(os.path.join(out, "report.json"), keep_json)
    shutil.rmtree(out, ignore_errors=True)
    say("  wall %.1f s, peak %s, outputs %s%s" % (res["wall"], size(res["rss"]), size(res["outputs"][-1][2]),
                                                  ": " + res["why"] if res["why"] else ""))
    return res


def per_core(records, res):
    return records / (res["wall"] * CORES)


def rate_cell(records, res):
    """records/s/core, left blank where the run gave no whole report."""
    return "" if res["why"] else rate(per_core(records, res))


def row1_part(work, job):
    """Row 1: the default command on RANKS x EVENTS."""
    print("Generated job, the default command `ringside report DIR -o OUT` (all outputs): %d ranks x %d"
          " records (gen_job: %s on disk, %.1f B per record, written in %.1f s)." %
          (RANKS, EVENTS, size(job["bytes"]), job["bytes"] / job["records"], job["secs"]))
    print()
    res = report(job["dir"], RANKS, work, "row1", keep_json=os.path.join(work, "one.json"))
    records = job["records"]
    print("| ranks | records | wall | CPU | records/s/core | peak memory | all outputs | result |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    print("| %d | %s | %s | %s | %s | %s | %s | %s |" %
          (RANKS, count(records), secs(res["wall"]), secs(res["cpu"]), rate_cell(records, res), size(res["rss"]),
           size(res["outputs"][-1][2]), res["why"] or "ok"))
    print()
    print("records/s/core = records / (wall x cores), cores = %d (the CPUs this run may use); by CPU time,"
          " records / CPU s = %s." % (CORES, rate(records / max(res["cpu"], 1e-9))))
    print()
    print("| output | files | size | per record |")
    print("|---|---:|---:|---:|")
    for label, files, b in res["outputs"]:
        print("| %s | %d | %s | %s B |" % (label, files, size(b), "%.1f" % (b / records) if b >= records
                                                     else "%.3f" % (b / records)))
    print()
    note = "" if (RANKS, EVENTS) == (64, 1000000) else " (set for 64 x 1M records; this job is %d x %d)" % (
        RANKS, EVENTS)
    print("The targets%s:" % note)
    print()
    print("| figure | measured | target | met |")
    print("|---|---:|---|---|")
    whole = res["why"] is None
    print("| peak memory | %s | <= %s | %s |" % (size(res["rss"]), size(TARGET_PEAK),
                                                yes(whole and res["rss"] <= TARGET_PEAK)))
    print("| all outputs | %s | <= %s | %s |" % (size(res["outputs"][-1][2]), size(TARGET_OUTPUTS),
                                                yes(whole and res["outputs"][-1][2] <= TARGET_OUTPUTS)))
    print("| records/s/core | %s | >= %s (4x the baseline: 64M records in 74 s on 2 cores, %s) | %s |" %
          (rate_cell(records, res), rate(TARGET_RATE), rate(BASE_RATE),
           yes(whole and per_core(records, res) >= TARGET_RATE)))
    print()
    return res


EXPORT_CPU_X = 2.0  # the whole-job Perfetto export against the report's CPU
EXPORT_MEM_X = 2.0  # ... and its peak memory


def export_part(work, job, row1):
    """Row 1b: `ringside export perfetto DIR -o FILE.pftrace` (every process,
    the whole job) on row 1's job, against row 1's report: CPU and peak."""
    out = os.path.join(work, "export.pftrace")
    cmd = [RINGSIDE, "export", "perfetto", job["dir"], "-o", out, "-q"]
    say("%s (limit %g GB)" % (" ".join(cmd), MEM_LIMIT_GB))
    res = run(cmd, work)
    why = failure(res)
    b = os.path.getsize(out) if os.path.isfile(out) else 0
    if os.path.exists(out):
        os.unlink(out)
    say("  wall %.1f s, peak %s, %s%s" % (res["wall"], size(res["rss"]), size(b), ": " + why if why else ""))
    print("The whole job's Perfetto export, `ringside export perfetto DIR -o FILE.pftrace`, on the same job,"
          " against the report above:")
    print()
    print("| command | wall | CPU | peak memory | output |")
    print("|---|---:|---:|---:|---:|")
    print("| report | %s | %s | %s | %s |" % (secs(row1["wall"]), secs(row1["cpu"]), size(row1["rss"]),
                                          size(row1["outputs"][-1][2])))
    print("| export | %s | %s | %s | %s |" % (secs(res["wall"]), secs(res["cpu"]), size(res["rss"]), size(b)))
    print()
    whole = why is None and row1["why"] is None and row1["cpu"] > 0 and row1["rss"] > 0
    cx = res["cpu"] / row1["cpu"] if whole else 0
    mx = res["rss"] / row1["rss"] if whole else 0
    print("| figure | measured | target | met |")
    print("|---|---:|---|---|")
    print("| export CPU / report CPU | %s | <= %gx | %s |" % ("%.2fx" % cx if whole else why or "-", EXPORT_CPU_X,
                                                          yes(whole and cx <= EXPORT_CPU_X)))
    print("| export peak / report peak | %s | <= %gx | %s |" % ("%.2fx" % mx if whole else "-", EXPORT_MEM_X,
                                                            yes(whole and mx <= EXPORT_MEM_X)))
    print()


def ran_out(res):
    """Whether the run stopped for want of memory: its peak is then a floor."""
    return bool(res["why"]) and res["why"].startswith(("out of memory", "killed by", "stopped: the machine"))


def flat_part(work, row1):
    """Row 2: peaks for EVENTS/4, EVENTS (row 1's run) and 4 EVENTS."""
    print("Memory flat in the job's length: %d ranks, the default command; target: every peak within"
          " %d%% of the first." % (RANKS, TARGET_FLAT * 100))
    print()
    print("| records a rank | records | job on disk | wall | peak memory | ratio to the first | met | result |")
    print("|---:|---:|---:|---:|---:|---:|---|---|")
    first = None
    ratios = []  # (ratio, exact); None where a row measured nothing
    for events in (max(1, EVENTS // 4), EVENTS, EVENTS * 4):
        if events == EVENTS and row1 is not None:
            res, records, nbytes = row1
        else:
            job = generate(RANKS, events, work)
            if isinstance(job, str):
                print("| %d | %s | | | | | | %s |" % (events, count(RANKS * events), job))
                ratios.append(None)
                continue
            res = report(job["dir"], RANKS, work, "flat%d" % events)
            records, nbytes = job["records"], job["bytes"]
            shutil.rmtree(job["dir"], ignore_errors=True)
        if not ratios:
            first = res["rss"] if res["why"] is None else None
        cell = met = ""
        if first and (res["why"] is None or ran_out(res)):
            r = res["rss"] / first
            ratios.append((r, res["why"] is None))
            cell = ("%.2f" if res["why"] is None else ">= %.2f") % r
            met = yes(res["why"] is None and abs(r - 1) <= TARGET_FLAT)
        else:
            ratios.append(None)
        print("| %d | %s | %s | %s | %s | %s | %s | %s |" %
              (events, count(records), size(nbytes), secs(res["wall"]), size(res["rss"]), cell, met,
               res["why"] or ("ok (row 1's run)" if events == EVENTS and row1 is not None else "ok")))
    print()
    if None in ratios:
        print("Memory flat: not measured (a row above gave no whole report, nor ran out of memory).")
    else:
        top = max(r for r, _ in ratios)
        print("Memory flat: largest peak / first peak %s%.2f (target <= %.2f): %s." %
              ("" if all(e for _, e in ratios) else ">= ", top, 1 + TARGET_FLAT,
               yes(all(e and abs(r - 1) <= TARGET_FLAT for r, e in ratios))))
    print()


def wide_part(work):
    """Row 3: WIDE_RANKS x WIDE_EVENTS."""
    print("Many ranks: %d ranks x %d records, the default command; target: peak memory <= %s." %
          (WIDE_RANKS, WIDE_EVENTS, size(TARGET_PEAK)))
    print()
    print("| ranks | records a rank | records | job on disk | wall | CPU | records/s/core | peak memory |"
          " all outputs | met | result |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    job = generate(WIDE_RANKS, WIDE_EVENTS, work)
    if isinstance(job, str):
        print("| %d | %d | %s | | | | | | | | %s |" % (WIDE_RANKS, WIDE_EVENTS, count(WIDE_RANKS * WIDE_EVENTS),
                                                     job))
    else:
        res = report(job["dir"], WIDE_RANKS, work, "wide")
        shutil.rmtree(job["dir"], ignore_errors=True)
        print("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" %
              (WIDE_RANKS, WIDE_EVENTS, count(job["records"]), size(job["bytes"]), secs(res["wall"]), secs(res["cpu"]),
               rate_cell(job["records"], res), size(res["rss"]), size(res["outputs"][-1][2]),
               yes(res["why"] is None and res["rss"] <= TARGET_PEAK), res["why"] or "ok"))
        print()
        hang_part(work, res)
    print()


def hang_part(work, plain):
    """Row 3 again with one rank that never enters the last all-reduce
    (gen_job -H): the verdict in report.json, its time and peak against row
    3's (within 10%)."""
    missing = WIDE_RANKS // 2 + 5
    print("The same job hung: rank %d never enters its last all-reduce, the others wait 30 s in it; "
          "target: the verdict names it, report time and peak within 10%% of the job without the hang." % missing)
    print()
    print("| ranks | wall | x without | peak memory | x without | verdict | met |")
    print("|---:|---:|---:|---:|---:|---|---|")
    job = generate(WIDE_RANKS, WIDE_EVENTS, work, hang_rank=missing)
    if isinstance(job, str):
        print("| %d | | | | | %s | |" % (WIDE_RANKS, job))
        return
    kept = os.path.join(work, "hang-report.json")
    res = report(job["dir"], WIDE_RANKS, work, "hang", keep_json=kept)
    shutil.rmtree(job["dir"], ignore_errors=True)
    verdict = "no report.json"
    named = False
    if os.path.isfile(kept):
        with open(kept) as f:
            h = json.load(f).get("hang") or {}
        os.unlink(kept)
        named = h.get("missing_ranks") == [missing]
        verdict = "%s, missing %s" % (h.get("kind"), h.get("missing_ranks"))
    tx = res["wall"] / plain["wall"] if plain["wall"] else 0
    mx = res["rss"] / plain["rss"] if plain["rss"] else 0
    print("| %d | %s | %.2fx | %s | %.2fx | %s | %s |" %
          (WIDE_RANKS, secs(res["wall"]), tx, size(res["rss"]), mx, res["why"] or verdict,
           yes(res["why"] is None and named and tx <= 1.10 and mx <= 1.10)))


def mpi_runner():
    """(mpirun, None) when row 4 can run, else (None, why not)."""
    if MPI == "0":
        return None, "MPI=0"
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return None, "there is no mpirun on PATH (Debian: openmpi-bin)"
    said = []
    for cmd in ([RINGSIDE, "--version"], [RINGSIDE, "report", "--help"], ["ldd", RINGSIDE]):
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
            said.append((p.stdout + p.stderr).decode(errors="replace"))
        except (OSError, subprocess.TimeoutExpired):
            pass
    text = "\n".join(said)
    built = bool(re.search(r"libmpi", text) or (
        re.search(r"\bMPI\b", text) and
        not re.search(r"\b(without|no|not built with)\s+MPI\b|\bMPI\W+(no|off|none|disabled)\b", text, re.I)))
    if not built and MPI != "1":
        version = said[0].strip().splitlines()[0] if said and said[0].strip() else "?"
        return None, ("%s was built without MPI: neither `ringside --version` ('%s') nor `ringside report "
                      "--help` nor its libraries (ldd) mention MPI" % (RINGSIDE, version))
    return mpirun, None


def flatten(v, path, into):
    if isinstance(v, dict):
        for k, x in v.items():
            flatten(x, "%s.%s" % (path, k) if path else k, into)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            flatten(x, "%s[%d]" % (path, i), into)
        if not v:
            into[path] = "[]"
    else:
        into[path] = v
    return into


def compare(a, b):
    """Key by key, all but the top-level `reporter`: (keys, [(key, a, b)])."""
    fa = flatten({k: v for k, v in a.items() if k != "reporter"}, "", {})
    fb = flatten({k: v for k, v in b.items() if k != "reporter"}, "", {})
    keys = sorted(set(fa) | set(fb))
    return len(keys), [(k, fa.get(k, "(absent)"), fb.get(k, "(absent)")) for k in keys
                       if k not in fa or k not in fb or fa[k] != fb[k]]


def mpi_part(work, job, row1):
    """Row 4: mpirun -n MPI_NP against row 1's one process."""
    mpirun, why = mpi_runner()
    if not mpirun:
        print("MPI: skipped: %s." % why)
        print()
        return
    if job is None or row1 is None or row1["why"]:
        print("MPI: skipped: row 1 gave no whole one-process report to compare with.")
        print()
        return
    prefix = [mpirun, "--allow-run-as-root", "--oversubscribe", "-n", str(MPI_NP)]
    print("MPI: `mpirun -n %d ringside report DIR -o OUT2` against one process, on row 1's job (%d x %d),"
          " %d cores." % (MPI_NP, RANKS, EVENTS, CORES))
    print()
    res = report(job["dir"], RANKS, work, "mpi", prefix, keep_json=os.path.join(work, "mpi.json"))
    print("| run | wall | CPU | peak memory (largest process) | speed-up (wall) | result |")
    print("|---|---:|---:|---:|---:|---|")
    print("| 1 process (row 1) | %s | %s | %s | 1.00x | ok |" % (secs(row1["wall"]), secs(row1["cpu"]), size(row1["rss"])))
    print("| mpirun -n %d | %s | %s | %s | %.2fx | %s |" %
          (MPI_NP, secs(res["wall"]), secs(res["cpu"]), size(res["rss"]), row1["wall"] / res["wall"], res["why"] or "ok"))
    print()
    if res["why"]:
        print("report.json: not compared (the mpirun run gave no whole report).")
        print()
        return
    try:
        with open(os.path.join(work, "one.json")) as f:
            one = json.load(f)
        with open(os.path.join(work, "mpi.json")) as f:
            many = json.load(f)
    except (OSError, ValueError) as e:
        print("report.json: not compared (%s)." % e)
        print()
        return
    keys, diffs = compare(one, many)
    if not diffs:
        print("report.json: the same, all %d keys but `reporter` compared: yes." % keys)
    else:
        close = sum(1 for _, x, y in diffs if isinstance(x, (int, float)) and isinstance(y, (int, float))
                    and abs(x - y) <= 1e-9 * max(abs(x), abs(y)))
        print("report.json: the same: no: %d of %d keys differ (%d only by a relative 1e-9 or less); the first:"
              % (len(diffs), keys, close))
        for k, x, y in diffs[:10]:
            print("    %s: %s (1 process) vs %s (mpirun)" % (k, json.dumps(x)[:60], json.dumps(y)[:60]))
    print()


def generated_part(work):
    t = time.perf_counter()
    job = generate(RANKS, EVENTS, work)
    row1 = None
    if isinstance(job, str):
        print("Generated job %d x %d: %s." % (RANKS, EVENTS, job))
        print()
        job = None
    else:
        res = row1_part(work, job)
        row1 = res
        export_part(work, job, row1)
    if SCALE:
        flat_part(work, (row1, job["records"], job["bytes"]) if job else None)
        if WIDE_RANKS > 0:
            wide_part(work)
        mpi_part(work, job, row1)
    if job:
        shutil.rmtree(job["dir"], ignore_errors=True)
    print("(generated jobs: %.0f s in all; memory limit %g GB a command, %s)" %
          (time.perf_counter() - t, MEM_LIMIT_GB, "SMALL sizes" if SMALL else "full sizes"))
    print()


def main():
    sys.stdout.reconfigure(line_buffering=True)  # in step with the progress lines on stderr
    for f in (RINGSIDE, GEN):
        if not os.path.isfile(f):
            sys.exit("bench_report: %s is missing (make %s)" % (f, f))
    os.makedirs(BENCH_TMP, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ringside-bench-report.", dir=BENCH_TMP)
    try:
        if not KINETO:
            print("Kineto traces: left out (KINETO=0)")
            print()
        elif os.path.isfile(os.path.join(DATA, "expected-hta.json")):
            kineto_part(work)
        else:
            print("Kineto traces: skipped, no %s" % DATA)
        if RANKS > 0:
            generated_part(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("Machine: %d CPUs (%s); load average %.2f at the end." %
          (os.cpu_count() or 0, os.uname().machine, os.getloadavg()[0]))


main()
