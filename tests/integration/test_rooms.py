#!/usr/bin/env python3
"""The reporter's house rule (reporter/ROOMS, docs/design.md "The
reporter's rooms"): tools/scripts/rooms.py passes on this tree, and fails,
naming the file and line, on a copy with an include that goes up a room,
one that goes across, a circle of includes between two units of one room,
and a source file outside any room."""
import os
import shutil
import subprocess
import sys
import tempfile

from rstest import ROOT, check, failures

SCRIPT = os.path.join(ROOT, "tools", "scripts", "rooms.py")


def rooms(root):
    p = subprocess.run([sys.executable, SCRIPT, root], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=False)
    return p.returncode, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


def planted(work, name, edit):
    """A copy of reporter/ with edit(root) applied; rooms.py's status and output."""
    root = os.path.join(work, name)
    shutil.copytree(os.path.join(ROOT, "reporter"), os.path.join(root, "reporter"))
    edit(root)
    return rooms(root)


def add_include(root, path, header):
    """Adds #include "header" after the first include of path."""
    full = os.path.join(root, path)
    with open(full, encoding="utf-8") as f:
        lines = f.read().split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith("#include"))
    lines.insert(at + 1, '#include "%s"' % header)
    with open(full, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return at + 2


def main():
    rc, out = rooms(ROOT)
    check("rooms: this tree keeps the rule (%s)" % out.strip().splitlines()[-1][:120], rc == 0, out[-600:])
    with tempfile.TemporaryDirectory(prefix="rs-rooms-") as work:
        line = []
        rc, out = planted(work, "up", lambda r: line.append(
            add_include(r, "reporter/base/json.c", "reporter/load/model.h")))
        want = 'reporter/base/json.c:%d: #include "reporter/load/model.h": up, from room base to room load' % line[0]
        check("rooms: an include up a room fails, naming file, line and rooms", rc == 1 and want in out,
              "status %d: %s" % (rc, out[-400:]))
        rc, out = planted(work, "across", lambda r: add_include(r, "reporter/out/prom.c", "reporter/mpi/mpi.h"))
        check("rooms: an include across (out to mpi) fails", rc == 1 and "up, from" not in out and
              "across, from room out to room mpi" in out, "status %d: %s" % (rc, out[-400:]))
        # summary.c includes period.h: period.c including summary.h closes a circle
        rc, out = planted(work, "circle", lambda r: add_include(r, "reporter/load/period.c",
                                                                  "reporter/load/summary.h"))
        check("rooms: a circle of includes within a room fails, naming its units",
              rc == 1 and "a circle of includes between 2 units: load/period load/summary" in out,
              "status %d: %s" % (rc, out[-400:]))

        def loose(r):
            with open(os.path.join(r, "reporter", "stray.c"), "w", encoding="utf-8") as f:
                f.write("int rsr_stray;\n")
        rc, out = planted(work, "loose", loose)
        check("rooms: a source file outside the rooms fails", rc == 1 and "reporter/stray.c: not in a room" in out,
              "status %d: %s" % (rc, out[-400:]))
    return 1 if failures() else 0


if __name__ == "__main__":
    sys.exit(main())
