"""Two report folders of the same job, written one way and another (one
reporter process, or several under MPI): report.json equal as data except
its "reporter" key (how the report was made), every other output equal byte
for byte. Used by test_report_mpi.py and test_launch_slurm.py."""
import json
import os


def differences(a, b, path=""):
    """Where two parsed JSON values differ, as "path: a != b" lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append("%s/%s: only in %s" % (path, k, "the first" if k in a else "the second"))
            else:
                out += differences(a[k], b[k], path + "/" + k)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return ["%s: %d != %d items" % (path, len(a), len(b))]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, "%s[%d]" % (path, i))
        return out
    return [] if a == b and type(a) is type(b) else ["%s: %r != %r" % (path, a, b)]


def compare(one, other):
    """Problems (a list of lines) between report folders one and other."""
    problems = []
    names = sorted(os.listdir(one))
    if names != sorted(os.listdir(other)):
        problems.append("files differ: %s vs %s" % (names, sorted(os.listdir(other))))
    for name in names:
        p, q = os.path.join(one, name), os.path.join(other, name)
        if not os.path.exists(q):
            continue
        if name == "report.json":
            with open(p) as f:
                a = json.load(f)
            with open(q) as f:
                b = json.load(f)
            for r in (a, b):
                if "reporter" not in r:
                    problems.append("%s has no reporter key" % name)
                r.pop("reporter", None)
            problems += ["report.json" + d for d in differences(a, b)]
        else:
            with open(p, "rb") as f, open(q, "rb") as g:
                if f.read() != g.read():
                    problems.append("%s differs" % name)
    return problems


def reporter_key(out):
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f).get("reporter", {})
