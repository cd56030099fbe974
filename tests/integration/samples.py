"""Helpers for the sampler tests: read a trace's stacks, samples and modules
through `ringside dump`, and symbolise native frames independently of
ringside, with binutils (readelf for the segment table, addr2line for the
function), using only the module map the trace recorded."""
import bisect
import re
import subprocess

from rstest import dump

PYBIT = 1 << 63
_PY_LINE = re.compile(r"^(.*:.*):([0-9]+)$")


def py_split(text):
    """(name, line) of a Python frame's string as the agent writes it,
    "pkg/mod.py:qualname:LINE"; line is None where there is none."""
    m = _PY_LINE.match(text or "")
    return (m.group(1), int(m.group(2))) if m else (text, None)


class Trace:
    def __init__(self, path):
        recs, self.rc, self.err = dump(path)
        self.strings = {}
        self.stacks = {}
        self.samples = []
        self.modules = []
        self.counters = {}
        for r in recs:
            t = r["type"]
            if t == "string":
                self.strings[r["id"]] = r["text"] if "text" in r else r.get("value")
            elif t == "stack":
                self.stacks[r["id"]] = r["frames"]
            elif t == "sample":
                self.samples.append(r)
            elif t == "module":
                self.modules.append(r)
            elif t == "chunk" and r.get("counters"):
                self.counters = r["counters"]
        self.modules.sort(key=lambda m: m["start"])
        self._starts = [m["start"] for m in self.modules]
        self._cache = {}

    def of_kind(self, kind):
        return [s for s in self.samples if s["kind"] == kind]

    def module_of(self, addr):
        i = bisect.bisect_right(self._starts, addr) - 1
        while i >= 0:
            m = self.modules[i]
            if m["start"] <= addr < m["end"]:
                return m
            i -= 1
            if i >= 0 and self.modules[i]["end"] <= addr and addr - self.modules[i]["end"] > 1 << 32:
                break
        return None

    def py_frames(self, stack):
        """[(name, line)] of the Python frames of a stack, innermost first."""
        return [py_split(self.strings.get(a & 0xFFFFFFFF)) for a in self.stacks.get(stack, []) if a & PYBIT]

    def frame_name(self, addr, innermost):
        """Function name of a frame: Python "pkg/mod.py:qualname" (no line),
        a native function from addr2line, or None when it cannot be placed."""
        if addr & PYBIT:
            return py_split(self.strings.get(addr & 0xFFFFFFFF))[0]
        key = (addr, innermost)
        if key not in self._cache:
            self._cache[key] = self._symbolise(addr if innermost else addr - 1)
        return self._cache[key]

    def _symbolise(self, addr):
        m = self.module_of(addr)
        if not m:
            return None
        path = m.get("path_text")
        off = addr - m["start"] + m["file_off"]
        vaddr = file_offset_to_vaddr(path, off)
        if vaddr is None:
            return None
        p = subprocess.run(["addr2line", "-f", "-e", path, "0x%x" % vaddr],
                           capture_output=True, text=True)
        name = p.stdout.splitlines()[0] if p.stdout else "??"
        return None if name == "??" else name

    def names(self, sample):
        frames = self.stacks.get(sample["stack"], [])
        return [self.frame_name(a, i == 0) for i, a in enumerate(frames)]


_segments = {}


def file_offset_to_vaddr(path, off):
    """The ELF virtual address of file offset off (readelf's PT_LOAD table)."""
    if path not in _segments:
        segs = []
        p = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            f = line.split()
            if f and f[0] == "LOAD":
                segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
        _segments[path] = segs
    for foff, vaddr, fsz in _segments[path]:
        if foff <= off < foff + fsz:
            return off - foff + vaddr
    return None


def folded(out, kind="cpu", lines=False, extra=()):
    """[(frames outermost first, weight)] from `ringside flame OUT --kind KIND -o -`
    (folded text; with --lines when lines, and the options in extra), or None
    when the command fails."""
    from rstest import RINGSIDE, run
    p = run([RINGSIDE, "flame", out, "--kind", kind, "-o", "-"] + (["--lines"] if lines else []) + list(extra))
    if p.returncode != 0:
        return None
    rows = []
    for line in p.stdout.decode().splitlines():
        stack, _, w = line.rpartition(" ")
        if stack:
            rows.append((stack.split(";"), int(w)))
    return rows


def weighted_shares(rows, pick, wanted):
    """Share (percent) of weight of each wanted name, pick(frames) giving a
    row's name, among rows whose name is wanted; and that total weight."""
    tot = {w: 0 for w in wanted}
    for frames, weight in rows:
        name = pick(frames)
        if name in tot:
            tot[name] += weight
    n = sum(tot.values())
    return {w: (100.0 * v / n if n else 0.0) for w, v in tot.items()}, n


def shares(names, wanted):
    """Share (percent) of each wanted name among the samples in names that
    are one of them, and how many samples that was."""
    n = sum(1 for x in names if x in wanted)
    return {w: (100.0 * sum(1 for x in names if x == w) / n if n else 0.0) for w in wanted}, n
