#!/bin/sh
# The I/O part of `make bench`: runs BUILD/bench_io with and without the
# agent (LD_PRELOAD=BUILD/libagent.so) in alternating order, ROUNDS times
# per case, and prints a Markdown table of median times and their ratios,
# and the bytes the trace takes on disk per recorded event.
# Usage: tools/bench.sh [BUILD]   (env: ROUNDS, default 10)
set -eu

build=${1:-build}
rounds=${ROUNDS:-10}
agent=$(cd "$build" && pwd)/libagent.so
driver=$build/bench_io
ringside=$build/ringside
for f in "$agent" "$driver" "$ringside"; do
    [ -f "$f" ] || { echo "bench.sh: $f is missing (make $f)" >&2; exit 1; }
done

# Scratch space on a disk file system, not /dev/shm: paths under /dev are
# not recorded by default.
work=$(mktemp -d "${TMPDIR:-/tmp}/ringside-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# One timed run: CASE CALLS MODE (none|agent); appends "wall thread_cpu" (ns
# per call) to $work/CASE.MODE and leaves the agent's trace in $work/out/CASE.
# /dev/null is recorded only with RINGSIDE_IO_EXCLUDE set and empty.
run() {
    if [ "$1" = pwrite ]; then set -- "$@" "$work"; else set -- "$@" /dev/null; fi
    if [ "$3" = none ]; then
        line=$("$driver" "$1" "$2" "$4")
    elif [ "$1" = pwrite ]; then
        line=$(RINGSIDE_OUT="$work/out/$1" LD_PRELOAD="$agent" "$driver" "$1" "$2" "$4")
    else
        line=$(RINGSIDE_OUT="$work/out/$1" RINGSIDE_IO_EXCLUDE= LD_PRELOAD="$agent" \
               "$driver" "$1" "$2" "$4")
    fi
    echo "$line" | tr ' ' '\n' | awk -F= '$1=="wall_ns"{w=$2} $1=="thread_cpu_ns"{t=$2}
                                          END{print w, t}' >>"$work/$1.$3"
}

median() { # column $2 of file $1
    sort -n -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END{
        print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}

# Trace bytes per recorded event, from the trace's own counters (the last
# chunk's); prints "bytes_per_event dropped".
per_event() {
    trace=$(find "$work/out/$1" -name '*.trace.lz4' | head -n 1)
    [ -n "$trace" ] || { echo "bench.sh: no trace for $1" >&2; exit 1; }
    size=$(wc -c <"$trace")
    "$ringside" dump "$trace" | grep '"type":"chunk"' | tail -n 1 |
        sed 's/.*"recorded":\([0-9]*\),"dropped":\([0-9]*\).*/\1 \2/' |
        awk -v s="$size" '{ if ($1 > 0) printf "%.1f %d\n", s / $1, $2; else print "n/a", $2 }'
}

# Calls per run: a few hundred ms each on a slow machine.
calls_pwrite=600000
calls_devnull=2000000

i=0
while [ $i -lt "$rounds" ]; do
    if [ $((i % 2)) -eq 0 ]; then first=none second=agent; else first=agent second=none; fi
    for c in pwrite devnull; do
        eval n=\$calls_$c
        rm -rf "$work/out/$c"
        run $c "$n" $first
        run $c "$n" $second
    done
    i=$((i + 1))
done

time_row() { # CASE LABEL TARGET
    nw=$(median "$work/$1.none" 1); aw=$(median "$work/$1.agent" 1)
    nc=$(median "$work/$1.none" 2); ac=$(median "$work/$1.agent" 2)
    awk -v l="$2" -v t="$3" -v nw="$nw" -v aw="$aw" -v nc="$nc" -v ac="$ac" 'BEGIN{
        r = aw / nw
        printf "| %s | %.0f ns | %.0f ns | %.2fx | %.2fx | %s | %s |\n", l, nw, aw, r, ac / nc,
               t == "" ? "-" : "<= " t "x", t == "" ? "-" : (r <= t + 0 ? "yes" : "no") }'
}

size_row() { # CASE LABEL TARGET
    set -- "$@" $(per_event "$1")
    awk -v l="$2" -v t="$3" -v b="$4" -v d="$5" 'BEGIN{
        printf "| %s | - | %s B (%d dropped) | - | - | <= %s B | %s |\n", l, b, d, t,
               (b != "n/a" && b <= t + 0 && d == 0) ? "yes" : "no" }'
}

echo "I/O hooks, agent vs. none: medians of $rounds alternating rounds (per call: wall time,"
echo "and the CPU time of the calling thread, which leaves out the agent's writer thread)."
echo
echo "| case | none | agent | wall ratio | thread CPU ratio | target | met |"
echo "|---|---:|---:|---:|---:|---|---|"
time_row pwrite "(a) 64-byte pwrite, page-cache file" 1.10
time_row devnull "(b) 64-byte write, /dev/null (recorded)" ""
size_row pwrite "(c) trace bytes per event, pwrite trace" 16
size_row devnull "(c) trace bytes per event, /dev/null trace" 16
