"""Sampler test workload: three threads burn CPU, then a forked child does,
then the process burns some more and execs itself ("exec" argument), which
burns and prints "exec'd ok"."""
import os
import sys
import threading
import warnings


def burn(n):
    x = 0
    for i in range(n):
        x += i
    return x


if len(sys.argv) > 1:
    burn(2000000)
    print("exec'd ok")
    sys.exit(0)
threads = [threading.Thread(target=burn, args=(3000000,)) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
warnings.simplefilter("ignore", DeprecationWarning)  # fork with the agent's writer thread
pid = os.fork()
if pid == 0:
    burn(2000000)
    os._exit(0)
os.waitpid(pid, 0)
burn(3000000)
os.execv(sys.executable, [sys.executable, __file__, "exec"])
