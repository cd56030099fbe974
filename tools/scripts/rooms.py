#!/usr/bin/env python3
"""The reporter's house rule (reporter/ROOMS, docs/design.md): every source
file of reporter/ lives in a room; a file includes only headers of its own
room and of the rooms its room's line names; and the units (a .c with its
.h, named by room/name) include each other in no circle.

    rooms.py [ROOT]      ROOT: the tree to check (default: this checkout)

Prints each problem on a line of its own, naming the file, the line and the
include, and exits with 1 when there is one; prints a line of counts and
exits with 0 when there is none."""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"(reporter/[^"]+)"')


def read_rooms(root):
    """{room: set of rooms it may include, itself among them}, in file order."""
    rooms = {}
    path = os.path.join(root, "reporter", "ROOMS")
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] in rooms:
                sys.exit("rooms.py: %s:%d: room %s named twice" % (path, n, words[0]))
            rooms[words[0]] = set(words)
    for room, below in rooms.items():
        for r in below - set(rooms):
            sys.exit("rooms.py: %s: room %s may include %s, which is not a room" % (path, room, r))
    return rooms


def sources(root):
    """(path relative to root, room or None) of every .c and .h under reporter/."""
    out = []
    top = os.path.join(root, "reporter")
    for dirpath, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                parts = rel.split(os.sep)
                out.append((rel, parts[1] if len(parts) == 3 else None))
    return out


def unit(rel):
    """reporter/ROOM/NAME.c -> ROOM/NAME."""
    return os.path.splitext(rel)[0].split(os.sep, 1)[1]


def circles(edges):
    """The strongly connected parts of more than one unit (Tarjan's, by a
    stack of its own: no recursion limit), each sorted."""
    index, low, on, stack, found = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    part = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        part.append(w)
                        if w == v:
                            break
                    if len(part) > 1:
                        found.append(sorted(part))
    return found


def check(root):
    rooms = read_rooms(root)
    problems, edges, nincl = [], {}, 0
    files = sources(root)
    for rel, room in files:
        if room is None or room not in rooms:
            problems.append("%s: not in a room of reporter/ROOMS (%s)" % (rel, ", ".join(rooms)))
            continue
        me = unit(rel)
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                nincl += 1
                target = m.group(1)
                parts = target.split("/")
                if len(parts) != 3 or parts[1] not in rooms:
                    problems.append('%s:%d: #include "%s": not a header of a room' % (rel, n, target))
                    continue
                if not os.path.exists(os.path.join(root, target)):
                    problems.append('%s:%d: #include "%s": no such file' % (rel, n, target))
                    continue
                if parts[1] not in rooms[room]:
                    order = list(rooms)
                    way = "up" if order.index(parts[1]) < order.index(room) else "across"
                    problems.append('%s:%d: #include "%s": %s, from room %s to room %s (%s may include %s)'
                                    % (rel, n, target, way, room, parts[1], room,
                                       ", ".join(sorted(rooms[room] - {room})) or "no other room"))
                other = unit(target)
                if other != me:
                    edges.setdefault(me, set()).add(other)
    for part in circles(edges):
        problems.append("a circle of includes between %d units: %s" % (len(part), " ".join(part)))
    return problems, len(files), nincl, len(rooms)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    problems, nfiles, nincl, nrooms = check(root)
    for p in problems:
        print(p)
    if problems:
        print("rooms.py: %d problems in %d files of reporter/" % (len(problems), nfiles))
        return 1
    print("rooms.py: %d files in %d rooms, %d includes, none up or across, no circle" % (nfiles, nrooms, nincl))
    return 0


if __name__ == "__main__":
    sys.exit(main())
