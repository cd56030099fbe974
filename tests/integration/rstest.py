"""Helpers for the integration tests: run a program under the agent, read
the report and the dump, and print one "ok NAME" / "not ok NAME: why" line
per check for tests/run.sh. Python standard library only."""
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
AGENT = os.path.join(BUILD, "libagent.so")
RINGSIDE = os.path.join(BUILD, "ringside")
PROG = os.path.join(BUILD, "tests", "prog")
# The interpreter itself, not a version manager's shell shim in front of it.
PYTHON = os.path.realpath(sys.executable)

_failed = 0


def check(name, cond, why=""):
    """Prints the result of one check; remembers failures for finish()."""
    global _failed
    if cond:
        print("ok " + name, flush=True)
    else:
        _failed += 1
        print("not ok %s: %s" % (name, why), flush=True)
    return cond


def report_problems(name, problems):
    """One check over a list of problems: ok when empty, else the first few."""
    more = " (and %d more)" % (len(problems) - 1) if len(problems) > 1 else ""
    ok = check(name, not problems, (problems[0] + more) if problems else "")
    for extra in problems[1:10]:
        print("    " + extra)
    return ok


def failures():
    """How many checks have failed so far."""
    return _failed


def relay(line, prefix):
    """Prints another test's result line ("ok ...", "not ok ...", "skip ...")
    with prefix put before its name, counting a failure as this test's own.
    Returns "ok", "not ok" or "skip", or None for any other line."""
    global _failed
    for word in ("not ok", "ok", "skip"):
        if line.startswith(word + " "):
            print("%s %s%s" % (word, prefix, line[len(word) + 1:]), flush=True)
            _failed += word == "not ok"
            return word
    return None


def skip(name, why):
    print("skip %s: %s" % (name, why), flush=True)


def finish():
    sys.exit(1 if _failed else 0)


def tempdir(prefix):
    d = tempfile.mkdtemp(prefix="rs-" + prefix + "-")
    return d


def cleanup(*dirs):
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


def traced_env(out, **extra):
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "SLURM_PROCID",
              "SLURM_JOB_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "RINGSIDE_RANK",
              "RINGSIDE_RANK_PID", "RINGSIDE_JOB"):
        env.pop(k, None)
    env["LD_PRELOAD"] = AGENT
    env["RINGSIDE_OUT"] = out
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(cmd, env=None, cwd=None, timeout=300, **kw):
    return subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout, capture_output=True, **kw)


def flame_shares(out, funcs, *args):
    """({function: weight}, total weight, the process) of `ringside flame
    out -o - ARGS`: a function's weight is that of the stacks it is in."""
    p = run([RINGSIDE, "flame", out, "-o", "-"] + list(args))
    by = dict.fromkeys(funcs, 0)
    total = 0
    for line in p.stdout.decode(errors="replace").splitlines():
        stack, _, w = line.rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")
        total += int(w)
        for k in by:
            if k in frames:
                by[k] += int(w)
    return by, total, p


def free_port():
    """A TCP port on loopback nobody listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def trace_files(out):
    found = []
    for base, _, files in os.walk(out):
        found += [os.path.join(base, f) for f in files if f.endswith(".trace.lz4")]
    return sorted(found)


def report(out):
    """report.json for every trace under out, as a dict."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        p = run([RINGSIDE, "report", out, "--json", path, "-q"])
        if p.returncode != 0:
            raise RuntimeError("ringside report failed: %s" % p.stderr.decode(errors="replace"))
        with open(path) as f:
            return json.load(f)
    finally:
        os.unlink(path)


def report_of(path, work, name):
    """(exit status, stderr lines, report.json's processes or None) of `ringside
    report PATH` (a list: PATH...) into WORK/NAME."""
    js = os.path.join(work, name + ".json")
    paths = path if isinstance(path, list) else [path]
    p = run([RINGSIDE, "report"] + paths + ["-o", os.path.join(work, name), "--json", js, "-q"])
    err = [l for l in p.stderr.decode(errors="replace").splitlines() if l.strip()]
    procs = None
    if p.returncode == 0:
        with open(js) as f:
            procs = json.load(f)["processes"]
    return p.returncode, err, procs


def dump(trace):
    """(records, exit status, stderr) of ringside dump."""
    p = run([RINGSIDE, "dump", trace])
    recs = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    return recs, p.returncode, p.stderr.decode(errors="replace")


def io_by_path(rep):
    """{path: [read_bytes, write_bytes]} summed over all processes."""
    tot = {}
    for p in rep["processes"]:
        for f in p["io"]["files"]:
            t = tot.setdefault(f["path"], [0, 0])
            t[0] += f["read_bytes"]
            t[1] += f["write_bytes"]
    return tot


def cpython(minor):
    """The newest pyenv-installed CPython 3.minor interpreter, or None."""
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv"), "/root/.pyenv"]
    for r in roots:
        found = sorted(glob.glob(os.path.join(r, "versions", "3.%d.*" % minor, "bin", "python3.%d" % minor)))
        if found:
            return found[-1]
    return None


def children(pid):
    """The pids of pid's children, [] when it is gone."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []
