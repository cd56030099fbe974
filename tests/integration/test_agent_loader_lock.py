#!/usr/bin/env python3
"""Nothing in a hook waits for the writer while the writer could wait for
that hook's thread: the loader's lock, held by a thread running a library's
constructor inside dlopen, is never one the writer takes.
tests/programs/ctor_loader loads and unloads tests/programs/lib/
ctor_dlclose.so, whose constructor calls dlclose and a dlsym the agent
answers (as UCX's libucm does when PyTorch 2.x is imported, which once cost
`import torch` eight 5-second stalls):

- five loads take under 2.5 s by the program's own clock (one stall was 5 s
  a call), with no "did not answer" notice at RINGSIDE_LOG=2, the program's
  output and status as without the agent, and the trace whole (end mark)
  with the library in its module map (taken before each unload);
- the constructor calling exit(7) inside dlopen: status 7 as without the
  agent, the trace ended (its end mark written by that exit's flush), no
  notice that the trace was not finished."""
import os

from rstest import PROG, check, cleanup, dump, finish, run, tempdir, trace_files, traced_env

LOADER = os.path.join(PROG, "ctor_loader")
LIB = os.path.join(PROG, "libctor_dlclose.so")


def ended(path):
    recs, rc, err = dump(path)
    chunks = [r for r in recs if r["type"] == "chunk"]
    return rc == 0 and bool(chunks) and chunks[-1].get("end") is True, recs


def main():
    plain = run([LOADER, LIB, "5"])
    out = tempdir("loader-lock")
    p = run([LOADER, LIB, "5"], env=traced_env(out, RINGSIDE_LOG=2, RINGSIDE_SAMPLE_HZ=999))
    err = p.stderr.decode()
    words = p.stdout.decode().split()
    check("exit status as without the agent", p.returncode == plain.returncode == 0,
          "%d vs %d: %s" % (p.returncode, plain.returncode, err[-300:]))
    ms = float(words[3]) if len(words) == 4 and words[0] == "loads" else None
    check("five loads in under 2.5 s", ms is not None and ms < 2500, p.stdout.decode() + err[-300:])
    check("no flush left unanswered", "did not answer" not in err, err[-500:])
    files = trace_files(out)
    if check("one trace file", len(files) == 1, "%d files" % len(files)):
        ok, recs = ended(files[0])
        check("the trace has its end mark", ok, str([r for r in recs if r["type"] == "chunk"][-1:]))
        mods = [r.get("path_text", "") for r in recs if r["type"] == "module"]
        check("the library is in the module map", any(m.endswith("libctor_dlclose.so") for m in mods),
              "%d modules" % len(mods))
    cleanup(out)

    env_exit = {"CTOR_EXIT": "7"}
    plain = run([LOADER, LIB, "1"], env=dict(os.environ, **env_exit))
    out = tempdir("loader-lock-exit")
    p = run([LOADER, LIB, "1"], env=traced_env(out, RINGSIDE_LOG=2, RINGSIDE_SAMPLE_HZ=999, **env_exit))
    err = p.stderr.decode()
    check("exit(7) in a constructor: status as without the agent", p.returncode == plain.returncode == 7,
          "%d vs %d: %s" % (p.returncode, plain.returncode, err[-300:]))
    check("exit(7) in a constructor: no notice of a trace left unfinished",
          "did not finish" not in err and "did not answer" not in err, err[-500:])
    files = trace_files(out)
    if check("exit(7) in a constructor: one trace file", len(files) == 1, "%d files" % len(files)):
        ok, recs = ended(files[0])
        check("exit(7) in a constructor: the trace has its end mark", ok,
              str([r for r in recs if r["type"] == "chunk"][-1:]))
    cleanup(out)
    finish()


main()
