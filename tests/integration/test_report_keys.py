#!/usr/bin/env python3
"""report.json's keys against their one declaration, formats/report.schema.json:

- the writer: real reports (a simulated 4-rank job with data loading,
  checkpoints, evaluation, a stalled step, CUDA graphs, wait samples and
  node metrics from a fake /sys and /proc; the same traces under --watch and
  with one file cut short and one damaged; 8 ranks as 2 nodes, tensor and
  pipeline parallel; a straggler slowed in its kernels; a rank slowed in
  data loading, with many short kernels; a rank leaking GPU memory through a
  caching allocator until it runs out; a process that starts a compiler
  and an Inductor compile worker; a program removed before its report; two
  real Kineto traces and one of 1,600 steps written here) hold no key the
  schema does not declare, every value of its declared type, and together
  write every key the schema declares;
- the readers: every key the page, diff, history and the Prometheus writer
  look up (the C files that call the rsr_jv_* helpers, html_json.h) is
  declared;
- docs/report-json.md is what tools/scripts/report_json_doc.py makes of the schema;
- the check itself: a report with one key added that the schema does not
  declare fails it, naming the key.

    test_report_keys.py                  # all of the above
    test_report_keys.py --report FILE... # FILEs' keys and types alone"""
import glob
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import (AGENT, BUILD, PROG, PYTHON, RINGSIDE, ROOT, check, cleanup, finish,  # noqa: E402
                    report_problems, run, skip, tempdir)

sys.path.insert(0, os.path.join(ROOT, "tools", "scripts"))
import report_json_doc  # noqa: E402

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
KINETO = os.path.join(os.path.dirname(ROOT), "shared", "data", "kineto")
if not os.path.isdir(KINETO):
    KINETO = "/work/shared/data/kineto"

# What the readers look up, or spell like a key, that is no key of
# report.json: diff.json's own keys (ringside-diff/1), which diff.c writes
# and history.c reads back. Prometheus metric names (ringside_*) are told
# apart by their prefix.
NOT_KEYS = {"after", "before", "delta", "busbw_after", "busbw_before", "busiest_stream_host_wait_pct",
            "busiest_stream_kernel_wait_pct", "busiest_stream_other_idle_pct", "count_after", "count_before",
            "delta_pct", "mean_us_after", "mean_us_before", "median_step_ms", "step_ms", "total_us_after",
            "total_us_before"}


# ---- the schema ----

def declared(schema, path="", out=None):
    """{path: schema} of every key the schema declares, paths as the page
    writes them: processes[].gpu.idle_pct, processes[].comm_by_role.*.time_pct."""
    out = {} if out is None else out
    for key, s in schema.get("properties", {}).items():
        p = path + "." + key if path else key
        out[p] = s
        sub = report_json_doc.sub_object(s)
        if sub:
            declared(sub, report_json_doc.path_of(path, key, s), out)
    return out


def type_ok(v, t):
    """Whether JSON value v is of JSON Schema type t (a name or a list)."""
    if isinstance(t, list):
        return any(type_ok(v, x) for x in t)
    return {"null": v is None, "boolean": isinstance(v, bool),
            "integer": isinstance(v, int) and not isinstance(v, bool),
            "number": isinstance(v, (int, float)) and not isinstance(v, bool),
            "string": isinstance(v, str), "array": isinstance(v, list), "object": isinstance(v, dict)}[t]


def walk(v, s, path, seen, problems):
    """Checks value v against schema s at path; adds each key path met to seen."""
    if not type_ok(v, s["type"]):
        problems.append("%s: %s is not %s" % (path or "the top level", json.dumps(v)[:60], s["type"]))
        return
    if "const" in s and v != s["const"]:
        problems.append("%s: %r, not %r" % (path, v, s["const"]))
    if isinstance(v, list):
        for x in v:
            walk(x, s["items"], path + "[]", seen, problems)
    elif isinstance(v, dict):
        if "propertyNames" in s:
            for k, x in v.items():
                if k not in s["propertyNames"]["enum"]:
                    problems.append("%s: key %r is none of %s" % (path, k, s["propertyNames"]["enum"]))
                walk(x, s["additionalProperties"], path + ".*", seen, problems)
            return
        for k, x in v.items():
            p = path + "." + k if path else k
            if k not in s["properties"]:
                problems.append("%s: written but not declared in formats/report.schema.json" % p)
                continue
            seen.add(p)
            walk(x, s["properties"][k], p, seen, problems)


def check_report(name, rep, schema, seen):
    problems = []
    walk(rep, schema, "", seen, problems)
    return report_problems(name + ": every key declared, every value of its type", list(dict.fromkeys(problems)))


# ---- the jobs ----

def put(root, path, text):
    p = os.path.join(root, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)


def fake_sys(root):
    """A node's /sys and /proc for the metrics sampler (RINGSIDE_TEST_SYSFS):
    an InfiniBand port, a disk, an NFS mount, CPU and memory."""
    port = "sys/class/infiniband/mlx5_0/ports/1/"
    put(root, port + "rate", "400 Gb/sec (4X NDR)\n")
    put(root, port + "link_layer", "InfiniBand\n")
    put(root, port + "counters/port_xmit_data", "1000\n")
    put(root, port + "counters/port_rcv_data", "2000\n")
    os.makedirs(os.path.join(root, "sys/block/sda"), exist_ok=True)
    put(root, "proc/diskstats", "   8       0 sda 10 0 100 5 20 0 200 9 0 0 0 0 0 0 0 0 0\n")
    put(root, "proc/self/mountstats", "device srv:/export mounted on /mnt/ckpt with fstype nfs4 statvers=1.1\n"
        "\topts:\trw\n\tbytes:\t1 2 0 0 3 4 0 0\n")
    put(root, "proc/stat", "cpu  100 0 100 800 0 0 0 0 0 0\n")
    put(root, "proc/meminfo", "MemTotal: 1000000 kB\nMemFree: 1 kB\nMemAvailable: 250000 kB\nDirty: 2048 kB\n")


def make_report(name, trace, out, *args):
    """report.json of `ringside report TRACE -o OUT ARGS`, or None."""
    p = run([RINGSIDE, "report", trace, "-o", out, "-q"] + list(args), timeout=120)
    if not check(name + ": report succeeds", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        return None
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def launch_env(d, **extra):
    """The environment of a simlaunch job whose traces go to D/trace: no
    launcher's or earlier run's variables, the stand-ins, the agent."""
    e = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LD_PRELOAD", "RINGSIDE_JOB",
              "RINGSIDE_RANK_PID", "RINGSIDE_SERIES"):
        e.pop(k, None)
    e.update(LD_LIBRARY_PATH=SIM, RINGSIDE_OUT=os.path.join(d, "trace"), AGENT_SO=AGENT)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def sim(work, name, world, args, nodes=0, **env):
    """simtrain on WORLD ranks under simlaunch, the agent in the ranks;
    (its trace folder, its report.json) or (None, None)."""
    d = os.path.join(work, name)
    os.makedirs(os.path.join(d, "ckpt"))
    e = launch_env(d, SIMNCCL_TIMEOUT_S="60", **env)
    cmd = [LAUNCH, "-n", str(world)] + (["--nodes", str(nodes)] if nodes else []) + \
        ["--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", TRAIN] + \
        [a.replace("CKPT", os.path.join(d, "ckpt")) for a in args]
    p = run(cmd, env=e, timeout=120)
    if not check(name + ": simtrain runs", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        return None, None
    trace = os.path.join(d, "trace")
    return trace, make_report(name, trace, os.path.join(d, "report"))


def cut_copy(work, trace):
    """The traces again with one file cut to 3/4 and another overwritten in
    its middle; its report.json or None."""
    cut = os.path.join(work, "cut")
    shutil.copytree(trace, cut)
    files = sorted(glob.glob(os.path.join(cut, "**", "*.trace.lz4"), recursive=True))
    size = os.path.getsize(files[1])
    os.truncate(files[1], size * 3 // 4)
    with open(files[2], "r+b") as f:
        f.seek(os.path.getsize(files[2]) // 3)
        f.write(b"\xff" * 64)
    return make_report("cut and damaged files", cut, os.path.join(work, "cut-report"))


def compile_job(work):
    """A rank that starts a C compiler (by argv[0]) and an Inductor compile
    worker (by its argv): report.json or None."""
    d = os.path.join(work, "compile")
    os.makedirs(d)
    script = os.path.join(d, "parent.py")
    with open(script, "w") as f:
        f.write("import subprocess, sys\n"
                "subprocess.run(['cc', '-c', 'pass'], executable=sys.executable)\n"
                "subprocess.run([sys.executable, '-c', 'pass', 'torch/_inductor/compile_worker'])\n")
    e = dict(os.environ, LD_PRELOAD=AGENT, RINGSIDE_OUT=os.path.join(d, "trace"), RANK="0", WORLD_SIZE="1")
    for k in ("RINGSIDE_JOB", "RINGSIDE_RANK_PID", "LOCAL_RANK", "TORCHELASTIC_RUN_ID"):
        e.pop(k, None)
    p = run([PYTHON, script], env=e, timeout=60)
    if not check("compile: the processes run", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        return None
    return make_report("compile", os.path.join(d, "trace"), os.path.join(d, "report"))


def gone(work):
    """flame_hot's CPU samples with its file removed before the report: its
    addresses stay unnamed. report.json or None."""
    d = os.path.join(work, "gone")
    os.makedirs(d)
    hot = os.path.join(d, "flame_hot")
    shutil.copy(os.path.join(PROG, "flame_hot"), hot)
    e = dict(os.environ, LD_PRELOAD=AGENT, RINGSIDE_OUT=os.path.join(d, "trace"), RINGSIDE_SAMPLE_HZ="999")
    for k in ("RANK", "WORLD_SIZE", "RINGSIDE_JOB", "RINGSIDE_RANK_PID", "LOCAL_RANK", "TORCHELASTIC_RUN_ID"):
        e.pop(k, None)
    p = run([hot, "0.3"], env=e, timeout=60)
    os.unlink(hot)
    if not check("removed program: runs", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        return None
    return make_report("removed program", os.path.join(d, "trace"), os.path.join(d, "report"))


def kineto(work, name, files):
    job = os.path.join(work, name + "-job")
    p = run([RINGSIDE, "import-kineto", "-q"] + files + ["-o", job], timeout=120)
    if not check(name + ": import-kineto succeeds", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        return None
    return make_report(name, job, os.path.join(work, name + "-report"))


def many_steps(work):
    """A Kineto trace of more steps than report.json's step series holds
    (1,500): 1,600 ProfilerStep# annotations of 1 ms, a kernel in each."""
    events = []
    for i in range(1600):
        events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1, "tid": 1,
                       "ts": i * 1000, "dur": 990})
        events.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": i * 1000 + 10,
                       "dur": 500 + i % 7, "args": {"device": 0, "stream": 7}})
    path = os.path.join(work, "steps.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": events, "distributedInfo": {"rank": 0, "world_size": 1}}, f)
    return path


def hung(work):
    """2 ranks, rank 1 stalled before step 3's first AllReduce, the job
    killed with SIGTERM after 3 s: report.json (its hang) or None."""
    d = os.path.join(work, "hung")
    os.makedirs(d)
    e = launch_env(d, SIMNCCL_TIMEOUT_S="600")
    p = run(["timeout", "-s", "TERM", "3", LAUNCH, "-n", "2", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; '
             'exec "$@"', "sh", TRAIN, "--steps", "10", "--layers", "2", "--stall", "1:3:600", "--ckpt-dir", d],
            env=e, timeout=60)
    if not check("hung: killed after 3 s", p.returncode == 124, p.stderr.decode(errors="replace")[-300:]):
        return None
    return make_report("hung", os.path.join(d, "trace"), os.path.join(d, "report"))


def memory_oom(work):
    """2 ranks, rank 1 leaking 64 MiB a step through the caching allocator
    on a 1 GiB device until it runs out (a retry got past first): report.json
    (its memory, out-of-memory and leak) or None."""
    d = os.path.join(work, "memory")
    os.makedirs(d)
    e = launch_env(d, SIMNCCL_TIMEOUT_S="20", SIMGPU_MEM_MB="1024")
    p = run([LAUNCH, "-n", "2", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; [ "$RANK" = 1 ] && '
             'set -- "$@" --leak-mb 64; exec "$@"', "sh", TRAIN, "--steps", "40", "--layers", "2", "--cache"],
            env=e, timeout=60)
    if not check("memory: rank 1 runs out of memory (status 1)", p.returncode == 1,
                 p.stderr.decode(errors="replace")[-300:]):
        return None
    return make_report("memory", os.path.join(d, "trace"), os.path.join(d, "report"))


def reports(work):
    """[(name, report.json)] of the jobs above."""
    got = []
    sys_root = os.path.join(work, "sys")
    fake_sys(sys_root)
    trace, rep = sim(work, "4 ranks", 4, ["--steps", "24", "--layers", "4", "--data-us", "2000", "--ckpt-every", "10",
                                          "--ckpt-mb", "8", "--ckpt-dir", "CKPT", "--eval-every", "8",
                                          "--stall", "1:15:0.3", "--graph"],
                     RINGSIDE_SAMPLE_HZ=200, RINGSIDE_METRICS_HZ=20, RINGSIDE_TEST_SYSFS=sys_root, RINGSIDE_FLUSH_MS=20)
    got.append(("4 ranks", rep))
    if trace:
        got.append(("4 ranks, --watch", make_report("4 ranks, --watch", trace, os.path.join(work, "watch"),
                                                    "--watch", "0.2")))
        got.append(("cut and damaged files", cut_copy(work, trace)))
    got.append(("tp 2, pp 2, 2 nodes", sim(work, "tp 2, pp 2, 2 nodes", 8,
                                           ["--tp", "2", "--pp", "2", "--steps", "12", "--layers", "4", "--act-mb", "2",
                                            "--bucket-mb", "8", "--fwd-us", "100", "--bwd-us", "200",
                                            "--stage-slow", "1:1.5"], nodes=2)[1]))
    got.append(("straggler", sim(work, "straggler", 2, ["--steps", "20", "--straggler", "1:3.0", "--fwd-us", "1000",
                                                       "--bwd-us", "2000"])[1]))
    got.append(("slow data, short kernels", sim(work, "slow data, short kernels", 2,
                                                ["--steps", "12", "--layers", "2", "--no-overlap", "--slow-data",
                                                 "1:6000", "--kernels-per-layer", "60", "--fwd-us", "120",
                                                 "--bwd-us", "240"], RINGSIDE_SAMPLE_HZ=500)[1]))
    got.append(("hung", hung(work)))
    got.append(("memory", memory_oom(work)))
    got.append(("1,600 Kineto steps", kineto(work, "kineto-steps", [many_steps(work)])))
    got.append(("compile", compile_job(work)))
    got.append(("removed program", gone(work)))
    if os.path.isdir(KINETO):
        sampled = sorted(glob.glob(os.path.join(KINETO, "sampled-2rank", "*.json.gz")))
        got.append(("kineto sampled-2rank", kineto(work, "kineto sampled-2rank", sampled)))
        got.append(("kineto a100-2rank", kineto(work, "kineto a100-2rank",
                                                [os.path.join(KINETO, "a100-2rank-r0-nccl.json.gz")])))
    else:
        skip("real Kineto traces", "no " + KINETO)
    return [(n, r) for n, r in got if r is not None]


# ---- the readers ----

LOOKUP = re.compile(r'rsr_jv_k(?:ey|num|num_or|str)\(\s*[^;]*?,\s*"([^"]*)"')
SNAKE = re.compile(r'"([a-z][a-z0-9]*(?:_[a-z0-9]+)+)"')
# A key given to the JSON writer (reporter/base/json.h) is written, not
# looked up: a reader that also writes (diff.json, the page's data) says so.
WRITTEN = re.compile(r'\brsr_jw_k?(?:ey|object|array|str|num|fixed|int|uint|int_or_null|milli|bool)'
                     r'\(\s*[^,;]*,\s*"[^"]*"')


def reader_keys():
    """{key: [file, ...]} of what the readers look up: the string literal
    given to an rsr_jv_k* helper, and any snake_case literal in a reader
    (keys kept in tables or passed through a reader's own helper)."""
    keys = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "reporter", "*", "*.c"))):
        name = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as f:
            src = f.read()
        if "rsr_jv_" not in src or name == "reporter/out/html_json.c":
            continue
        code = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
        code = WRITTEN.sub("", code)
        for k in LOOKUP.findall(code) + SNAKE.findall(code):
            if k not in NOT_KEYS and not k.startswith("ringside_"):
                keys.setdefault(k, []).append(name)
    return keys


# ---- the checks ----

def self_check(schema, rep):
    """A key added to a real report without declaring it fails, named."""
    rep = json.loads(json.dumps(rep))
    proc = rep["processes"][0]
    proc.setdefault("gpu", {})["undeclared_pct"] = 1.5
    problems = []
    walk(rep, schema, "", set(), problems)
    check("a key added without declaring it fails the check, named",
          problems == ["processes[].gpu.undeclared_pct: written but not declared in formats/report.schema.json"],
          "; ".join(problems[:3]) or "nothing found")


def main():
    schema = report_json_doc.load()
    decl = declared(schema)
    if sys.argv[1:2] == ["--report"]:
        for path in sys.argv[2:]:
            with open(path) as f:
                check_report(path, json.load(f), schema, set())
        finish()
    with open(report_json_doc.DOC, encoding="utf-8") as f:
        doc = f.read()
    check("docs/report-json.md is what tools/scripts/report_json_doc.py writes from the schema",
          doc == report_json_doc.render(schema), "run python3 tools/scripts/report_json_doc.py")
    work = tempdir("report-keys")
    try:
        got = reports(work)
        seen = set()
        for name, rep in got:
            check_report(name, rep, schema, seen)
        if got:
            self_check(schema, got[0][1])
        report_problems("every declared key is written by one of the %d reports (%d keys)" % (len(got), len(decl)),
                        ["%s: declared, written by none" % p for p in decl if p not in seen])
    finally:
        cleanup(work)
    names = {p.rsplit(".", 1)[-1] for p in decl}
    for s in decl.values():
        names.update(s.get("propertyNames", {}).get("enum", []))
    looked = reader_keys()
    report_problems("every key the readers look up is declared (%d keys)" % len(looked),
                    ["%s (%s): looked up, not declared" % (k, ", ".join(sorted(set(f))))
                     for k, f in sorted(looked.items()) if k not in names])
    finish()


if __name__ == "__main__":
    main()
