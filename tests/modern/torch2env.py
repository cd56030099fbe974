"""Helpers for tests/modern/test_torch2_*.py: run tests/modern/torch2_job.py
in the chroot of Debian's PyTorch 2.x stack ($CHROOT, else build/chroot-sid,
else /work/chroot-sid) as a user of that build would launch it: two ranks
by env:// (Debian's torch has no libuv: USE_LIBUV=0; torchrun's rendezvous
fails there), rank 1 started once rank 0's store listens (the store's
client backs off for tens of seconds when it comes first). Each run is in a
private mount namespace with /proc, /sys, /dev, /dev/shm and /tmp bound in,
so paths under /tmp are the same inside and out: the agent and the job are
copied into a folder there, and the reports are made outside."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "integration"))
from rstest import AGENT, ROOT, finish, skip, tempdir  # noqa: E402

JOB = os.path.join(ROOT, "tests", "modern", "torch2_job.py")


def chroot_dir():
    """The chroot to run in, or None when there is none with python3 in it."""
    for d in (os.environ.get("CHROOT"), os.path.join(ROOT, "build", "chroot-sid"), "/work/chroot-sid"):
        if d and os.path.exists(os.path.join(d, "usr", "bin", "python3")):
            return d
    return None


def why_not(chroot):
    """Why the tests cannot run here ("" when they can)."""
    if not chroot:
        return "no chroot of the PyTorch 2.x stack (CHROOT, build/chroot-sid, /work/chroot-sid)"
    if os.geteuid() != 0:
        return "chroot needs root"
    return ""


def start(name):
    """(chroot, work folder, the job's path there) for test name; when the
    test cannot run here, says why (skip) and exits."""
    chroot = chroot_dir()
    why = why_not(chroot)
    if why:
        skip(name, why)
        finish()
    work = tempdir(name)
    return chroot, work, stage(work)[1]


def stage(work):
    """Copies the agent and the job into work (under /tmp); returns their paths there."""
    agent = os.path.join(work, "libagent.so")
    job = os.path.join(work, "torch2_job.py")
    shutil.copy(AGENT, agent)
    shutil.copy(JOB, job)
    return agent, job


def in_chroot(chroot, argv, env):
    """argv for running argv in the chroot with env (a dict) as its whole environment."""
    script = ('R=$1; shift; for d in proc sys dev dev/shm tmp; do mount --bind /$d "$R/$d" || exit 97; done; '
              'exec chroot "$R" "$@"')
    pairs = ["%s=%s" % kv for kv in sorted(env.items())]
    return ["unshare", "-m", "sh", "-c", script, "sh", chroot, "/usr/bin/env", "-i"] + pairs + argv


def listening(port):
    """Whether a TCP socket listens on port (IPv4 or IPv6)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    w = line.split()
                    if w[1].endswith(":%04X" % port) and w[3] == "0A":
                        return True
        except OSError:
            pass
    return False


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def run_ranks(chroot, job, args, extra_env, world=2, timeout=600):
    """Runs job with args as `world` env:// ranks in the chroot; returns
    [(exit status, stdout, stderr)] per rank."""
    port = free_port()
    base = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), "WORLD_SIZE": str(world), "USE_LIBUV": "0", "GLOO_SOCKET_IFNAME": "lo",
            "LANG": "C.UTF-8"}
    base.update(extra_env)
    procs = []
    deadline = time.time() + timeout
    for r in range(world):
        env = dict(base, RANK=str(r), LOCAL_RANK=str(r))
        procs.append(subprocess.Popen(in_chroot(chroot, ["python3", job] + args, env), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
        while r == 0 and world > 1 and not listening(port) and procs[0].poll() is None and time.time() < deadline:
            time.sleep(0.05)
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        out.append((p.returncode, o.decode(errors="replace"), e.decode(errors="replace")))
    return out


def json_lines(text):
    import json
    got = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                got.append(json.loads(line))
            except ValueError:
                pass
    return got
