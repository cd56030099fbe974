#!/usr/bin/env python3
"""`ringside export perfetto DIR -o FILE.pftrace`: Perfetto's protobuf trace
of the demo's job (simtrain on 4 ranks with data loading, checkpoints and a
straggler), decoded by Debian's protoc against Perfetto's own schema
(../shared/data/perfetto, beside the repository) and counted against
figures made elsewhere: the simulator's truth file (kernels, copies,
collectives and their bytes, steps), report.json (checkpoints, syncs, wait
samples by reason, I/O bytes, the timeline's GPU busy %) and `ringside
dump`'s records (I/O calls, CPU samples).

Checks: the plain and the compressed output (RINGSIDE_PFTRACE_PLAIN)
decode and hold the same packets; every kernel and copy ends a flow that
its launch call starts; --ranks, --steps and --from/--to choose; a .json
name still writes the Kineto-compatible JSON; the report's trace.pftrace
holds the same packets as the export of its lanes."""
import json
import os
import shutil
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import (AGENT, BUILD, RINGSIDE, ROOT, check, cleanup, dump, finish, report_problems, run,  # noqa: E402
                    skip, tempdir, trace_files)

LAUNCH = os.path.join(BUILD, "simlaunch")
TRAIN = os.path.join(BUILD, "simtrain")
SIM = os.path.join(BUILD, "sim")
SCHEMA = os.path.join(os.path.dirname(ROOT), "shared", "data", "perfetto")
PROTO = "perfetto_trace.proto"
STEPS = 30
# 20 ms of loading a step: the job runs past a second. The node's sampler is
# elected half a flush period (0.5 s) after a process's first event, so a job
# shorter than that has one CPU reading per file and no node CPU rate at all
# (the demo's 2 ms made that a matter of the machine's speed).
DATA_US = 20000


def text_parse(text):
    """protoc's text format as nested dicts: every field a list of values
    (str, or dict for a message)."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            cur = stack.pop()
        elif line.endswith("{"):
            child = {}
            cur.setdefault(line[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        else:
            key, _, val = line.partition(": ")
            if val.startswith('"'):
                val = json.loads(val) if "\\" not in val else val.strip('"')
            cur.setdefault(key, []).append(val)
    return root


def one(msg, key, default=None):
    v = msg.get(key)
    return v[0] if v else default


def varint(b, i):
    v, s = 0, 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def uncompress(data):
    """A Trace whose compressed_packets (TracePacket field 50) are inflated
    in place: the packets as a plain Trace, in order."""
    out, i = bytearray(), 0
    while i < len(data):
        tag, i = varint(data, i)
        n, i = varint(data, i)
        packet = data[i:i + n]
        i += n
        j, inner = 0, None
        while j < len(packet):
            t, j = varint(packet, j)
            wire = t & 7
            if wire == 0:
                _, j = varint(packet, j)
            elif wire == 1:
                j += 8
            elif wire == 5:
                j += 4
            else:
                m, j = varint(packet, j)
                if t >> 3 == 50:
                    inner = packet[j:j + m]
                j += m
        if inner is not None:
            out += zlib.decompress(inner)
        else:
            out += bytes([tag]) + encode_varint(n) + packet
    return bytes(out)


def encode_varint(v):
    b = bytearray()
    while v >= 0x80:
        b.append((v & 0x7F) | 0x80)
        v >>= 7
    b.append(v)
    return bytes(b)


def decode(path):
    """(packets as dicts, protoc's status and stderr)."""
    with open(path, "rb") as f:
        data = uncompress(f.read())
    p = run(["protoc", "--proto_path=" + SCHEMA, "--decode=perfetto.protos.Trace", PROTO], input=data)
    if p.returncode != 0:
        return None, p.returncode, p.stderr.decode(errors="replace")
    return text_parse(p.stdout.decode()).get("packet", []), 0, ""


def by_sequence(packets):
    """{sequence id: its packets in order}."""
    out = {}
    for p in packets or []:
        out.setdefault(one(p, "trusted_packet_sequence_id"), []).append(p)
    return out


class Trace:
    """The events of a decoded trace, names and tracks resolved."""

    def __init__(self, packets):
        self.tracks = {}        # uuid -> descriptor
        self.slices = []        # dicts: name, cat, track, args, flows, term
        self.counters = {}      # uuid -> [values]
        self.samples = []       # PerfSample dicts
        self.clock_ids = set()
        names, cats = {}, {}
        for p in packets:
            seq = one(p, "trusted_packet_sequence_id")
            for idata in p.get("interned_data", []):
                for e in idata.get("event_names", []):
                    names[(seq, one(e, "iid"))] = one(e, "name")
                for e in idata.get("event_categories", []):
                    cats[(seq, one(e, "iid"))] = one(e, "name")
            for cs in p.get("clock_snapshot", []):
                for c in cs.get("clocks", []):
                    self.clock_ids.add(one(c, "clock_id"))
            for d in p.get("track_descriptor", []):
                self.tracks[one(d, "uuid")] = d
            for s in p.get("perf_sample", []):
                self.samples.append(s)
            for e in p.get("track_event", []):
                kind = one(e, "type")
                if kind == "TYPE_COUNTER":
                    self.counters.setdefault(one(e, "track_uuid"), []).append(float(one(e, "double_counter_value")))
                elif kind == "TYPE_SLICE_BEGIN":
                    args = {}
                    for a in e.get("debug_annotations", []):
                        v = one(a, "uint_value") or one(a, "int_value") or one(a, "string_value")
                        args[one(a, "name_iid")] = v
                    self.slices.append({
                        "name": names.get((seq, one(e, "name_iid"))),
                        "cat": cats.get((seq, one(e, "category_iids"))),
                        "track": one(e, "track_uuid"),
                        "args": args,
                        "flows": e.get("flow_ids", []),
                        "term": e.get("terminating_flow_ids", []),
                    })
        self.arg_names = {}
        for p in packets:
            for idata in p.get("interned_data", []):
                for e in idata.get("debug_annotation_names", []):
                    self.arg_names[one(e, "iid")] = one(e, "name")
        for s in self.slices:
            s["args"] = {self.arg_names.get(k, k): v for k, v in s["args"].items()}

    def proc_of(self, uuid):
        """The process descriptor a track belongs to (its pid), or None."""
        seen = set()
        while uuid and uuid not in seen:
            seen.add(uuid)
            d = self.tracks.get(uuid)
            if not d:
                return None
            if "process" in d:
                return one(d["process"][0], "process_name")
            if "thread" in d:
                pid = one(d["thread"][0], "pid")
                for t in self.tracks.values():
                    if "process" in t and one(t["process"][0], "pid") == pid:
                        return one(t["process"][0], "process_name")
                return None
            uuid = one(d, "parent_uuid")
        return None

    def track_name(self, uuid):
        d = self.tracks.get(uuid, {})
        return one(d, "name", "")

    def by_cat(self, cat):
        return [s for s in self.slices if s["cat"] == cat]


def stack_problems(packets):
    """What trace_processor would drop of the CPU samples' stacks: a
    sample's callstack, a callstack's frame or a frame's mapping not
    interned in its sequence before it."""
    seen, problems = {}, []
    for p in packets:
        seq = one(p, "trusted_packet_sequence_id")
        have = seen.setdefault(seq, {"callstacks": {}, "frames": {}, "mappings": set(), "paths": set()})
        for idata in p.get("interned_data", []):
            for m in idata.get("mapping_paths", []):
                have["paths"].add(one(m, "iid"))
            for m in idata.get("mappings", []):
                if not set(m.get("path_string_ids", [])) <= have["paths"]:
                    problems.append("mapping %s: path not interned" % one(m, "iid"))
                have["mappings"].add(one(m, "iid"))
            for f in idata.get("frames", []):
                if one(f, "mapping_id") not in have["mappings"]:
                    problems.append("frame %s: mapping %s not interned" % (one(f, "iid"), one(f, "mapping_id")))
                have["frames"][one(f, "iid")] = f
            for c in idata.get("callstacks", []):
                missing = [x for x in c.get("frame_ids", []) if x not in have["frames"]]
                if missing or not c.get("frame_ids"):
                    problems.append("callstack %s: frames %s not interned" % (one(c, "iid"), missing))
                have["callstacks"][one(c, "iid")] = c
        for s in p.get("perf_sample", []):
            if one(s, "callstack_iid") not in have["callstacks"]:
                problems.append("sample at %s: callstack %s not interned" % (one(p, "timestamp"),
                                                                             one(s, "callstack_iid")))
    return problems


def rank_of(process_name):
    return int(process_name.split()[1]) if process_name and process_name.startswith("rank ") else None


def demo(work):
    """The demo's job (Makefile `demo`) under the agent with the truth file;
    (trace folder, truth lines, report.json) or None."""
    env = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LD_PRELOAD", "RINGSIDE_JOB",
              "RINGSIDE_RANK_PID"):
        env.pop(k, None)
    ckpt = os.path.join(work, "ckpt")
    os.makedirs(ckpt)
    env.update(LD_LIBRARY_PATH=SIM, SIMNCCL_TIMEOUT_S="60", RINGSIDE_OUT=os.path.join(work, "trace"),
               SIMGPU_TRUTH=os.path.join(work, "truth.%p"), AGENT_SO=AGENT)
    p = run([LAUNCH, "-n", "4", "--", "sh", "-c", 'export LD_PRELOAD="$AGENT_SO"; exec "$@"', "sh", TRAIN,
             "--steps", str(STEPS), "--layers", "4", "--data-us", str(DATA_US), "--ckpt-every", "10", "--ckpt-mb", "32",
             "--ckpt-dir", ckpt, "--straggler", "2:1.5"], env=env)
    if not check("pftrace demo runs", p.returncode == 0, p.stderr.decode(errors="replace")[-300:]):
        return None
    r = run([RINGSIDE, "report", os.path.join(work, "trace"), "-o", os.path.join(work, "report"), "-q"])
    if not check("pftrace demo report", r.returncode == 0, r.stderr.decode(errors="replace")[-300:]):
        return None
    with open(os.path.join(work, "report", "report.json")) as f:
        rep = json.load(f)
    truth = []
    for name in sorted(os.listdir(work)):
        if name.startswith("truth."):
            with open(os.path.join(work, name)) as f:
                truth += [json.loads(x) for x in f if x.strip()]
    return os.path.join(work, "trace"), truth, rep


def export(trace, out, *args, plain=True):
    env = dict(os.environ)
    env.pop("RINGSIDE_PFTRACE_PLAIN", None)
    if plain:
        env["RINGSIDE_PFTRACE_PLAIN"] = "1"
    return run([RINGSIDE, "export", "perfetto", trace, "-o", out, "-q"] + list(args), env=env)


def per_rank(items, key=lambda x: x):
    out = {}
    for x in items:
        k = key(x)
        out[k] = out.get(k, 0) + 1
    return out


def check_whole(tr, truth, rep, dumps):
    """The whole job's trace against the truth, the report and the dump."""
    pid_rank = {t["pid"]: t["rank"] for t in truth if "rank" in t}
    want_k = per_rank([t for t in truth if t.get("kind") == "kernel"], lambda t: t["rank"])
    want_c = per_rank([t for t in truth if t.get("kind") == "memcpy"], lambda t: t["rank"])
    want_coll = per_rank([t for t in truth if t.get("kind") == "collective"], lambda t: pid_rank[t["pid"]])
    coll_bytes = {}
    for t in truth:
        if t.get("kind") == "collective":
            r = pid_rank[t["pid"]]
            coll_bytes[r] = coll_bytes.get(r, 0) + int(t.get("bytes", 0))

    def rank(s):
        return rank_of(tr.proc_of(s["track"]))

    kernels = [s for s in tr.by_cat("kernel") if not s["name"].startswith("nccl")]
    check("pftrace kernels per rank as the truth's", per_rank(kernels, rank) == want_k,
          "%s != %s" % (per_rank(kernels, rank), want_k))
    copies = tr.by_cat("gpu_memcpy")
    check("pftrace copies per rank as the truth's", per_rank(copies, rank) == want_c,
          "%s != %s" % (per_rank(copies, rank), want_c))
    nccl_gpu = [s for s in tr.by_cat("nccl") if "NCCL stream" in tr.track_name(s["track"])]
    check("pftrace collectives per rank as the truth's", per_rank(nccl_gpu, rank) == want_coll,
          "%s != %s" % (per_rank(nccl_gpu, rank), want_coll))
    got_bytes = {}
    for s in nccl_gpu:
        got_bytes[rank(s)] = got_bytes.get(rank(s), 0) + int(s["args"].get("bytes", 0))
    check("pftrace collectives' bytes as the truth's", got_bytes == coll_bytes, "%s != %s" % (got_bytes, coll_bytes))

    # flows: every GPU op's terminating flow starts at a launch call of its process
    starts = {}
    for s in tr.slices:
        for f in s["flows"]:
            starts[f] = s
    problems = []
    gpu_ops = tr.by_cat("kernel") + copies + nccl_gpu
    for s in gpu_ops:
        if len(s["term"]) != 1 or s["term"][0] not in starts:
            problems.append("%s on %s ends no flow a launch started" % (s["name"], tr.track_name(s["track"])))
        elif rank(starts[s["term"][0]]) != rank(s):
            problems.append("%s: its flow starts in another process" % s["name"])
    report_problems("pftrace every kernel, copy and collective ends its launch call's flow", problems)
    check("pftrace flows: one per GPU op", len(starts) == len(gpu_ops), "%d != %d" % (len(starts), len(gpu_ops)))

    steps = [s for s in tr.by_cat("step")]
    truth_steps = len({t["index"] for t in truth if t.get("kind") == "step"})
    check("pftrace steps as the truth's and report.json's",
          len(steps) == truth_steps == rep["steps"]["count"] == STEPS,
          "%d, truth %d, report %d" % (len(steps), truth_steps, rep["steps"]["count"]))

    ck = tr.by_cat("checkpoint")
    want = sorted((c["rank"], c["bytes"]) for c in rep["checkpoints"])
    got = sorted((int(s["args"]["rank"]), int(s["args"]["bytes"])) for s in ck)
    check("pftrace checkpoints as report.json's", got == want and len(want) > 0, "%s != %s" % (got, want))

    procs = {p["rank"]: p for p in rep["processes"]}
    syncs = [s for s in tr.by_cat("wait") if s["name"].startswith("cu")]
    want = {r: p["syncs"]["count"] for r, p in procs.items()}
    check("pftrace CUDA syncs per rank as report.json's", per_rank(syncs, rank) == want,
          "%s != %s" % (per_rank(syncs, rank), want))
    waits = [s for s in tr.by_cat("wait") if s["name"].startswith("wait: ")]
    got = per_rank(waits, lambda s: (rank(s), s["args"]["reason"]))
    want = {}
    for r, p in procs.items():
        for w in p["waits"]:
            want[(r, w["reason"])] = want.get((r, w["reason"]), 0) + w["count"]
    check("pftrace wait samples per rank and reason as report.json's", got == want and want, "%s != %s" % (got, want))

    io = tr.by_cat("io")
    want = {r: sum(1 for x in d if x["type"] == "io") for r, d in dumps.items()}
    check("pftrace file I/O calls per rank as the dump's", per_rank(io, rank) == want,
          "%s != %s" % (per_rank(io, rank), want))
    wrote = {}
    for s in io:
        if s["name"] in ("write", "pwrite", "writev", "pwritev", "fwrite"):
            wrote[rank(s)] = wrote.get(rank(s), 0) + int(s["args"].get("bytes", 0))
    want = {r: p["io"]["write_bytes"] for r, p in procs.items()}
    check("pftrace bytes written per rank as report.json's", wrote == want, "%s != %s" % (wrote, want))

    pid_of = {one(d["process"][0], "pid"): rank_of(one(d["process"][0], "process_name"))
              for d in tr.tracks.values() if "process" in d}
    got = per_rank(tr.samples, lambda s: pid_of.get(one(s, "pid")))
    want = {r: sum(1 for x in d if x["type"] == "sample" and x["kind"] == "cpu") for r, d in dumps.items()}
    check("pftrace CPU samples per rank as the dump's", got == want and sum(want.values()) > 0,
          "%s != %s" % (got, want))
    stacks = [s for s in tr.samples if "callstack_iid" in s]
    check("pftrace CPU samples carry interned call stacks", len(stacks) == len(tr.samples))

    busy = {}
    for uuid, vals in tr.counters.items():
        if tr.track_name(uuid) == "GPU busy":
            busy[rank_of(tr.proc_of(uuid))] = vals
    problems = []
    for tl in rep["timeline"]["ranks"]:
        got = busy.get(tl["rank"])
        if got is None or len(got) != len(tl["gpu_busy_pct"]) or \
                any(abs(a - b) > 1e-3 * max(1, abs(b)) for a, b in zip(got, tl["gpu_busy_pct"])):
            problems.append("rank %s: %s != %s" % (tl["rank"], str(got)[:80], str(tl["gpu_busy_pct"])[:80]))
    report_problems("pftrace GPU busy counters as report.json's timeline", problems)
    names = {tr.track_name(u) for u in tr.counters}
    check("pftrace counter tracks: SM active, NCCL and storage throughput, node CPU",
          {"SM active", "NCCL throughput", "storage write", "node CPU busy"} <= names, str(sorted({"SM active", "NCCL throughput", "storage write", "node CPU busy"} - names)))


def main():
    if not shutil.which("protoc"):
        skip("pftrace", "protoc is not installed (make deps: protobuf-compiler)")
        return finish()
    if not os.path.exists(os.path.join(SCHEMA, PROTO)):
        skip("pftrace", "no Perfetto schema in %s" % SCHEMA)
        return finish()
    work = tempdir("pftrace")
    got = demo(work)
    if got:
        trace, truth, rep = got
        dumps = {}
        for path in trace_files(trace):
            recs, rc, err = dump(path)
            meta = [r for r in recs if r["type"] == "meta"][0]
            dumps[meta["rank"]] = recs
        plain = os.path.join(work, "demo.pftrace")
        p = export(trace, plain)
        check("pftrace export runs", p.returncode == 0, p.stderr.decode(errors="replace")[-300:])
        packets, rc, err = decode(plain)
        if check("pftrace decodes with protoc against Perfetto's schema", rc == 0, err[-300:]):
            tr = Trace(packets)
            check("pftrace sequence-scoped incremental clocks are declared",
                  {"6", "64", "65", "66"} <= tr.clock_ids, str(tr.clock_ids))
            check_whole(tr, truth, rep, dumps)
            report_problems("pftrace samples' call stacks, frames and mappings are interned before use",
                            stack_problems(packets))
            packed = os.path.join(work, "demo.perfetto-trace")
            p = export(trace, packed, plain=False)
            packed_packets, rc, err = decode(packed)
            # Files are written by several threads: the sequences interleave
            # differently, each in its own order.
            check("pftrace compressed: decodes to the same packets, sequence by sequence",
                  rc == 0 and by_sequence(packed_packets) == by_sequence(packets),
                  err[-200:] or "%s packets, %d plain" % (len(packed_packets or []), len(packets)))
            check("pftrace compressed: smaller", os.path.getsize(packed) * 2 < os.path.getsize(plain),
                  "%d vs %d" % (os.path.getsize(packed), os.path.getsize(plain)))
            # the report's own trace.pftrace: the demo's four ranks are all
            # lanes, over the whole job, so the export's packets
            rp = os.path.join(work, "report", "trace.pftrace")
            rpk, rc, err = decode(rp) if os.path.exists(rp) else (None, 1, "no " + rp)
            check("pftrace the report's trace.pftrace: every lane's packets as the export writes them",
                  rc == 0 and rep["lanes"]["perfetto"] == "trace.pftrace" and
                  by_sequence(rpk) == by_sequence(packed_packets),
                  err[-200:] or "%d packets, the export %d" % (len(rpk or []), len(packed_packets or [])))

            one_rank = os.path.join(work, "rank1.pftrace")
            p = export(trace, one_rank, "--ranks", "1")
            pk, rc, err = decode(one_rank)
            if check("pftrace --ranks 1 decodes", p.returncode == 0 and rc == 0, err[-200:]):
                t1 = Trace(pk)
                ranks = {rank_of(one(d["process"][0], "process_name")) for d in t1.tracks.values() if "process" in d}
                ker = [s for s in t1.by_cat("kernel") if not s["name"].startswith("nccl")]
                want = sum(1 for t in truth if t.get("kind") == "kernel" and t.get("rank") == 1)
                check("pftrace --ranks 1: rank 1 alone, all its kernels", ranks == {1} and len(ker) == want,
                      "%s, %d kernels != %d" % (ranks, len(ker), want))

            part = os.path.join(work, "steps.pftrace")
            p = export(trace, part, "--steps", "10-19")
            pk, rc, err = decode(part)
            if check("pftrace --steps 10-19 decodes", p.returncode == 0 and rc == 0, err[-200:]):
                t2 = Trace(pk)
                idx = sorted(int(s["args"]["index"]) for s in t2.by_cat("step"))
                n_all = len([s for s in tr.by_cat("kernel")])
                n_part = len([s for s in t2.by_cat("kernel")])
                check("pftrace --steps 10-19: those 10 steps, a part of the kernels",
                      idx == list(range(10, 20)) and 0 < n_part < n_all, "%s, %d of %d" % (idx, n_part, n_all))

            late = os.path.join(work, "late.pftrace")
            p = export(trace, late, "--from", "100")
            pk, rc, err = decode(late)
            check("pftrace --from past the end: no events", p.returncode == 0 and rc == 0 and pk is not None
                  and not Trace(pk).by_cat("kernel"), err[-200:])
            p = export(trace, os.path.join(work, "x.json"), "--steps", "1-2")
            check("pftrace --steps with a .json name is a usage error", p.returncode == 2)
            js = os.path.join(work, "still.json")
            p = export(trace, js)
            ok = p.returncode == 0
            if ok:
                with open(js) as f:
                    ok = "traceEvents" in json.load(f)
            check("pftrace a .json name still writes the Kineto-compatible JSON", ok)
    cleanup(work)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
