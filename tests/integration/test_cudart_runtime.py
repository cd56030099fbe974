#!/usr/bin/env python3
"""The path PyTorch takes, half (a): the real CUDA runtime (libcudart of the toolkit, in a
small nvcc-built program, shared and static) initialises against the logging stand-in
driver build/tests/logcuda/libcuda.so.1, without and with the agent. The stand-in's log
is the truth: the runtime's cuGetProcAddress lookups (names, versions, flags, order) and
cuGetExportTable calls are the same either way and equal the recorded list
tests/data/cudart-X.Y-lookups.txt; and every slot of the runtime's own table that held
the stand-in's function for a hooked name holds, under the agent, a function of the
agent that reaches exactly that stand-in function (the right variant: the per-thread
one when the flags ask for it). How: at the runtime's first cuGetExportTable call the
stand-in scans the runtime's writable data for the pointers it holds, and calls each
one that is an interposer's to see which stand-in function it reaches. A control
interposer (tests/cudart/fakehook.c) shows the check passes a right wrapper and
catches a wrong one.

--record rewrites the recorded list from this machine's toolkit (make cudart-lookups)."""
import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rstest  # noqa: E402

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
NVCC = os.environ.get("NVCC", os.path.join(CUDA_HOME, "bin", "nvcc"))
LOGCUDA = os.path.join(rstest.BUILD, "tests", "logcuda")
CUDART = os.path.join(rstest.BUILD, "tests", "cudart")
DATA = os.path.join(rstest.ROOT, "tests", "data")
PTDS = 2  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

# What docs/agent.md says the agent captures, as the runtime asks for it (base names).
HOOKED_NAMES = {"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cuGraphLaunch",
                "cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize", "cuMemAlloc",
                "cuMemFree", "cuGetProcAddress", "cuGraphInstantiateWithFlags"}
HOOKED_PREFIXES = ("cuMemcpy", "cuMemset")


def hooked(symbol):
    return symbol in HOOKED_NAMES or symbol.startswith(HOOKED_PREFIXES)


def toolkit_release():
    """'13.0' from nvcc --version, or None."""
    try:
        out = subprocess.run([NVCC, "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError:
        return None
    m = re.search(r"release (\d+\.\d+), (V[\d.]+)", out)
    return (m.group(1), m.group(2)) if m else None


def parse_log(path):
    """The stand-in's log (or the recorded list): {"lookups": [(n, symbol, version, flags,
    via, status)], "answers": {n: (stub, variant)}, "exports": [uuid], "held": {offset:
    (what, ...)}, "calls": [...], "scan": (object, words)}."""
    log = {"lookups": [], "answers": {}, "exports": [], "held": {}, "calls": [], "scan": None, "probe": []}
    if not os.path.exists(path):
        return log
    with open(path) as f:
        for line in f:
            fld = line.rstrip("\n").split("\t")
            if fld[0] == "lookup":
                log["lookups"].append((int(fld[1]), fld[2], int(fld[3]), int(fld[4]), fld[5], fld[6]))
                if len(fld) >= 10:
                    log["answers"][int(fld[1])] = (fld[8], fld[9])
            elif fld[0] == "export":
                log["exports"].append(fld[1])
            elif fld[0] == "held":
                off = int(fld[1], 16)
                if fld[2] == "stub":
                    log["held"][off] = ("stub", int(fld[3]))
                elif fld[2] == "self":
                    log["held"][off] = ("self", fld[3])
                else:
                    log["held"][off] = ("other", fld[3], fld[4], fld[5].split(","), int(fld[6]))
            elif fld[0] == "call":
                log["calls"].append((fld[1], fld[2]))
            elif fld[0] == "scan":
                log["scan"] = (fld[1], int(fld[2]))
            elif fld[0].startswith("probe"):
                log["probe"].append(fld)
    return log


def run_runtime(prog, scan, agent, tmp, tag, **extra):
    """Runs an rt_init program against the stand-in, under the agent (agent=True),
    another interposer (agent=its path) or none; (log, process)."""
    logpath = os.path.join(tmp, tag + ".log")
    if agent is True:
        env = rstest.traced_env(os.path.join(tmp, tag + ".trace"))
    else:
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if agent:
            env["LD_PRELOAD"] = agent
    env.update(extra)
    env["LD_LIBRARY_PATH"] = LOGCUDA
    env["LOGCUDA_LOG"] = logpath
    env["LOGCUDA_SCAN"] = scan
    p = rstest.run([prog], env=env, timeout=120)
    return parse_log(logpath), p


def key(lookups):
    return [(s, v, f) for _, s, v, f, _, _ in lookups]


def write_data(path, release, log):
    with open(path, "w") as f:
        f.write("# The CUDA runtime's way to the driver: libcudart of CUDA %s (nvcc %s), shared,\n"
                "# initialising (cudaFree(0), cudaGetDeviceCount) against the logging stand-in\n"
                "# build/tests/logcuda/libcuda.so.1; recorded by `make cudart-lookups`\n"
                "# (tests/integration/test_cudart_runtime.py --record). Tab-separated lines:\n"
                "#   lookup N SYMBOL VERSION FLAGS VIA STATUS  one cuGetProcAddress call, in order;\n"
                "#     FLAGS 2 = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM; VIA v2 = the\n"
                "#     cuGetProcAddress_v2 dlsym gave, v2/M = the function lookup M gave; STATUS\n"
                "#     null = no symbolStatus passed. Lookup 0's symbol is the empty string.\n"
                "#   export UUID  one cuGetExportTable call (answered CUDA_ERROR_NOT_SUPPORTED),\n"
                "#     after which the runtime gives up.\n" % tuple(release))
        for n, s, v, fl, via, st in log["lookups"]:
            f.write("lookup\t%d\t%s\t%d\t%d\t%s\t%s\n" % (n, s, v, fl, via, st))
        for u in log["exports"]:
            f.write("export\t%s\n" % u)


def slot_problems(plain, traced, module, is_hooked):
    """Joins the two scans by offset in the runtime's table: every slot that held a
    stand-in function for a hooked name must hold a function of `module` that reaches
    it, of the same variant (per-thread or not); no slot may hold another function than
    before. (problems, {name: slots})."""
    stubs = {}  # stub (a number, or an export's name) -> (symbol, variant, lookups)
    for n, symbol, version, flags, _, _ in plain["lookups"]:
        stub, variant = plain["answers"][n]
        stubs.setdefault(stub, (symbol, variant, []))[2].append("%d (%s %d flags %d)" % (n, symbol, version, flags))
    getters = {k for k, (sym, _, _) in stubs.items() if sym == "cuGetProcAddress"} | {
        "cuGetProcAddress", "cuGetProcAddress_v2"}
    problems, wrapped = [], collections.Counter()
    for off, was in sorted(plain["held"].items()):
        now = traced["held"].get(off)
        key = str(was[1])
        symbol, variant, lookups = stubs.get(key, (key, key, ["-"]))
        desc = "%s, lookup %s" % (variant, " and ".join(lookups))
        want = getters if symbol == "cuGetProcAddress" else {key}  # a getter may forward through any
        if now is None:
            problems.append("%#x: held %s, nothing known under the agent" % (off, desc))
        elif now[0] == "other":
            _, mod, name, reached, _ = now
            if mod != module:
                problems.append("%#x: %s became a function of %s" % (off, desc, mod))
            elif not want & set(reached):
                problems.append("%#x: %s: %s's %s reaches %s" % (off, desc, mod, name, ",".join(reached)))
            elif name != "-" and bool(re.search(r"_pt(sz|ds)$", name)) != bool(re.search(r"_pt(sz|ds)$", variant)):
                problems.append("%#x: %s: %s's %s is not that variant" % (off, desc, mod, name))
            else:
                wrapped[symbol] += 1
        elif is_hooked(symbol):
            problems.append("%#x: %s is hooked, but the runtime holds the stand-in's function" % (off, desc))
        elif now != was:
            problems.append("%#x: %s became %r" % (off, desc, now))
    for off, now in traced["held"].items():
        if off not in plain["held"]:
            problems.append("%#x: holds %r only under the agent" % (off, now))
    return problems, wrapped


def check_control(prog, scan, tmp):
    """The slot check against a known interposer (tests/cudart/fakehook.c): it finds
    the right cuLaunchKernel wrappers, and catches the legacy one handed out for the
    per-thread lookup."""
    fake = os.path.join(LOGCUDA, "fakehook.so")
    plain, _ = run_runtime(prog, scan, False, tmp, "control-plain")
    results = {}
    for wrong in (False, True):
        extra = {"FAKEHOOK_WRONG": "1"} if wrong else {}
        log, p = run_runtime(prog, scan, fake, tmp, "control-%d" % wrong, **extra)
        problems, wrapped = slot_problems(plain, log, "fakehook.so", lambda s: s == "cuLaunchKernel")
        results[wrong] = (p.returncode, problems, wrapped)
    rc, problems, wrapped = results[False]
    rstest.check("control_right_interposer_passes", rc == 0 and not problems and wrapped["cuLaunchKernel"] >= 2,
                 "exit %d, %d cuLaunchKernel slots, problems %r" % (rc, wrapped["cuLaunchKernel"], problems[:3]))
    rc, problems, _ = results[True]
    caught = any("cuLaunchKernel_v7000_ptsz" in x and " reaches " in x for x in problems)
    rstest.check("control_wrong_variant_caught", rc == 0 and caught, "exit %d, problems %r" % (rc, problems[:3]))


def check_build(kind, prog, scan, tmp, recorded):
    plain, p1 = run_runtime(prog, scan, False, tmp, kind + "-plain")
    traced, p2 = run_runtime(prog, scan, True, tmp, kind + "-agent")
    ok = rstest.check("%s_runs" % kind, p1.returncode == 0 and p2.returncode == 0 and plain["lookups"],
                      "exit %d / %d, %d lookups: %s" % (p1.returncode, p2.returncode, len(plain["lookups"]),
                                                        (p1.stderr + p2.stderr).decode(errors="replace")[-300:]))
    if not ok:
        return
    print("# %s: %d lookups (%d per-thread), cuGetExportTable %s" % (
        kind, len(plain["lookups"]), sum(1 for l in plain["lookups"] if l[3] & PTDS), " ".join(plain["exports"])))
    rstest.check("%s_matches_recorded" % kind, recorded is not None and
                 [l[1:] for l in plain["lookups"]] == [l[1:] for l in recorded["lookups"]]
                 and plain["exports"] == recorded["exports"],
                 "differs from the recorded list (a toolkit change? `make cudart-lookups` shows it)"
                 if recorded else "no recorded list for this toolkit")
    a, b = key(plain["lookups"]), key(traced["lookups"])
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    rstest.check("%s_lookups_same_under_agent" % kind, a == b,
                 "%d vs %d lookups, first difference at %d: %r vs %r" % (
                     len(a), len(b), first, a[first:first + 1], b[first:first + 1]))
    rstest.check("%s_export_tables_same_under_agent" % kind, plain["exports"] == traced["exports"],
                 "%r vs %r" % (plain["exports"], traced["exports"]))
    # The scan sees the runtime's table: without the agent it holds the stand-in's
    # functions, one slot (or more) for every lookup with a name.
    held = {str(h[1]) for h in plain["held"].values()}
    named = {plain["answers"][n][0] for n, s, _, _, _, _ in plain["lookups"] if s}
    others = [h for h in plain["held"].values() if h[0] == "other"]
    rstest.check("%s_scan_sees_table" % kind, plain["scan"] and plain["scan"][0] != "-" and named <= held
                 and not others, "scan %r; %d lookups not held; %d foreign pointers"
                 % (plain["scan"], len(named - held), len(others)))
    problems, wrapped = slot_problems(plain, traced, os.path.basename(rstest.AGENT), hooked)
    need = {s for _, s, _, _, _, _ in plain["lookups"] if hooked(s)}
    missing = sorted(need - set(wrapped))
    # The runtime keeps its table twice: one line per lookup, with its slots.
    slots = collections.OrderedDict()
    for p in problems:
        off, _, what = p.partition(": ")
        slots.setdefault(what, []).append(off)
    bare = [w.split(",")[0] for w in slots if w.endswith("holds the stand-in's function")]
    summary = ["%d variants not wrapped: %s" % (len(bare), " ".join(sorted(bare)))] if bare else []
    rstest.report_problems("%s_hooked_slots_hold_agent_wrappers" % kind, summary +
                           ["%s (slots %s)" % (what, " ".join(offs)) for what, offs in slots.items()]
                           + ["%s: no slot holds the agent's wrapper" % s for s in missing])
    print("# %s: %d slots hold the agent's functions (%d names)" % (kind, sum(wrapped.values()), len(wrapped)))


def main():
    record = "--record" in sys.argv[1:]
    release = toolkit_release()
    progs = [("shared", os.path.join(CUDART, "rt_init_shared"), "libcudart.so"),
             ("static", os.path.join(CUDART, "rt_init_static"), "")]
    if not release or not os.path.exists(NVCC):
        rstest.skip("cudart_runtime", "no nvcc at %s (CUDA toolkit missing; set CUDA_HOME)" % NVCC)
        rstest.finish()
    missing = [p for _, p, _ in progs if not os.path.exists(p)]
    if missing or not os.path.exists(os.path.join(LOGCUDA, "libcuda.so.1")):
        rstest.check("cudart_built", False, "not built: %s (make test-build)" % " ".join(missing))
        rstest.finish()
    data = os.path.join(DATA, "cudart-%s-lookups.txt" % release[0])
    tmp = rstest.tempdir("cudart")
    try:
        if record:
            log, p = run_runtime(progs[0][1], progs[0][2], False, tmp, "record")
            if p.returncode != 0 or not log["lookups"]:
                sys.exit("recording failed: exit %d, %d lookups" % (p.returncode, len(log["lookups"])))
            os.makedirs(DATA, exist_ok=True)
            write_data(data, release, log)
            print("%s: %d lookups, %d export tables" % (data, len(log["lookups"]), len(log["exports"])))
            return
        recorded = parse_log(data) if os.path.exists(data) else None
        check_control(progs[0][1], progs[0][2], tmp)
        for kind, prog, scan in progs:
            check_build(kind, prog, scan, tmp, recorded)
    finally:
        rstest.cleanup(tmp)
    rstest.finish()


if __name__ == "__main__":
    main()
