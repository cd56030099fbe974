#!/bin/sh
# The fixed-cost part of `make bench`: what the agent adds to a process that
# does nothing, /bin/true, started ROUNDS times each without the agent, with
# it and the sampler off, and with its defaults, in alternating order. Each
# start is timed by bench_run from outside (wall time, and the child's CPU
# time from wait4), through env(1) on every side so that only the child
# sees LD_PRELOAD. Prints the medians and what the agent adds to them.
# Usage: tools/bench/bench_start.sh [BUILD]   (env: ROUNDS, default 200)
set -eu

build=${1:-build}
rounds=${ROUNDS:-200}
agent=$(cd "$build" && pwd)/libagent.so
runner=$build/bench_run
for f in "$agent" "$runner"; do
    [ -f "$f" ] || { echo "bench_start.sh: $f is missing" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/ringside-bench-start.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
true_bin=$(command -v true)
case $true_bin in /*) ;; *) true_bin=/bin/true ;; esac

one() { # MODE: none | off | on
    case $1 in
    none) line=$("$runner" env "$true_bin") ;;
    off) line=$("$runner" env RINGSIDE_OUT="$work/out" RINGSIDE_SAMPLE_HZ=0 LD_PRELOAD="$agent" "$true_bin") ;;
    on) line=$("$runner" env RINGSIDE_OUT="$work/out" LD_PRELOAD="$agent" "$true_bin") ;;
    esac
    echo "$line" | tr ' ' '\n' | awk -F= '$1=="wall_ns"{w=$2} $1=="cpu_ns"{c=$2} END{print w, c}' >>"$work/$1"
}

i=0
while [ $i -lt "$rounds" ]; do
    if [ $((i % 2)) -eq 0 ]; then order="none off on"; else order="on off none"; fi
    for m in $order; do one $m; done
    i=$((i + 1))
done
if [ -d "$work/out" ] && [ -n "$(find "$work/out" -type f)" ]; then
    echo "bench_start.sh: the agent wrote a trace for /bin/true, which makes no event" >&2
    exit 1
fi

median() { # FILE COLUMN
    sort -n -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END{
        print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}
nw=$(median "$work/none" 1); nc=$(median "$work/none" 2)
echo
echo "Fixed cost: starting and ending a process that does nothing ($true_bin, through env(1)"
echo "on every side), median of $rounds alternating runs; CPU is the child's user + system time"
echo "(wait4, microsecond resolution)"
echo
echo "| case | wall | added | CPU | added |"
echo "|---|---:|---:|---:|---:|"
for m in none off on; do
    w=$(median "$work/$m" 1); c=$(median "$work/$m" 2)
    awk -v m="$m" -v w="$w" -v c="$c" -v nw="$nw" -v nc="$nc" 'BEGIN{
        l = (m == "none") ? "no agent" : (m == "off") ? "agent, sampler off" : "agent (defaults)"
        printf "| %s | %.2f ms | %s | %.2f ms | %s |\n", l, w / 1e6,
               m == "none" ? "-" : sprintf("+%.2f ms", (w - nw) / 1e6), c / 1e6,
               m == "none" ? "-" : sprintf("+%.2f ms", (c - nc) / 1e6) }'
done
