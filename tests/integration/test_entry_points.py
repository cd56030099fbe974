#!/usr/bin/env python3
"""Every driver entry point a real library looks up is either hooked by the agent or named,
with its reason, in tests/data/entry-points-not-hooked.txt. The truth is the libraries
themselves: the CUDA runtime (libcudart) and NCCL (libnccl, which also carries a static
runtime) reach the driver only through cuGetProcAddress, by base name, so the names they
can ask for are the C strings in the file that are entry points of the toolkit's
cuda*Typedefs.h (PFN_<name>_v<version>[_ptds|_ptsz]; a string such as cuMemcpyHtoD_v2 is
reduced to its base name), plus any cu* name in their dynamic import table. NCCL's own
API is held the same way: each nccl* function libnccl exports is hooked (exported by
libagent.so) or listed. Where PyTorch (libtorch_cuda, libc10_cuda) or Triton is
installed, their names are held too; where not, the check says it was not made.

The agent's side is preload/hook_cuda.c's HOOKS table (the names cuGetProcAddress and
dlsym give wrappers for) and the exports of libagent.so (nm -D); the two must agree.
The test fails when a library looks up a name neither hooked nor listed, when the list
names something hooked or something that is no entry point, and when a name the agent
wraps (an exported symbol of HOOKS) is looked up by that name but cuGetProcAddress would
not give the wrapper for it."""
import glob
import importlib.util
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rstest  # noqa: E402

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")
LIST = os.path.join(rstest.ROOT, "tests", "data", "entry-points-not-hooked.txt")
RECORDED = os.path.join(rstest.ROOT, "tests", "data", "cudart-%s-lookups.txt")
HOOK_SRC = os.path.join(rstest.ROOT, "preload", "hook_cuda.c")


def driver_names():
    """{base name: set of variant versions} from the toolkit's typedef headers."""
    names = {}
    for h in glob.glob(os.path.join(CUDA_HOME, "include", "cuda*Typedefs.h")):
        with open(h, errors="replace") as f:
            for name, ver in re.findall(r"\bPFN_(cu\w+?)_v(\d+)(?:_pt(?:ds|sz))?\b", f.read()):
                names.setdefault(name, set()).add(int(ver))
    return names


def base_of(s):
    """cuMemcpyHtoDAsync_v2_ptsz -> cuMemcpyHtoDAsync: the exported names' suffixes."""
    return re.sub(r"_v\d+$", "", re.sub(r"_pt(?:sz|ds)$", "", s))


def c_strings(path, prefix):
    """The NUL-terminated strings of the file that are identifiers starting with prefix."""
    with open(path, "rb") as f:
        data = f.read()
    pat = rb"(?<=\0)(" + prefix.encode() + rb"[A-Za-z0-9_]+)(?=\0)"
    return {m.decode() for m in re.findall(pat, data)}


def dynsyms(path, defined):
    """Names of the dynamic symbol table: the defined functions, or the undefined ones."""
    out = subprocess.run(["readelf", "-W", "--dyn-syms", path], capture_output=True, text=True,
                         timeout=120).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":"):
            continue
        if (f[6] != "UND") == defined and (not defined or f[3] in ("FUNC", "IFUNC")):
            names.add(f[7].split("@")[0])
    return names


def lookups(path, drv):
    """The driver entry points path can ask for: its strings and its imports, by base name."""
    found = {base_of(s) for s in c_strings(path, "cu")} | {base_of(s) for s in dynsyms(path, False)
                                                          if s.startswith("cu")}
    return found & set(drv)


def hook_table():
    """[(exported symbol, base name)] of HOOKS in hook_cuda.c, both halves of the #if
    (the table built depends on the toolkit's CUDA_VERSION; the wrappers do not)."""
    with open(HOOK_SRC) as f:
        return re.findall(r'X\((\w+), "(\w+)", \d+, [01]\)', f.read())


def read_list():
    """{name: reason} of the list, with the problems of its lines."""
    listed, problems = {}, []
    with open(LIST) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            reason = reason.strip()
            if not re.fullmatch(r"(cu|nccl)[A-Za-z0-9_]+", name):
                problems.append("line %d: %r is not a cu*/nccl* name" % (n, name))
            elif not reason:
                problems.append("line %d: %s has no reason" % (n, name))
            elif name in listed:
                problems.append("line %d: %s listed twice" % (n, name))
            listed[name] = reason
    return listed, problems


def toolkit_release():
    """'13.0' from cuda.h's CUDA_VERSION, or None."""
    try:
        with open(os.path.join(CUDA_HOME, "include", "cuda.h")) as f:
            m = re.search(r"^#define CUDA_VERSION (\d+)", f.read(), re.M)
    except OSError:
        return None
    return "%d.%d" % (int(m.group(1)) // 1000, int(m.group(1)) % 1000 // 10) if m else None


def find_lib(names):
    """The first of names in the toolkit's library folders, or None."""
    dirs = [os.path.join(CUDA_HOME, d) for d in ("lib64", "lib")]
    dirs += glob.glob(os.path.join(CUDA_HOME, "targets", "*", "lib"))
    for env in ("NCCL_HOME",):
        if os.environ.get(env):
            dirs += [os.path.join(os.environ[env], d) for d in ("lib", "lib64")]
    for d in dirs:
        for n in names:
            hits = sorted(glob.glob(os.path.join(d, n)))
            if hits:
                return os.path.realpath(hits[-1])
    return None


def package_dir(name):
    """The folder of an installed Python package, without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return os.path.dirname(spec.origin) if spec and spec.origin else None


def framework_sources():
    """[(label, path)] of PyTorch's and Triton's files that name driver entry points."""
    found = []
    torch = package_dir("torch")
    if torch:
        for lib in ("libtorch_cuda.so", "libc10_cuda.so"):
            p = os.path.join(torch, "lib", lib)
            if os.path.exists(p):
                found.append(("torch/" + lib, p))
    triton = package_dir("triton")
    if triton:
        for rel in ("backends/nvidia/driver.c", "backends/nvidia/driver.py"):
            p = os.path.join(triton, rel)
            if os.path.exists(p):
                found.append(("triton/" + rel, p))
    return found


def source_names(path, drv):
    """Entry points a source file (Triton compiles its launcher at run time) names."""
    with open(path, errors="replace") as f:
        return {base_of(s) for s in re.findall(r"\bcu[A-Z]\w+", f.read())} & set(drv)


def main():
    drv = driver_names()
    cudart = find_lib(["libcudart.so.[0-9]*"])
    if not drv or not cudart:
        rstest.skip("entry_points", "no CUDA toolkit at %s (cuda*Typedefs.h, libcudart.so.N; set CUDA_HOME)"
                    % CUDA_HOME)
        rstest.finish()
    if not os.path.exists(rstest.AGENT):
        rstest.check("agent_built", False, "%s missing" % rstest.AGENT)
        rstest.finish()
    listed, problems = read_list()
    rstest.report_problems("list_well_formed", problems)

    table = hook_table()
    hooked_bases = {b for _, b in table}
    hooked_syms = {s for s, _ in table}
    exported = {s for s in dynsyms(rstest.AGENT, True) if s.startswith(("cu", "nccl"))}
    agent_cu = {s for s in exported if s.startswith("cu")}
    rstest.check("hook_table_is_exported", hooked_syms <= exported and agent_cu <= hooked_syms,
                 "in HOOKS, not exported: %s; exported, not in HOOKS: %s"
                 % (sorted(hooked_syms - exported), sorted(agent_cu - hooked_syms)))
    hooked = hooked_bases | exported

    libs = [("libcudart", cudart)]
    nccl = find_lib(["libnccl.so.2", "libnccl.so.2.*"])
    if nccl:
        libs.append(("libnccl", nccl))
    else:
        rstest.skip("libnccl_lookups", "no libnccl.so.2 in %s (or NCCL_HOME)" % CUDA_HOME)
    wanted = {}
    for label, path in libs:
        names = lookups(path, drv)
        print("# %s (%s): %d driver entry points" % (label, path, len(names)))
        rstest.check("%s_names_found" % label, len(names) > 50,
                     "only %d entry points read from %s" % (len(names), path))
        for n in names:
            wanted.setdefault(n, []).append(label)

    # The runtime's names as a run of it recorded them (test_cudart_runtime.py --record),
    # past its first cuGetExportTable: the strings hold exactly those names.
    release = toolkit_release()
    rec = RECORDED % release if release else None
    if rec and os.path.exists(rec):
        with open(rec) as f:
            run = {l.split("\t")[2] for l in f if l.startswith("lookup\t") and l.split("\t")[2]}
        names = lookups(cudart, drv)
        rstest.check("libcudart_strings_are_recorded_lookups", names == run,
                     "strings only: %s; recorded only: %s" % (sorted(names - run)[:8], sorted(run - names)[:8]))
    else:
        rstest.skip("libcudart_strings_are_recorded_lookups", "no recorded list for libcudart %s" % release)

    frameworks = framework_sources()
    for label, path in frameworks:
        names = source_names(path, drv) if path.endswith((".c", ".py")) else lookups(path, drv)
        print("# %s: %d driver entry points" % (label, len(names)))
        for n in names:
            wanted.setdefault(n, []).append(label)
    if not frameworks:
        rstest.skip("framework_lookups", "no PyTorch (libtorch_cuda, libc10_cuda) or Triton installed here")

    rstest.report_problems("lookups_hooked_or_listed", [
        "%s: looked up by %s, neither hooked nor in %s" % (n, ", ".join(wanted[n]), os.path.basename(LIST))
        for n in sorted(wanted) if n not in hooked and n not in listed])
    # A function the agent wraps, asked for by its own name: cuGetProcAddress gives the
    # wrapper only for the base names of HOOKS.
    rstest.report_problems("wrapped_functions_by_their_own_name", [
        "%s: looked up by %s under this name, which no HOOKS row has as its base" % (n, ", ".join(wanted[n]))
        for n in sorted(wanted) if n in hooked_syms and n not in hooked_bases])

    nccl_api = set()
    if nccl:
        funcs = dynsyms(nccl, True)
        nccl_api = {f for f in funcs if f.startswith("nccl")}
        # pnccl*: NCCL's profiling aliases, a tool's way to the real function (as PMPI_*);
        # programs call the nccl* name, held below.
        rstest.check("libnccl_aliases_pair", nccl_api and all(f[1:] in funcs for f in funcs if f.startswith("pnccl")),
                     "pnccl* without its nccl*: %s" % sorted(f for f in funcs if f.startswith("pnccl")
                                                              and f[1:] not in funcs))
        print("# libnccl: %d nccl* functions, %d hooked" % (len(nccl_api), len(nccl_api & exported)))
        rstest.report_problems("nccl_api_hooked_or_listed", [
            "%s: exported by libnccl, neither hooked nor listed" % n
            for n in sorted(nccl_api) if n not in exported and n not in listed])

    rstest.report_problems("list_names_nothing_hooked", [
        "%s: listed (%s) but hooked" % (n, listed[n]) for n in sorted(listed) if n in hooked])
    known = set(drv) | nccl_api
    rstest.report_problems("list_names_entry_points", [
        "%s: listed, but neither a driver entry point of %s nor a function of libnccl" % (n, CUDA_HOME)
        for n in sorted(listed) if n not in known and not (n.startswith("nccl") and not nccl)])
    unused = sorted(n for n in listed if n not in wanted and n not in nccl_api)
    if unused:
        print("# listed, looked up by nothing here (other versions, frameworks): %s" % " ".join(unused))
    rstest.finish()


if __name__ == "__main__":
    main()
