"""A multiprocessing pool of forked workers, each writing its own files,
ended by the pool's context manager (Pool.terminate: SIGTERM to workers
idle in their task queue). Prints the workers' pids; argv: the folder."""
import multiprocessing as mp
import os
import sys


def work(i):
    with open(os.path.join(sys.argv[1], "w%d.out" % i), "wb") as f:
        for _ in range(1 + i):
            f.write(os.urandom(100000 + i))
    return os.getpid()


if __name__ == "__main__":
    mp.set_start_method("fork")
    with mp.Pool(4) as pool:
        pids = set(pool.map(work, range(12), chunksize=1))
    print(" ".join(str(p) for p in sorted(pids)))
