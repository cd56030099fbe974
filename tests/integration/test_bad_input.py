#!/usr/bin/env python3
"""`ringside dump` and `ringside report` on damaged traces: a real trace (a
Python writer under the agent) cut at many offsets, emptied, given a wrong
magic, replaced by random bytes, and with single bits flipped (seeded). Frame
boundaries come from parsing the LZ4 frame format here, not from the reader.
Each run must end by exit status, never by a signal or a sanitizer report (the
ASan+UBSan build in $BUILD/asan is used when there is one), print one line
naming the file and the offset of the damaged frame, and print exactly the
records of the frames that are whole."""
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
from rstest import ROOT, BUILD, AGENT, failures, report_problems

SANITIZED = os.path.join(BUILD, "asan", "ringside")
RINGSIDE = SANITIZED if os.path.exists(SANITIZED) else os.path.join(BUILD, "ringside")
# Leaks are the fuzzer's to find (it walks the same reader with LeakSanitizer
# on); here a report must be a crash or undefined behaviour.
SAN_ENV = dict(os.environ, ASAN_OPTIONS="abort_on_error=1:detect_leaks=0",
               UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1")
SEED = 20240601

def frame_end(data, at):
    """Where the LZ4 frame at offset at ends, by the frame format's own rules
    (magic, FLG/BD, optional content size, blocks, end mark, optional
    checksums), or None when its blocks run past the end of data."""
    flg = data[at + 4]
    at += 4 + 2 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0) + 1
    while at + 4 <= len(data):
        (size,) = struct.unpack_from("<I", data, at)
        at += 4
        if size == 0:
            at += 4 if flg & 0x04 else 0
            return at if at <= len(data) else None
        at += (size & 0x7FFFFFFF) + (4 if flg & 0x10 else 0)
    return None


def lz4_frames(data):
    """Start offsets of the LZ4 frames in data, then its length."""
    starts, at = [], 0
    while at < len(data):
        assert struct.unpack_from("<I", data, at)[0] == 0x184D2204, f"not a frame at {at}"
        starts.append(at)
        at = frame_end(data, at)
    return starts + [len(data)]


def run(args):
    r = subprocess.run([RINGSIDE] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=SAN_ENV, check=False)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def crashed(rc, err):
    """Why a run counts as a crash, or None."""
    if rc < 0:
        return f"killed by signal {-rc}"
    if "Sanitizer" in err or "runtime error:" in err:
        return "sanitizer report: " + next(l for l in err.splitlines() if "Sanitizer" in l or "runtime error" in l)
    return None


# Names dump resolves through strings defined in earlier chunks: they go
# missing, rightly, when one of those chunks is lost.
RESOLVED = {"file": "name", "thread": "name_text", "io": "path"}


def chunk_lines(text):
    """dump's records, one list per chunk, without the resolved names."""
    out = []
    for line in text.splitlines():
        rec = json.loads(line)
        if rec["type"] == "chunk":
            out.append([])
        rec.pop(RESOLVED.get(rec["type"], ""), None)
        out[-1].append(rec)
    return out


class Case:
    """One damaged file and what dump and report must say about it."""

    def __init__(self, tmp, name, data):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.path = os.path.join(self.dir, "bad.trace.lz4")
        with open(self.path, "wb") as f:
            f.write(data)

    def dump(self, problems, rc_want, offset, chunks, prefix=False):
        """dump must exit rc_want, name the file at offset (None: no line
        wanted), and print exactly chunks (as chunk_lines gives them), or
        with prefix, print them first."""
        rc, out, err = run(["dump", self.path])
        why = crashed(rc, err)
        if why:
            return problems.append(f"{self.path}: dump {why}")
        if rc != rc_want:
            problems.append(f"{self.path}: dump exited {rc}, wanted {rc_want}: {err.strip()[:200]}")
        if offset is not None and not re.search(rf"^ringside: {re.escape(self.path)}: offset {offset}\b", err, re.M):
            problems.append(f"{self.path}: dump gave no line naming the file at offset {offset}: {err.strip()[:200]}")
        got = chunk_lines(out)
        if (got[:len(chunks)] if prefix else got) != chunks:
            problems.append(f"{self.path}: dump printed {len(chunk_lines(out))} chunks, wanted {len(chunks)} "
                            "(or their records differ)")

    def report(self, problems, readable):
        """report: 0 and a warning naming the file when something was
        readable, 1 and a line naming the file when nothing was."""
        rc, _, err = run(["report", self.dir, "-o", os.path.join(self.dir, "out"), "-q"])
        why = crashed(rc, err)
        if why:
            return problems.append(f"{self.path}: report {why}")
        if rc != (0 if readable else 1):
            problems.append(f"{self.path}: report exited {rc}, wanted {0 if readable else 1}")
        if not re.search(rf"^ringside: {re.escape(self.path)}: ", err, re.M):
            problems.append(f"{self.path}: report gave no line naming the file: {err.strip()[:200]}")


WRITER = r"""
import os, sys, time
for i in range(8):
    with open(sys.argv[1], "ab") as f:
        f.write(b"y" * (500 + i))
    time.sleep(0.06)
"""


def make_trace(tmp):
    """A real trace of several chunks: the file with the most frames."""
    out = os.path.join(tmp, "traces")
    env = dict(os.environ, LD_PRELOAD=AGENT, RINGSIDE_OUT=out, RINGSIDE_FLUSH_MS="50")
    subprocess.run([sys.executable, "-c", WRITER, os.path.join(tmp, "written")], env=env, check=True)
    best = None
    for d, _, fs in os.walk(out):
        for f in fs:
            with open(os.path.join(d, f), "rb") as fh:
                data = fh.read()
            if best is None or len(lz4_frames(data)) > len(lz4_frames(best)):
                best = data
    return best


def main():
    if not os.path.exists(AGENT) or not os.path.exists(RINGSIDE):
        print(f"not ok bad_input: {AGENT} or {RINGSIDE} is not built")
        return 1
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="rs-bad-") as tmp:
        data = make_trace(tmp)
        frames = lz4_frames(data)
        nframes = len(frames) - 1
        whole = Case(tmp, "whole", data)
        rc, out, err = run(["dump", whole.path])
        chunks = chunk_lines(out)
        if rc != 0 or len(chunks) != nframes or nframes < 3:
            report_problems("bad_input_baseline", [f"dump of the whole trace: exit {rc}, {len(chunks)} chunks of "
                                          f"{nframes} frames (3 or more wanted): {err.strip()[:200]}"])
            return 1

        # Cut at every frame boundary, a few bytes into each frame, and at
        # seeded offsets: the whole frames before the cut read, the cut one
        # is named by its start.
        problems = []
        cuts = set(frames[1:-1])
        for s in frames[:-1]:
            cuts.update(s + d for d in (1, 3, 4, 7, 15, 30))
        cuts.update(rng.randrange(1, len(data)) for _ in range(30))
        for i, cut in enumerate(sorted(c for c in cuts if 0 < c < len(data))):
            k = max(j for j in range(nframes) if frames[j] <= cut)
            case = Case(tmp, f"cut{cut}", data[:cut])
            at_boundary = cut == frames[k]
            case.dump(problems, 0 if at_boundary else 1, None if at_boundary else frames[k], chunks[:k])
            if i % 4 == 0:  # report repeats the walk: a sample is enough
                case.report(problems, readable=k > 0)
        report_problems("truncated_at_many_offsets", problems)

        problems = []
        case = Case(tmp, "empty", b"")
        case.dump(problems, 1, 0, [])
        case.report(problems, readable=False)
        report_problems("zero_length_file", problems)

        problems = []
        case = Case(tmp, "magic", b"\x00" + data[1:])
        case.dump(problems, 1, 0, chunks[1:])
        case.report(problems, readable=True)
        report_problems("wrong_magic_resyncs_to_next_frame", problems)

        problems = []
        for n in (1, 5, 64, 4096, 100000):
            case = Case(tmp, f"random{n}", bytes(rng.randrange(256) for _ in range(n)))
            case.dump(problems, 1, 0, [])
            case.report(problems, readable=False)
        report_problems("random_bytes", problems)

        # One bit flipped: the frame's checksums catch it and only that frame
        # is lost, unless the flip leaves the decoded bytes as they were (a
        # match offset into a run of equal bytes), which the lz4 tool decides.
        plain = subprocess.run(["lz4", "-dc", whole.path], stdout=subprocess.PIPE, check=True).stdout
        problems = []
        positions = sorted(rng.sample(range(len(data)), min(60, len(data))))
        for n, pos in enumerate(positions):
            k = max(j for j in range(nframes) if frames[j] <= pos)
            bad = bytearray(data)
            bad[pos] ^= 1 << rng.randrange(8)
            case = Case(tmp, f"flip{pos}", bytes(bad))
            lz4 = subprocess.run(["lz4", "-dc", case.path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if lz4.returncode == 0 and lz4.stdout == plain:
                case.dump(problems, 0, None, chunks)
                continue
            case.dump(problems, 1, frames[k], chunks[:k] + chunks[k + 1:])
            if n % 4 == 0:
                case.report(problems, readable=nframes > 1)
        report_problems("single_bit_flips", problems)
    print(f"# ringside under test: {RINGSIDE}")
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
