#!/usr/bin/env python3
"""A Kineto trace cut down to a fuzz seed: every top-level key but
traceEvents as it is (deviceProperties, distributedInfo, the base time, a
ringside export's process list), and of traceEvents the metadata, a few
profiler steps and the GPU work of a short window with the launches that
made it (matched by correlation), in time order, up to about MAX bytes.

    kineto_cut.py TRACE(.json|.json.gz) MAX OUT
"""
import gzip
import json
import sys


def main():
    src, limit, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    opener = gzip.open if open(src, "rb").read(2) == b"\x1f\x8b" else open
    with opener(src, "rt") as f:
        doc = json.load(f)
    events = doc.get("traceEvents", [])
    meta = [e for e in events if e.get("ph") == "M"][:20]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")][:3]
    gpu = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                 key=lambda e: e.get("ts", 0))
    # from the second step on, where a real step's work is
    start = steps[1]["ts"] if len(steps) > 1 else (gpu[0]["ts"] if gpu else 0)
    gpu = [e for e in gpu if e.get("ts", 0) >= start] or gpu
    launches = {}
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and corr is not None:
            launches[corr] = e
    # an NCCL kernel first, when the window has one, so each seed holds a collective
    nccl = [e for e in gpu if "nccl" in str(e.get("name", "")).lower()][:2]
    kept = meta + steps
    size = len(json.dumps({k: v for k, v in doc.items() if k != "traceEvents"})) + len(json.dumps(kept))
    for e in nccl + gpu:
        pair = [e]
        corr = (e.get("args") or {}).get("correlation")
        if corr in launches:
            pair.append(launches[corr])
        add = sum(len(json.dumps(x)) + 3 for x in pair)
        if size + add > limit:
            break
        for x in pair:
            if x not in kept:
                kept.append(x)
        size += add
    kept.sort(key=lambda e: (e.get("ph") != "M", e.get("ts", 0)))
    with open(out, "w") as f:
        f.write("{\n")
        for k, v in doc.items():
            if k != "traceEvents":
                f.write("  %s: %s,\n" % (json.dumps(k), json.dumps(v)))
        f.write('  "traceEvents": [\n')
        f.write(",\n".join("  " + json.dumps(e) for e in kept))
        f.write("\n]}\n")


main()
