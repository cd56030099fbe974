#!/usr/bin/env python3
"""Holds the hand-written FlatBuffers code against Debian's flatc, both ways.
Real programs (dd, a Python writer) run under the agent; every chunk of every
trace file is decoded by `flatc --json` and must equal, field by field, what
`ringside dump` prints, and must pass flatbuffers' C++ Verifier (flatc_verify,
which also checks layouts, enums and slots). Then JSON written here is built
into chunks by `flatc -b`, framed by the `lz4` tool, and read back by dump."""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from rstest import ROOT, BUILD, RINGSIDE, AGENT, failures, report_problems

SCHEMA = os.path.join(ROOT, "formats", "trace.fbs")
VERIFY = os.path.join(BUILD, "tests", "flatc_verify")

def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False, **kw)


def traced(cmd, out, extra_env=None):
    """Runs cmd under the agent, flushing every 50 ms; its traces go to out."""
    env = dict(os.environ, LD_PRELOAD=AGENT, RINGSIDE_OUT=out, RINGSIDE_FLUSH_MS="50", **(extra_env or {}))
    r = run(cmd, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {r.returncode}: {r.stderr.decode(errors='replace')}")
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs if f.endswith(".trace.lz4"))


def split_chunks(path):
    """The size-prefixed chunks of a trace, as `lz4 -dc` gives them back."""
    r = run(["lz4", "-dc", path])
    if r.returncode != 0:
        raise RuntimeError(f"lz4 -dc {path}: {r.stderr.decode(errors='replace')}")
    data, chunks, at = r.stdout, [], 0
    while at < len(data):
        (size,) = struct.unpack_from("<I", data, at)
        chunks.append(data[at:at + 4 + size])
        at += 4 + size
    return chunks


def flatc_decode(files, tmp):
    """flatc's JSON for each size-prefixed chunk file."""
    r = run(["flatc", "--json", "--strict-json", "--size-prefixed", "--raw-binary", "--defaults-json",
             "-o", tmp, SCHEMA, "--"] + files)
    if r.returncode != 0:
        raise RuntimeError("flatc --json: " + r.stderr.decode(errors="replace"))
    out = []
    for f in files:
        with open(os.path.join(tmp, os.path.splitext(os.path.basename(f))[0] + ".json")) as j:
            out.append(json.load(j))
    return out


def dump(path):
    """ringside dump's records, grouped by chunk."""
    r = run([RINGSIDE, "dump", path])
    if r.returncode != 0:
        raise RuntimeError(f"ringside dump {path} exited {r.returncode}: {r.stderr.decode(errors='replace')}")
    chunks = []
    for line in r.stdout.decode().splitlines():
        rec = json.loads(line)
        if rec["type"] == "chunk":
            chunks.append({"chunk": rec, "meta": None, "string": [], "file": [], "thread": [],
                           "clock": [], "io": [], "gpu": [], "sync": [], "coll": [], "comm": [],
                           "mem": [], "stack": [], "sample": [], "module": [], "range": [],
                           "function": [], "device": [], "series": [], "point": [],
                           "graph_node": [], "graph_edge": []})
        else:
            key = rec.pop("type")
            if key == "meta":
                chunks[-1]["meta"] = rec
            else:
                chunks[-1][key].append(rec)
    return chunks


META_FIELDS = ["format_version", "host", "pid", "ppid", "rank", "local_rank", "world_size",
               "parent_rank", "role", "job", "argv", "start", "settings", "agent_version",
               "cuda_version", "nccl_version"]
VECTORS = {  # flatc's vector -> dump's record type and the fields they share
    "files": ("file", ["id", "path", "flags"]),
    "threads": ("thread", ["tid", "name"]),
    "clocks": ("clock", ["mono_ns", "real_ns"]),
    "io": ("io", ["start_ns", "dur_ns", "offset", "result", "file", "tid", "op"]),
    "gpu": ("gpu", ["launch_ns", "gpu_start_ns", "gpu_end_ns", "stream", "bytes", "call_ns", "tid",
                    "name", "device", "kind", "dir", "flags", "graph"]),
    "syncs": ("sync", ["start_ns", "dur_ns", "target", "tid", "kind"]),
    "colls": ("coll", ["launch_ns", "gpu_start_ns", "gpu_end_ns", "count", "bytes", "comm", "stream",
                       "call_ns", "tid", "seq", "peer", "op", "datatype", "redop", "group", "flags"]),
    "comms": ("comm", ["start_ns", "dur_ns", "comm", "handle", "parent", "tid", "rank", "nranks",
                       "device", "kind"]),
    "mems": ("mem", ["start_ns", "dur_ns", "ptr", "bytes", "tid", "kind"]),
    "samples": ("sample", ["ts_ns", "weight_ns", "tid", "stack", "kind", "reason"]),
    "modules": ("module", ["ts_ns", "start", "end", "file_off", "path", "build_id"]),
    "ranges": ("range", ["start_ns", "end_ns", "tid", "end_tid", "name", "domain", "category", "depth",
                         "kind", "flags"]),
    "functions": ("function", ["id", "name", "static_smem", "local_bytes", "max_threads", "regs", "device",
                               "binary_version"]),
    "devices": ("device", ["ordinal", "cc_major", "cc_minor", "sm_count", "max_threads_per_sm",
                           "max_blocks_per_sm", "regs_per_sm", "smem_per_sm", "max_threads_per_block",
                           "regs_per_block", "smem_per_block_optin", "smem_reserved_per_block", "warp_size",
                           "clock_khz", "name", "uuid", "pci"]),
    "series": ("series", ["rate", "id", "name", "device", "kind", "link"]),
    "points": ("point", ["ts_ns", "value", "series"]),
    "graph_nodes": ("graph_node", ["bytes", "comm", "graph", "node", "name", "stack", "grid_x", "grid_y", "grid_z",
                                   "smem_dyn", "func", "block_x", "block_y", "block_z", "device", "kind", "op",
                                   "dir"]),
    "graph_edges": ("graph_edge", ["graph", "from", "to"]),
}


def launch_of(rec):
    """A gpu record's launch geometry as flatc prints a Launch (zeros: none)."""
    g = rec.get("launch")
    if not g:
        return {k: 0 for k in ("grid_x", "grid_y", "grid_z", "smem_dyn", "func", "block_x", "block_y",
                               "block_z", "cluster_x", "cluster_y", "cluster_z")}
    return {"grid_x": g["grid"][0], "grid_y": g["grid"][1], "grid_z": g["grid"][2], "smem_dyn": g["smem_dyn"],
            "func": g["func"], "block_x": g["block"][0], "block_y": g["block"][1], "block_z": g["block"][2],
            "cluster_x": g["cluster"][0], "cluster_y": g["cluster"][1], "cluster_z": g["cluster"][2]}


def compare(where, fl, dm):
    """Differences between flatc's decoding of one chunk and dump's."""
    bad = []

    def eq(what, a, b):
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                eq(f"{what}[{i}]", x, y)
        elif isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
            for k in a:
                eq(f"{what}.{k}", a[k], b[k])
        elif a != b:
            bad.append(f"{where}: {what}: flatc {a!r}, dump {b!r}")

    c = dm["chunk"]
    for k in ("seq", "strings_base", "end"):
        eq(k, fl[k], c[k])
    eq("counters", fl.get("counters"), c.get("counters"))
    if ("meta" in fl) != (dm["meta"] is not None):
        bad.append(f"{where}: meta present in only one of flatc, dump")
    elif "meta" in fl:
        defaults = {"argv": [], "settings": [], "start": {"mono_ns": 0, "real_ns": 0}}
        for k in META_FIELDS:
            eq("meta." + k, fl["meta"].get(k, defaults.get(k)), dm["meta"][k])
    base = fl["strings_base"]
    eq("strings", [{"id": base + i, "value": s} for i, s in enumerate(fl.get("strings", []))], dm["string"])
    for vec, (rtype, fields) in VECTORS.items():
        mine = [{k: r[k] for k in fields} for r in dm[rtype]]
        eq(vec, fl.get(vec, []), mine)
    if "launches" in fl:
        eq("launches", fl["launches"], [launch_of(r) for r in dm["gpu"]])
    elif any("launch" in r for r in dm["gpu"]):
        bad.append(f"{where}: dump shows launch geometry that flatc does not")
    eq("stacks", fl.get("stacks", []),
       [{"id": r["id"], "frames": [{"addr": a} for a in r["frames"]]} for r in dm["stack"]])
    return bad


def check_program(name, cmd, tmp, min_chunks, extra_env=None, vectors=()):
    """Each chunk of cmd's traces as flatc and dump read it; vectors: those
    that some chunk must hold."""
    out = os.path.join(tmp, name)
    files = traced(cmd, out, extra_env)
    seen = set()
    problems, chunk_files, nchunks = [], [], 0
    if not files:
        problems.append("no trace file written")
    for n, path in enumerate(files):
        chunks = split_chunks(path)
        nchunks = max(nchunks, len(chunks))
        paths = []
        for i, ch in enumerate(chunks):
            p = os.path.join(out, f"f{n}-c{i}.bin")
            with open(p, "wb") as f:
                f.write(ch)
            paths.append(p)
        chunk_files += paths
        decoded, dumped = flatc_decode(paths, out), dump(path)
        if len(decoded) != len(dumped):
            problems.append(f"{path}: flatc sees {len(decoded)} chunks, dump {len(dumped)}")
            continue
        for i, (fl, dm) in enumerate(zip(decoded, dumped)):
            problems += compare(f"{os.path.basename(path)} chunk {i}", fl, dm)
            seen |= {v for v in vectors if fl.get(v)}
    missing = sorted(set(vectors) - seen)
    if missing:
        problems.append("no chunk holds " + ", ".join(missing))
    if nchunks < min_chunks:
        problems.append(f"at most {nchunks} chunks in a file, wanted {min_chunks} or more")
    report_problems(f"flatc_matches_dump_{name}", problems)
    return files, chunk_files


def written_to(files, target):
    """Bytes the io records of files say were written to target, per dump."""
    total = 0
    for f in files:
        for ch in dump(f):
            for e in ch["io"]:
                if e["path"] == target and e["op"] in ("write", "pwrite", "writev", "fwrite") and e["result"] > 0:
                    total += e["result"]
    return total


WRITER = r"""
import os, sys, time
path = sys.argv[1]
for i in range(10):
    with open(path, "ab") as f:
        f.write(b"x" * (1000 + i))
    fd = os.open(path, os.O_RDONLY)
    os.pread(fd, 100, 5)
    os.lseek(fd, -3, os.SEEK_END)
    os.close(fd)
    time.sleep(0.05)
"""


def enum_names(name):
    """The values of enum name in trace.fbs, in order."""
    with open(SCHEMA) as f:
        body = re.search(r"enum " + name + r" : ubyte \{([^}]*)\}", f.read()).group(1)
    return [n.strip() for n in body.split(",") if n.strip()]


def io_op_names():
    return enum_names("IoOp")


def reverse_direction(tmp):
    """JSON -> flatc -b -> lz4 frame -> ringside dump: the values come back."""
    d = os.path.join(tmp, "reverse")
    os.makedirs(d)
    ops = io_op_names()
    first = {
        "seq": 0,
        "meta": {"format_version": 1, "host": "h\u00f6st \"7\"", "pid": 2147483647, "ppid": -2147483648,
                 "rank": 5, "local_rank": 0, "world_size": 16, "parent_rank": 2, "role": "child",
                 "job": "j\\1", "argv": ["a b", "", "\u20ac"], "start": {"mono_ns": 18446744073709551615,
                                                                          "real_ns": 1},
                 "settings": [{"key": "k", "value": "v"}, {"key": "", "value": "\t"}],
                 "agent_version": "9.9", "cuda_version": 12040, "nccl_version": 22105},
        "strings_base": 1,
        "strings": ["/a", "/b c", "main"],
        "files": [{"id": 1, "path": 1, "flags": 0}, {"id": 2, "path": 2, "flags": -1}],
        "threads": [{"tid": 4294967295, "name": 3}],
        "clocks": [{"mono_ns": 5, "real_ns": 18446744073709551614}],
        "io": [{"start_ns": 100 + i, "dur_ns": i, "offset": -9223372036854775808 if i == 0 else i,
                "result": 9223372036854775807 if i == 1 else -i, "file": 1 + i % 2, "tid": 7, "op": op}
               for i, op in enumerate(ops)],
        "counters": {"recorded": 18446744073709551615, "dropped": 0, "dropped_io": 3,
                     "dropped_gpu": 4, "dropped_nccl": 5, "dropped_samples": 6,
                     "dropped_ranges": 18446744073709551615},
        "end": False,
        "gpu": [{"launch_ns": 1, "gpu_start_ns": 2, "gpu_end_ns": 18446744073709551615, "stream": 4,
                 "bytes": 5, "call_ns": 6, "tid": 7, "name": 3, "device": -1, "kind": k, "dir": d,
                 "flags": 31, "graph": 4294967295} for k, d in zip(enum_names("GpuKind"), enum_names("CopyDir"))],
        "syncs": [{"start_ns": 1, "dur_ns": 2, "target": 3, "tid": 4, "kind": k}
                  for k in enum_names("SyncKind")],
        "colls": [{"launch_ns": 1, "gpu_start_ns": 2, "gpu_end_ns": 3, "count": 4, "bytes": 5,
                   "comm": 18446744073709551615, "stream": 7, "call_ns": 8, "tid": 9, "seq": 10,
                   "peer": -1, "op": op, "datatype": 7, "redop": 2, "group": 1, "flags": 1}
                  for op in enum_names("CollOp")],
        "comms": [{"start_ns": 1, "dur_ns": 2, "comm": 3, "handle": 4, "parent": 5, "tid": 6,
                   "rank": 7, "nranks": 8, "device": -9, "kind": k} for k in enum_names("CommKind")],
        "mems": [{"start_ns": 1, "dur_ns": 2, "ptr": 3, "bytes": 4, "tid": 5, "kind": k}
                 for k in enum_names("MemKind")],
        "stacks": [{"id": 1, "frames": [{"addr": 4198400}, {"addr": 9223372036854775811}]},
                   {"id": 2, "frames": [{"addr": 1}]}],
        "samples": [{"ts_ns": 1, "weight_ns": 2, "tid": 3, "stack": 1, "kind": k, "reason": "none"}
                    for k in enum_names("SampleKind")] +
                   [{"ts_ns": 4, "weight_ns": 5, "tid": 6, "stack": 2, "kind": "wait", "reason": r}
                    for r in enum_names("WaitReason")],
        "modules": [{"ts_ns": 1, "start": 4194304, "end": 4202496, "file_off": 0, "path": 1,
                     "build_id": 2}],
        "ranges": [{"start_ns": 1 + i, "end_ns": 18446744073709551615, "tid": 7, "end_tid": 4294967295,
                    "name": 3, "domain": 2 * i, "category": 4294967295, "depth": 65535, "kind": k,
                    "flags": 1} for i, k in enumerate(enum_names("RangeKind"))],
        "graph_nodes": [{"bytes": 18446744073709551615, "comm": 2, "graph": 3, "node": 4 + i, "name": 3,
                         "stack": 1, "grid_x": 4294967295, "grid_y": 6, "grid_z": 7, "smem_dyn": 8, "func": 9,
                         "block_x": 65535, "block_y": 11, "block_z": 12, "device": -1, "kind": k,
                         "op": "recv", "dir": "peer"} for i, k in enumerate(enum_names("GraphNodeKind"))],
        "graph_edges": [{"graph": 3, "from": 4, "to": 5}, {"graph": 4294967295, "from": 0, "to": 4294967295}],
    }
    # Only defaults in the meta (flatc then stores nothing), and the end mark.
    second = {"seq": 1, "meta": {"host": "x"}, "strings_base": 4, "strings": ["/d"],
              "files": [{"id": 3, "path": 4, "flags": 2}], "end": True}
    trace = os.path.join(d, "r.trace.lz4")
    with open(trace, "wb") as t:
        for n, chunk in enumerate((first, second)):
            src = os.path.join(d, f"c{n}.json")
            with open(src, "w") as f:
                json.dump(chunk, f)
            r = run(["flatc", "-b", "--size-prefixed", "-o", d, SCHEMA, src])
            if r.returncode != 0:
                return report_problems("flatc_binary_read_by_dump", ["flatc -b: " + r.stderr.decode(errors="replace")])
            r = run(["lz4", "-c", "--content-size", os.path.join(d, f"c{n}.bin")])
            if r.returncode != 0:
                return report_problems("flatc_binary_read_by_dump", ["lz4: " + r.stderr.decode(errors="replace")])
            t.write(r.stdout)
    problems = []
    try:
        dumped = dump(trace)
    except RuntimeError as e:
        return report_problems("flatc_binary_read_by_dump", [str(e)])
    meta_defaults = {"format_version": 0, "pid": 0, "ppid": 0, "rank": -1, "local_rank": -1,
                     "world_size": -1, "parent_rank": -1, "role": "other", "job": None,
                     "agent_version": None, "cuda_version": 0, "nccl_version": 0}
    second["meta"] = dict(meta_defaults, **second["meta"])
    second["counters"] = None
    if len(dumped) != 2:
        problems.append(f"dump read {len(dumped)} chunks of 2")
    else:
        problems += compare("chunk 0", first, dumped[0]) + compare("chunk 1", second, dumped[1])
        names = [e["path"] for e in dumped[0]["io"][:2]]
        if names != ["/a", "/b c"]:
            problems.append(f"io paths resolved as {names}")
        if dumped[1]["file"][0]["name"] != "/d":
            problems.append("file 3 of chunk 1 not named from its own strings")
    report_problems("flatc_binary_read_by_dump", problems)


def main():
    for exe in (RINGSIDE, AGENT, VERIFY):
        if not os.path.exists(exe):
            print(f"not ok flatc: {exe} is not built")
            return 1
    r = run([VERIFY])
    report_problems("layouts_enums_slots_match_flatc", [r.stderr.decode().strip()] if r.returncode else [])
    with tempfile.TemporaryDirectory(prefix="rs-flatc-") as tmp:
        target = os.path.join(tmp, "donn\u00e9es 1.bin")
        dd_out = os.path.join(tmp, "dd.out")
        dd_files, dd_chunks = check_program(
            "dd", ["dd", "if=/dev/zero", "of=" + dd_out, "bs=4096", "count=8", "conv=fsync"], tmp, 1)
        py_files, py_chunks = check_program("python", [sys.executable, "-c", WRITER, target], tmp, 3)
        # NVTX ranges (formats: Range) from a real program built with the NVTX headers.
        _, nvtx_chunks = check_program("nvtx", [os.path.join(BUILD, "tests", "prog", "nvtx_ranges"),
                                                os.path.join(tmp, "nvtx-truth.json")], tmp, 1)

        # Kernel launches with their geometry, functions and devices, and
        # the node's counter series (formats: Launch, Function, Device,
        # Series, Point) from simtrain on the simulated GPU.
        _, sim_chunks = check_program(
            "simtrain", [os.path.join(BUILD, "simtrain"), "--steps", "40", "--kernel-blocks", "33"], tmp, 1,
            {"LD_LIBRARY_PATH": os.path.join(BUILD, "sim"), "RINGSIDE_METRICS_HZ": "100"},
            ("launches", "functions", "devices", "series", "points"))
        nvtx_chunks += sim_chunks
        # CUDA graphs' nodes and edges (formats: GraphNode, GraphEdge, GpuEvent.graph)
        _, graph_chunks = check_program(
            "simtrain_graph", [os.path.join(BUILD, "simtrain"), "--steps", "4", "--graph", "--graph-nccl"], tmp, 1,
            {"LD_LIBRARY_PATH": os.path.join(BUILD, "sim")}, ("graph_nodes", "graph_edges"))
        nvtx_chunks += graph_chunks

        # The agent's records against what the programs really wrote.
        got = (written_to(dd_files, dd_out), written_to(py_files, target))
        want = (8 * 4096, os.path.getsize(target))
        report_problems("io_bytes_match_the_files", [] if got == want else [f"recorded {got}, files hold {want}"])

        chunks = dd_chunks + py_chunks + nvtx_chunks
        r = run([VERIFY] + chunks)
        report_problems("cxx_verifier_accepts_every_chunk",
               [r.stderr.decode().strip()] if r.returncode or not chunks else [])
        reverse_direction(tmp)
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
