#!/usr/bin/env python3
"""A child that shares the parent's memory (tests/programs/vm_child.c: vfork,
clone(CLONE_VM|CLONE_VFORK), posix_spawn; a failed exec in a vfork child)
resets every signal handler, copies and closes fds (dup2, close,
close_range), changes directory and execs: none of it may change the agent's
state in the parent. The parent spins for the same CPU time before and after
the child (the truth: halves of its sampled CPU time, within 5 points or 4
sd: sampled.py), reads a file opened before the child to its end (the truth:
the file's size, under its own path) and a file relative to its own
directory (the child's chdir is the child's); its output and exit status are
those of a run without the agent, no notice is printed, and its trace ends
with the end mark. A child that runs at the same time on the parent's TLS
(clone with CLONE_VM alone) ends the trace with a notice, the program
unchanged."""
import os

from rstest import PROG, check, cleanup, dump, finish, report, run, tempdir, trace_files, traced_env
from samples import Trace
from sampled import effective_n, share_check

VM_CHILD = os.path.join(PROG, "vm_child")
SPIN = "0.6"
HALVES = {"spin_before": 50.0, "spin_after": 50.0}


def setup(work):
    data = os.path.join(work, "data.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(300000))
    with open(os.path.join(work, "rel.dat"), "wb") as f:
        f.write(os.urandom(12345))
    return data


def ended(trace):
    recs, rc, _ = dump(trace)
    return rc == 0 and any(r.get("type") == "chunk" and r.get("end") for r in recs)


def one_mode(mode):
    work = tempdir("vmchild-work")
    data = setup(work)
    args = [VM_CHILD, mode, data, SPIN]
    plain = run(args, cwd=work)
    out = tempdir("vmchild")
    p = run(args, cwd=work, env=traced_env(out, RINGSIDE_SAMPLE_HZ=999))
    err = p.stderr.decode(errors="replace")
    check("%s: same output and status as without the agent" % mode,
          p.returncode == plain.returncode == 0 and p.stdout == plain.stdout,
          "rc %d/%d, %r vs %r %s" % (p.returncode, plain.returncode, p.stdout, plain.stdout, err[-300:]))
    files = trace_files(out)
    if mode == "clone-vm":
        check("%s: a notice says tracing ends" % mode, "tracing ends here" in err, err[-300:])
        check("%s: the trace ends with the end mark" % mode, len(files) == 1 and ended(files[0]),
              "%d files" % len(files))
        cleanup(out, work)
        return
    check("%s: no notice" % mode, "ringside:" not in err, err[-300:])
    if not check("%s: one trace file (the exec'd child records nothing)" % mode, len(files) == 1,
                 "%d files: %s" % (len(files), files)):
        cleanup(out, work)
        return
    check("%s: the trace ends with the end mark" % mode, ended(files[0]), "no end chunk")
    t = Trace(files[0])
    cpu = t.of_kind("cpu")
    # CPU time, not counts: each sample weighs the CPU time since the
    # last, which makes up for a kernel tick that missed the thread on a
    # busy machine (which a count of the halves, far apart, does not)
    spent, weights = dict.fromkeys(HALVES, 0), []
    for s in cpu:
        ns = [n for n in t.names(s) if n in HALVES]
        if ns:
            spent[ns[0]] += s["weight_ns"]
            weights.append(s["weight_ns"])
    check("%s: samples in both spins" % mode, len(weights) >= 80 and all(spent.values()),
          "%d of %d samples, %s" % (len(weights), len(cpu), spent))
    total = sum(spent.values())
    for fn, want in HALVES.items():
        share_check("%s: %s's share of the sampled CPU time" % (mode, fn), 100.0 * spent[fn] / total if total else 0.0,
                    want, effective_n(weights), floor=5.0)
    rep = report(out)
    files_io = {f["path"]: f for pr in rep["processes"] for f in pr["io"]["files"]}
    size = os.path.getsize(data)
    got_data = files_io.get(data, {}).get("read_bytes")
    check("%s: bytes read from the file opened before the child = its size" % mode, got_data == size,
          "%r of %d; paths %s" % (got_data, size, sorted(files_io)[:6]))
    rel = os.path.join(work, "rel.dat")
    got_rel = files_io.get(rel, {}).get("read_bytes")
    check("%s: a relative path after the child's chdir is the parent's" % mode,
          got_rel == os.path.getsize(rel), "%r at %s; paths %s" % (got_rel, rel, sorted(files_io)[:6]))
    cleanup(out, work)


def main():
    for mode in ("vfork", "vfork-fail", "clone", "spawn", "clone-vm"):
        one_mode(mode)
    finish()


main()
