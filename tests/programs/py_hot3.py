"""Sampler test workload. `hot3 ROUNDS UNIT`: Work.alpha, beta and gamma run
the same loop for 6, 3 and 1 units per round (60/30/10 of the work).
`ctypes LIB ROUNDS N`: c_caller calls the C function spin_c through ctypes,
py_spin spins in Python, for about equal time."""
import sys


class Work:
    def alpha(self, u):
        x = 0
        for _ in range(6):
            for i in range(u):
                x += i * i
        return x


def beta(u):
    x = 0
    for _ in range(3):
        for i in range(u):
            x += i * i
    return x


def gamma(u):
    x = 0
    for _ in range(1):
        for i in range(u):
            x += i * i
    return x


def c_caller(lib, n):
    return lib.spin_c(n)


def py_spin(u):
    x = 0
    for i in range(u):
        x += i * i
    return x


def main():
    if sys.argv[1] == "hot3":
        rounds, u = int(sys.argv[2]), int(sys.argv[3])
        w, t = Work(), 0
        for _ in range(rounds):
            t += w.alpha(u) + beta(u) + gamma(u)
        print(t)
    else:
        import ctypes
        lib = ctypes.CDLL(sys.argv[2])
        lib.spin_c.restype = ctypes.c_uint64
        lib.spin_c.argtypes = [ctypes.c_uint64]
        rounds, n = int(sys.argv[3]), int(sys.argv[4])
        t = 0
        for _ in range(rounds):
            t += c_caller(lib, n) + py_spin(n // 100)
        print(t % 1000)


main()
