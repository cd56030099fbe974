#!/bin/sh
# The sampler part of `make bench`: a CPU-bound program (tests/programs/hot3)
# without the agent, and with it sampling at 99 Hz and 999 Hz (file I/O
# hooks on as always), in alternating order, ROUNDS times each; prints the
# median CPU time (user + system) and wall time of each, their ratios to no
# agent, and the cost per sample: the CPU time the agent added at 999 Hz
# divided by the samples in its trace (signal delivery, unwinding, record).
# Usage: tools/bench/bench_sample.sh [BUILD]   (env: ROUNDS, default 7)
set -eu

build=${1:-build}
rounds=${ROUNDS:-7}
agent=$(cd "$build" && pwd)/libagent.so
prog=$build/tests/prog/hot3
runner=$build/bench_run
for f in "$agent" "$prog" "$runner" "$build/ringside"; do
    [ -f "$f" ] || { echo "bench_sample.sh: $f is missing" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/ringside-bench-sample.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
args="1200 100000"

one() { # MODE
    case $1 in
    none) line=$("$runner" "$prog" $args) ;;
    *) rm -rf "$work/out.$1"
       line=$(RINGSIDE_OUT="$work/out.$1" RINGSIDE_SAMPLE_HZ=$1 LD_PRELOAD="$agent" "$runner" "$prog" $args) ;;
    esac
    echo "$line" | tr ' ' '\n' | awk -F= '$1=="wall_ns"{w=$2} $1=="cpu_ns"{c=$2} END{print w, c}' >>"$work/$1"
}

i=0
while [ $i -lt "$rounds" ]; do
    if [ $((i % 2)) -eq 0 ]; then order="none 0 99 999"; else order="999 99 0 none"; fi
    for m in $order; do one $m; done
    i=$((i + 1))
done

median() { # FILE COLUMN
    sort -n -k"$2","$2" "$1" | awk -v c="$2" '{v[NR]=$c} END{
        print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}
samples=$("$build/ringside" dump "$(find "$work/out.999" -name '*.trace.lz4' | head -n 1)" |
          grep -c '"type":"sample"' || true)
nc=$(median "$work/none" 2); nw=$(median "$work/none" 1)
echo
echo "Sampler cost on a CPU-bound program (hot3 $args, median of $rounds alternating runs)"
echo
zc=$(median "$work/0" 2)
echo "| case | CPU time | ratio to no agent | ratio to agent, sampler off | wall time | target |"
echo "|---|---|---|---|---|---|"
printf '| no agent | %.0f ms | 1.000x | - | %.0f ms | - |\n' "$(echo "$nc / 1000000" | bc -l)" \
    "$(echo "$nw / 1000000" | bc -l)"
for m in 0 99 999; do
    c=$(median "$work/$m" 2); w=$(median "$work/$m" 1)
    awk -v m="$m" -v c="$c" -v w="$w" -v nc="$nc" -v zc="$zc" 'BEGIN{
        r = c / nc; t = (m == 99) ? "<= 1.01x: " (r <= 1.01 ? "yes" : "no") : "-"
        printf "| agent, %s | %.0f ms | %.3fx | %s | %.0f ms | %s |\n", m == 0 ? "sampler off" : m " Hz",
               c / 1e6, r, m == 0 ? "-" : sprintf("%.3fx", c / zc), w / 1e6, t }'
done
# The handler's own timing (RINGSIDE_LOG=2 prints it at exit).
stats=$(RINGSIDE_OUT="$work/out.stats" RINGSIDE_LOG=2 RINGSIDE_SAMPLE_HZ=999 LD_PRELOAD="$agent" \
        "$prog" $args 2>&1 >/dev/null | grep 'ringside: sampler:' || true)
echo
echo "Per sample (from the handler's own clock): ${stats#ringside: sampler: }"
echo "Samples in a 999 Hz trace: $samples (CPU-time timers fire at most once per kernel tick;"
echo "each sample's weight counts the periods it stands for)"
