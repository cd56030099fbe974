#!/usr/bin/env python3
"""NVTX ranges through NVTX's injection interface. tests/programs/nvtx_ranges
(the CUDA toolkit's header-only NVTX v3) makes nested push/pop ranges, start/
end ranges across two threads, a domain range named by a registered string,
push/pop interleaved across domains, a mark, a stray pop and a range left open,
and writes its own account of each (CLOCK_MONOTONIC read just before and just
after every NVTX call: the truth). Checked:
- the program's output (what the NVTX calls returned) and exit status are the
  same with and without the agent;
- every range of the truth is in `ringside dump` once, with its name, kind,
  domain, nesting depth, thread and ending thread, its start and end inside
  the truth's brackets and so its duration within them (TOL_NS either side),
  the range left open flagged, and nothing else;
- NVTX_INJECTION64_PATH already naming another library: left as it is, one
  notice, no ranges, the program unchanged; naming this agent: ranges;
- RINGSIDE_DISABLE=1: no trace and the variable not set;
- a child exec'd without LD_PRELOAD that inherits the variable: its NVTX calls
  answer as with no tool, no trace, no thread or signal handler of the agent's;
  also where the C library lets NVTX's dlopen of the agent succeed (more static
  TLS), so that the agent's constructor runs in a process that did not preload
  it;
- PyTorch's torch.cuda.nvtx, where the installed torch has NVTX."""
import json
import os
import re

from rstest import AGENT, PROG, RINGSIDE, check, cleanup, dump, finish, report_problems, run, skip, tempdir, \
    trace_files, traced_env

PROGRAM = os.path.join(PROG, "nvtx_ranges")
TOL_NS = 500_000  # the agent's clock (TSC mapped onto CLOCK_MONOTONIC) against the program's
NOTICE = "another tool takes NVTX"


def truth_of(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def ranges_of(trace):
    recs, rc, err = dump(trace)
    ranges = [r for r in recs if r["type"] == "range"]
    last = [r for r in recs if r["type"] == "chunk"][-1:]
    return ranges, (last[0].get("counters") or {}) if last else {}, rc, err


def compare(truth, got):
    """Problems between the program's account of its ranges and the dump's."""
    problems = []
    by_name = {}
    for r in got:
        by_name.setdefault(r["name_text"], []).append(r)
    for t in truth:
        found = by_name.pop(t["name"], [])
        if len(found) != 1:
            problems.append("%s: %d ranges recorded, wanted 1" % (t["name"], len(found)))
            continue
        r = found[0]
        want = {"kind": t["kind"], "domain_text": t["domain"], "depth": t["depth"], "tid": t["tid"],
                "end_tid": t["end_tid"], "flags": 1 if t["e1"] == 0 else 0}
        for k, v in want.items():
            if r[k] != v:
                problems.append("%s: %s %r, the program says %r" % (t["name"], k, r[k], v))
        if not t["s0"] - TOL_NS <= r["start_ns"] <= t["s1"] + TOL_NS:
            problems.append("%s: start %d not in the program's [%d, %d]" % (t["name"], r["start_ns"], t["s0"], t["s1"]))
        if t["e1"] == 0:  # left open: ends when the process ends
            if r["end_ns"] < t["s1"]:
                problems.append("%s: open range ends at %d, before its start" % (t["name"], r["end_ns"]))
            continue
        if not t["e0"] - TOL_NS <= r["end_ns"] <= t["e1"] + TOL_NS:
            problems.append("%s: end %d not in the program's [%d, %d]" % (t["name"], r["end_ns"], t["e0"], t["e1"]))
        dur, lo, hi = r["end_ns"] - r["start_ns"], t["e0"] - t["s1"], t["e1"] - t["s0"]
        if not lo - 2 * TOL_NS <= dur <= hi + 2 * TOL_NS:
            problems.append("%s: %.3f ms, the program measured %.3f to %.3f ms" % (t["name"], dur / 1e6, lo / 1e6, hi / 1e6))
    for name, extra in by_name.items():
        problems.append("%s: %d ranges the program did not make" % (name, len(extra)))
    return problems


def ranges_test():
    out, work = tempdir("nvtx"), tempdir("nvtx-work")
    try:
        plain_truth, traced_truth = os.path.join(work, "plain.json"), os.path.join(work, "traced.json")
        env = traced_env(out)
        env.pop("NVTX_INJECTION64_PATH", None)
        plain_env = dict(env)
        plain_env.pop("LD_PRELOAD")
        plain = run([PROGRAM, plain_truth], env=plain_env)
        traced = run([PROGRAM, traced_truth], env=env)
        check("nvtx: exit status unchanged", plain.returncode == traced.returncode == 0,
              "without %d, with %d: %s" % (plain.returncode, traced.returncode, traced.stderr.decode()))
        check("nvtx: output unchanged", plain.stdout == traced.stdout and b"-2" in plain.stdout,
              "%r vs %r" % (plain.stdout, traced.stdout))
        check("nvtx: nothing on stderr", traced.stderr == b"", traced.stderr.decode())
        files = trace_files(out)
        if not check("nvtx: one trace", len(files) == 1, str(files)):
            return
        got, counters, rc, err = ranges_of(files[0])
        check("nvtx: dump reads the trace", rc == 0, err)
        truth = truth_of(traced_truth)
        report_problems("nvtx: every range with its name, kind, domain, depth, threads and times",
                        compare(truth, got))
        check("nvtx: nothing dropped", counters.get("dropped_ranges") == 0, str(counters))
        report_problems("nvtx: ringside report's trace.json holds every range as a user annotation",
                        in_perfetto(truth, out, work))
    finally:
        cleanup(out, work)


def in_perfetto(truth, out, work):
    """Problems between the truth and the user annotations of report's
    trace.json: each range once, on its thread, with its duration and its
    start relative to the first range within the truth's brackets."""
    rep = os.path.join(work, "report")
    p = run([RINGSIDE, "report", out, "-o", rep, "-q"])
    if p.returncode != 0:
        return ["ringside report failed: %s" % p.stderr.decode()[-300:]]
    with open(os.path.join(rep, "trace.json")) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "user_annotation"]
    problems = []
    # the page: an "NVTX ranges" lane, whose rectangles name the ranges
    with open(os.path.join(rep, "index.html"), encoding="utf-8") as f:
        page = f.read()
    m = re.search(r'<script type="application/json" id="tl-names">(.*?)</script>', page, re.S)
    names = set()
    for table in json.loads(m.group(1)) if m else []:
        names.update(table.values())
    if "NVTX ranges" not in page:
        problems.append("index.html has no NVTX ranges lane")
    for t in truth:
        if t["e1"] != t["s0"] and t["kind"] != "mark" and t["name"] not in names:
            problems.append("%s: not among the page's lane names" % t["name"])
    if len(events) != len(truth):
        problems.append("%d annotations for %d ranges" % (len(events), len(truth)))
    by_name = {e["name"]: e for e in events}
    first_t = min(t["s0"] for t in truth)
    first_e = min((e["ts"] for e in events), default=0)
    for t in truth:
        e = by_name.get(t["name"])
        if not e:
            problems.append("%s: not in trace.json" % t["name"])
            continue
        end = t["e1"] if t["e1"] else None
        if e["tid"] != t["tid"]:
            problems.append("%s: tid %s, wanted %s" % (t["name"], e["tid"], t["tid"]))
        start_ns = (e["ts"] - first_e) * 1e3
        if not (t["s0"] - first_t - 2 * TOL_NS <= start_ns <= t["s1"] - first_t + 2 * TOL_NS):
            problems.append("%s: starts %.0f ns after the first, truth %d to %d" %
                            (t["name"], start_ns, t["s0"] - first_t, t["s1"] - first_t))
        if end is not None and not (t["e0"] - t["s1"] - TOL_NS <= e["dur"] * 1e3 <= end - t["s0"] + TOL_NS):
            problems.append("%s: lasts %.0f ns, truth %d to %d" % (t["name"], e["dur"] * 1e3, t["e0"] - t["s1"],
                                                                 end - t["s0"]))
        if (t["domain"] or None) != e["args"].get("domain"):
            problems.append("%s: domain %r, wanted %r" % (t["name"], e["args"].get("domain"), t["domain"]))
    return problems


def already_set():
    out, work = tempdir("nvtx-set"), tempdir("nvtx-set-work")
    try:
        other = os.path.join(work, "libother-tool.so")  # not there: NVTX's dlopen fails, no tool
        plain = run([PROGRAM, os.path.join(work, "p.json")], env=dict(traced_env(out), LD_PRELOAD=""))
        p = run([PROGRAM, os.path.join(work, "t.json")], env=traced_env(out, NVTX_INJECTION64_PATH=other))
        err = p.stderr.decode()
        check("already set: program unchanged", p.returncode == plain.returncode == 0 and p.stdout == plain.stdout,
              "%d %r" % (p.returncode, p.stdout))
        notices = [l for l in err.splitlines() if l.startswith("ringside:")]
        check("already set: one notice", len(notices) == 1 and NOTICE in notices[0] and other in notices[0], err)
        ranges = [r for f in trace_files(out) for r in ranges_of(f)[0]]
        check("already set: no ranges", not ranges, "%d ranges" % len(ranges))
        q = run(["sh", "-c", 'printf %s "$NVTX_INJECTION64_PATH"'], env=traced_env(out, NVTX_INJECTION64_PATH=other))
        check("already set: left as it is", q.stdout.decode() == other, q.stdout.decode())
        cleanup(out)
        p = run([PROGRAM, os.path.join(work, "u.json")], env=traced_env(out, NVTX_INJECTION64_PATH=AGENT))
        ranges = [r for f in trace_files(out) for r in ranges_of(f)[0]]
        check("set to the agent itself: ranges, no notice",
              p.returncode == 0 and p.stderr == b"" and len(ranges) == len(truth_of(os.path.join(work, "u.json"))),
              "%d ranges, stderr %r" % (len(ranges), p.stderr))
    finally:
        cleanup(out, work)


def disabled():
    out, work = tempdir("nvtx-off"), tempdir("nvtx-off-work")
    try:
        env = traced_env(out, RINGSIDE_DISABLE=1)
        env.pop("NVTX_INJECTION64_PATH", None)
        plain = run([PROGRAM, os.path.join(work, "p.json")], env=dict(env, LD_PRELOAD=""))
        p = run([PROGRAM, os.path.join(work, "t.json")], env=env)
        check("RINGSIDE_DISABLE=1: program unchanged, no trace",
              p.returncode == 0 and p.stdout == plain.stdout and p.stderr == b"" and not trace_files(out),
              "%d %r %s" % (p.returncode, p.stderr, trace_files(out)))
        q = run(["sh", "-c", 'printf %s "${NVTX_INJECTION64_PATH-unset}"'], env=env)
        check("RINGSIDE_DISABLE=1: NVTX_INJECTION64_PATH not set", q.stdout == b"unset", q.stdout.decode())
        q = run(["sh", "-c", 'printf %s "${NVTX_INJECTION64_PATH-unset}"'], env=dict(env, RINGSIDE_DISABLE="0"))
        check("traced: NVTX_INJECTION64_PATH names the agent",
              os.path.samefile(q.stdout.decode(), AGENT) if q.stdout.startswith(b"/") else False, q.stdout.decode())
    finally:
        cleanup(out, work)


PROBE_LINE = b"probe push -2 pop -2 threads 1 sigterm default\n"


def child_without_agent():
    out = tempdir("nvtx-child")
    try:
        env = traced_env(out)
        env.pop("NVTX_INJECTION64_PATH", None)
        plain = run([PROGRAM, "--exec-probe"], env=dict(env, LD_PRELOAD=""))
        p = run([PROGRAM, "--exec-probe"], env=env)
        check("exec'd child without LD_PRELOAD: runs unharmed",
              plain.stdout == p.stdout == PROBE_LINE + b"child exit 0\n" and p.returncode == 0,
              "%r / %r" % (plain.stdout, p.stdout))
        argvs = [r["argv"] for f in trace_files(out) for r in dump(f)[0] if r["type"] == "meta"]
        check("exec'd child without LD_PRELOAD: no trace of its own", not any("--probe" in a for a in argvs),
              str(argvs))
        cleanup(out)

        # The same child started directly: it inherited only the variable.
        base = dict(env, NVTX_INJECTION64_PATH=AGENT)
        base.pop("LD_PRELOAD")
        # With the C library's default static TLS the agent (initial-exec TLS)
        # cannot be dlopen'ed at all; with more, NVTX's dlopen succeeds and the
        # agent's constructor runs in a process that did not preload it.
        for label, extra in (("default TLS", {}),
                             ("dlopen succeeds", {"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=1048576",
                                                  "LD_DEBUG": "files"})):
            q = run([PROGRAM, "--probe"], env=dict(base, **extra))
            err = q.stderr.decode()
            check("inherited variable, %s: NVTX as with no tool" % label,
                  q.returncode == 0 and q.stdout == PROBE_LINE and not trace_files(out),
                  "%d %r %s" % (q.returncode, q.stdout, trace_files(out)))
            check("inherited variable, %s: the agent says nothing" % label, "ringside:" not in err, err[-500:])
            if extra:
                inits = len(re.findall(r"calling init: \S*libagent\.so", err))
                # NVTX's dlopen, then the probe's own: the agent was loaded and
                # its constructor ran both times, and did nothing.
                check("inherited variable, dlopen succeeds: NVTX loaded the agent", inits == 2 and
                      "injection library loads" in err, "%d inits" % inits)
    finally:
        cleanup(out)


def torch_nvtx():
    py = "/usr/bin/python3"
    code = ("import torch.cuda.nvtx as n\n"
            "try:\n    n.range_push('x'); n.range_pop(); print('ok')\n"
            "except Exception as e:\n    print('no: %s: %s' % (type(e).__name__, e))\n")
    p = run([py, "-c", code], env=dict(os.environ, LD_PRELOAD=""), timeout=300)
    if p.returncode != 0:
        skip("torch.cuda.nvtx", "%s finds no torch" % py)
        return
    said = p.stdout.decode().strip()
    if said != "ok":
        # Debian's python3-torch is built without CUDA: torch.cuda.nvtx raises.
        skip("torch.cuda.nvtx", "this torch has no NVTX (%s)" % said)
        return
    out = tempdir("nvtx-torch")
    try:
        code = "import torch.cuda.nvtx as n\nwith n.range('torch-step'):\n    n.mark('torch-mark')\n"
        q = run([py, "-c", code], env=traced_env(out), timeout=300)
        names = {r["name_text"] for f in trace_files(out) for r in ranges_of(f)[0]}
        check("torch.cuda.nvtx: ranges recorded", q.returncode == 0 and {"torch-step", "torch-mark"} <= names,
              str(names))
    finally:
        cleanup(out)


if not os.path.exists(PROGRAM):
    check("nvtx: %s is built" % PROGRAM, False, "run make test-build")
else:
    ranges_test()
    already_set()
    disabled()
    child_without_agent()
    torch_nvtx()
finish()
