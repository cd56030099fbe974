#!/bin/sh
# The I/O part of `make bench`: runs BUILD/bench_io with and without the
# agent (LD_PRELOAD=BUILD/libagent.so) in alternating order, ROUNDS times
# per case, and prints a Markdown table of the best times and their ratios,
# and the bytes the trace takes on disk per recorded event.
# Usage: tools/bench/bench.sh [BUILD]   (env: ROUNDS, default 30)
set -eu

build=${1:-build}
rounds=${ROUNDS:-30}
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

# One pwrite-pairs run (bench_io): MODE none|agent; appends "call bare diff"
# (ns per call) to $work/pairs.MODE.
pairs_run() {
    if [ "$1" = none ]; then
        line=$("$driver" pwrite-pairs "$calls_pairs" "$work")
    else
        rm -rf "$work/out/pairs"
        line=$(RINGSIDE_OUT="$work/out/pairs" LD_PRELOAD="$agent" "$driver" pwrite-pairs "$calls_pairs" "$work")
    fi
    echo "$line" | tr ' ' '\n' | awk -F= '$1=="call_ns"{c=$2} $1=="bare_ns"{b=$2} $1=="diff_ns"{d=$2}
                                          END{print c, b, d}' >>"$work/pairs.$1"
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

# Calls per run: a few hundred ms each, so that the agent's start (its writer
# thread's set-up runs beside the first calls) weighs little.
calls_pwrite=600000
calls_devnull=2000000
# Batches of 200 + 200 calls per pwrite-pairs run.
calls_pairs=1000

i=0
while [ $i -lt "$rounds" ]; do
    if [ $((i % 2)) -eq 0 ]; then first=none second=agent; else first=agent second=none; fi
    for c in pwrite devnull; do
        eval n=\$calls_$c
        rm -rf "$work/out/$c"
        run $c "$n" $first
        run $c "$n" $second
    done
    pairs_run $first
    pairs_run $second
    i=$((i + 1))
done

best() { # smallest value in column $2 of file $1
    sort -g -k"$2","$2" "$1" | head -n 1 | cut -d' ' -f"$2"
}

# Ratios of agent / none within each round, column $2 of CASE's files (a
# round's two runs are next to each other in time): "median q1 q3".
paired_ratios() { # CASE COLUMN
    paste -d' ' "$work/$1.none" "$work/$1.agent" | awk -v c="$2" '{ print $(c + 2) / $c }' |
        sort -g | awk '{ v[NR] = $1 } END{ q = int((NR + 3) / 4); printf "%.2f %.2f %.2f\n",
                             (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2, v[q], v[NR + 1 - q] }'
}

# The best run of each (the least time per call) and their ratio. This VM
# runs in phases: for a few hundred ms a 64-byte pwrite takes ~370 ns, then
# ~600 ns or more, whatever runs; the best runs of many are those of the
# fast phase on both sides, where the ratio of medians is a draw of phases.
time_row() { # CASE LABEL TARGET
    nw=$(best "$work/$1.none" 1); aw=$(best "$work/$1.agent" 1)
    nc=$(best "$work/$1.none" 2); ac=$(best "$work/$1.agent" 2)
    awk -v l="$2" -v t="$3" -v nw="$nw" -v aw="$aw" -v nc="$nc" -v ac="$ac" 'BEGIN{
        r = aw / nw
        printf "| %s | %.0f ns | %.0f ns | %.2fx | %.2fx | %s | %s |\n", l, nw, aw, r, ac / nc,
               t == "" ? "-" : "<= " t "x", t == "" ? "-" : (r <= t + 0 ? "yes" : "no") }'
}

spread_line() { # CASE LABEL
    set -- "$1" "$2" $(paired_ratios "$1" 1) $(median "$work/$1.none" 1) $(median "$work/$1.agent" 1)
    printf "%s: median of the rounds' own ratios %sx (quartiles %sx to %sx); medians %.0f ns and %.0f ns\n" \
        "$2" "$3" "$4" "$5" "$6" "$7"
}

size_row() { # CASE LABEL TARGET
    set -- "$@" $(per_event "$1")
    awk -v l="$2" -v t="$3" -v b="$4" -v d="$5" 'BEGIN{
        printf "| %s | - | %s B (%d dropped) | - | - | <= %s B | %s |\n", l, b, d, t,
               (b != "n/a" && b <= t + 0 && d == 0) ? "yes" : "no" }'
}

# Inside one process: each side's pwrite against bare pwrite64 system calls
# in alternating batches (bench_io pwrite-pairs), the median over rounds of
# each run's median difference; the ratio puts both on the bare call.
pairs_row() {
    bare=$(cat "$work/pairs.none" "$work/pairs.agent" | sort -g -k2,2 |
           awk '{ v[NR] = $2 } END{ print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }')
    dn=$(median "$work/pairs.none" 3); da=$(median "$work/pairs.agent" 3)
    awk -v b="$bare" -v dn="$dn" -v da="$da" 'BEGIN{
        printf "| (a) the same inside one process: bare system call %.0f ns, glibc +%.1f ns, agent +%.1f ns | %.0f ns | %.0f ns | %.2fx | - | - | - |\n",
               b, dn, da, b + dn, b + da, (b + da) / (b + dn) }'
}

echo "I/O hooks, agent vs. none: $rounds rounds, each one run of each in alternating order; the"
echo "best run of each (least time per call: wall, and CPU of the calling thread, which leaves"
echo "out the writer thread) and their ratio. The second (a) row measures inside one process,"
echo "where the machine's phases fall out: batches of 200 pwrite calls (glibc's, or the agent's"
echo "hook) alternate with 200 bare pwrite64 system calls; medians over rounds of each run's"
echo "median difference, and the ratio of the two on the bare call."
echo
echo "| case | none | agent | wall ratio | thread CPU ratio | target | met |"
echo "|---|---:|---:|---:|---:|---|---|"
time_row pwrite "(a) 64-byte pwrite, page-cache file" 1.10
pairs_row
time_row devnull "(b) 64-byte write, /dev/null (recorded)" ""
size_row pwrite "(c) trace bytes per event, pwrite trace" 16
size_row devnull "(c) trace bytes per event, /dev/null trace" 16
echo
spread_line pwrite "(a), wall"
spread_line devnull "(b), wall"

# ---- waits: an uncontended mutex pair, a condition variable ping-pong ----
waiter=$build/bench_wait
[ -f "$waiter" ] || { echo "bench.sh: $waiter is missing (make $waiter)" >&2; exit 1; }
wait_rounds=${WAIT_ROUNDS:-15}
calls_mutex=20000000
calls_pingpong=50000

# One bench_wait run: CASE MODE (none|agent); appends "wall thread_cpu" (ns
# per pair or round trip) to $work/CASE.MODE.
wait_run() {
    eval n=\$calls_$1
    if [ "$2" = none ]; then
        line=$("$waiter" "$1" "$n")
    else
        line=$(RINGSIDE_OUT="$work/out/$1" LD_PRELOAD="$agent" "$waiter" "$1" "$n")
    fi
    echo "$line" | tr ' ' '\n' | awk -F= '$1=="wall_ns"{w=$2} $1=="thread_cpu_ns"{t=$2}
                                          END{print w, t}' >>"$work/$1.$2"
}

i=0
while [ $i -lt "$wait_rounds" ]; do
    if [ $((i % 2)) -eq 0 ]; then first=none second=agent; else first=agent second=none; fi
    for c in mutex pingpong; do
        rm -rf "$work/out/$c"
        wait_run $c $first
        wait_run $c $second
    done
    i=$((i + 1))
done

echo
echo "Wait hooks, agent vs. none: medians of $wait_rounds alternating rounds (wall; CPU of"
echo "the calling thread). (g) $calls_mutex pthread_mutex_lock/unlock pairs on a free"
echo "mutex, per pair, in a process with a second (idle) thread on both sides, as every"
echo "traced process has (glibc locks without the lock prefix in a one-thread process);"
echo "(h) $calls_pingpong round trips of a pthread_cond_signal/wait ping-pong between two"
echo "threads on one CPU (across CPUs a round trip takes what the VM's wake-ups take,"
echo "2-3x apart from run to run), per round trip."
echo
echo "| case | none | agent | wall ratio | thread CPU ratio | target | met |"
echo "|---|---:|---:|---:|---:|---|---|"
nw=$(median "$work/mutex.none" 1); aw=$(median "$work/mutex.agent" 1)
nc=$(median "$work/mutex.none" 2); ac=$(median "$work/mutex.agent" 2)
awk -v nw="$nw" -v aw="$aw" -v nc="$nc" -v ac="$ac" 'BEGIN{
    printf "| (g) uncontended pthread_mutex_lock/unlock pair | %.2f ns | %.2f ns (+%.2f ns) | %.2fx | %.2fx | <= +2 ns | %s |\n",
           nw, aw, aw - nw, aw / nw, ac / nc, aw - nw <= 2 ? "yes" : "no" }'
nw=$(median "$work/pingpong.none" 1); aw=$(median "$work/pingpong.agent" 1)
nc=$(median "$work/pingpong.none" 2); ac=$(median "$work/pingpong.agent" 2)
awk -v nw="$nw" -v aw="$aw" -v nc="$nc" -v ac="$ac" 'BEGIN{ r = aw / nw
    printf "| (h) pthread_cond_signal/wait ping-pong, round trip | %.0f ns | %.0f ns | %.2fx | %.2fx | <= 1.05x | %s |\n",
           nw, aw, r, ac / nc, r <= 1.05 ? "yes" : "no" }'
spread_line pingpong "(h), wall"

# ---- CUDA: cuLaunchKernel on the simulated driver, and simtrain end to end ----
sim=$(cd "$build" && pwd)/sim
launcher=$build/bench_launch
train=$build/simtrain
for f in "$sim/libcuda.so.1" "$launcher" "$train"; do
    [ -f "$f" ] || { echo "bench.sh: $f is missing (make $f)" >&2; exit 1; }
done
cuda_rounds=${CUDA_ROUNDS:-6}
launches=100000
# simtrain at about 20,000 launches and 100 collectives per second: one layer
# of 100 forward and 100 backward kernels (9 ms of GPU work) and one AllReduce
# per ~10 ms step.
train_args="--steps 100 --layers 1 --kernels-per-layer 100 --fwd-us 3000 --bwd-us 6000"

# One bench_launch run: MODE none|notiming|timing; appends "wall cpu" (ns per launch).
launch_run() {
    case $1 in
    none) line=$(LD_LIBRARY_PATH="$sim" "$launcher" $launches) ;;
    notiming) line=$(LD_LIBRARY_PATH="$sim" RINGSIDE_OUT="$work/out/launch" RINGSIDE_GPU_TIMING=none \
                     LD_PRELOAD="$agent" "$launcher" $launches) ;;
    timing) line=$(LD_LIBRARY_PATH="$sim" RINGSIDE_OUT="$work/out/launch" LD_PRELOAD="$agent" \
                   "$launcher" $launches) ;;
    esac
    echo "$line" | tr ' ' '\n' | awk -F= '$1=="wall_ns"{w=$2} $1=="thread_cpu_ns"{t=$2}
                                          END{print w, t}' >>"$work/launch.$1"
}

# One allocation run: MODE none|agent; appends "wall cpu" (ns per
# cuMemAlloc_v2 + cuMemFree_v2 pair of 2 MiB).
alloc_run() {
    if [ "$1" = none ]; then
        line=$(LD_LIBRARY_PATH="$sim" "$launcher" $launches alloc)
    else
        line=$(LD_LIBRARY_PATH="$sim" RINGSIDE_OUT="$work/out/alloc" LD_PRELOAD="$agent" "$launcher" $launches alloc)
    fi
    echo "$line" | tr ' ' '\n' | awk -F= '$1=="wall_ns"{w=$2} $1=="thread_cpu_ns"{t=$2}
                                          END{print w, t}' >>"$work/alloc.$1"
}

# One simtrain run: MODE none|agent; appends the training loop's wall seconds
# and the launches and collectives per second (from the agent's trace).
train_run() {
    if [ "$1" = none ]; then
        line=$(LD_LIBRARY_PATH="$sim" "$train" $train_args 2>&1)
    else
        line=$(LD_LIBRARY_PATH="$sim" RINGSIDE_OUT="$work/out/train" LD_PRELOAD="$agent" "$train" $train_args 2>&1)
    fi
    echo "$line" | sed -n 's/.* steps in \([0-9.]*\) s.*/\1 0/p' >>"$work/train.$1"
}

i=0
while [ $i -lt "$cuda_rounds" ]; do
    if [ $((i % 2)) -eq 0 ]; then order="none notiming timing"; else order="timing notiming none"; fi
    for m in $order; do launch_run $m; done
    if [ $((i % 2)) -eq 0 ]; then order="none agent"; else order="agent none"; fi
    for m in $order; do alloc_run $m; done
    rm -rf "$work/out/train"
    for m in $order; do train_run $m; done
    i=$((i + 1))
done

# Rates of the last agent run of simtrain, counted in its trace.
rates=$(trace=$(find "$work/out/train" -name '*.trace.lz4' | head -n 1)
        secs=$(tail -n 1 "$work/train.agent" | cut -d' ' -f1)
        "$ringside" dump "$trace" | awk -v s="$secs" '/"type":"gpu"/{g++} /"type":"coll"/{c++}
            END{ printf "%.0f launches/s, %.0f collectives/s", g / s, c / s }')

launch_row() { # MODE LABEL
    nw=$(median "$work/launch.none" 1); aw=$(median "$work/launch.$1" 1)
    nc=$(median "$work/launch.none" 2); ac=$(median "$work/launch.$1" 2)
    awk -v l="$2" -v nw="$nw" -v aw="$aw" -v nc="$nc" -v ac="$ac" 'BEGIN{
        printf "| %s | %.0f ns | %.0f ns (+%.0f ns) | %.2fx | %.2fx (+%.0f ns) | - | - |\n",
               l, nw, aw, aw - nw, aw / nw, ac / nc, ac - nc }'
}

echo
echo "CUDA, agent vs. none: medians of $cuda_rounds alternating rounds. cuLaunchKernel through"
echo "cuGetProcAddress_v2 on the simulated driver, per call (wall; CPU of the calling thread);"
echo "simtrain's training loop, wall time ($rates)."
echo
echo "| case | none | agent | wall ratio | thread CPU ratio | target | met |"
echo "|---|---:|---:|---:|---:|---|---|"
launch_row notiming "(d) cuLaunchKernel, RINGSIDE_GPU_TIMING=none"
launch_row timing "(e) cuLaunchKernel, GPU timing (event pair per launch)"
nw=$(median "$work/alloc.none" 1); aw=$(median "$work/alloc.agent" 1)
nc=$(median "$work/alloc.none" 2); ac=$(median "$work/alloc.agent" 2)
# two calls a pair: the target is per call
awk -v nw="$nw" -v aw="$aw" -v nc="$nc" -v ac="$ac" 'BEGIN{ d = (aw - nw) / 2
    printf "| (m) cuMemAlloc_v2 + cuMemFree_v2, 2 MiB, per pair | %.0f ns | %.0f ns (+%.0f ns a call) | %.2fx | %.2fx | <= +100 ns a call | %s |\n",
           nw, aw, d, aw / nw, ac / nc, d <= 100 ? "yes" : "no" }'
nw=$(median "$work/train.none" 1); aw=$(median "$work/train.agent" 1)
awk -v nw="$nw" -v aw="$aw" 'BEGIN{ r = aw / nw
    printf "| (f) simtrain, 1 rank, 100 steps | %.3f s | %.3f s | %.3fx | - | <= 1.02x | %s |\n",
           nw, aw, r, r <= 1.02 ? "yes" : "no" }'
echo
# What a kernel record costs on disk: the newest launch trace's bytes over
# its kernel records (each with its launch geometry: grid, block, shared
# memory, function).
kernel_bytes=$(trace=$(ls -t $(find "$work/out/launch" -name '*.trace.lz4') | head -n 1)
               n=$("$ringside" dump "$trace" | grep -c '"kind":"kernel"')
               awk -v s="$(stat -c %s "$trace")" -v n="$n" 'BEGIN{
                   printf "%.1f B per kernel record on disk (%d records in %d bytes, launch geometry included)", s / n, n, s }')
echo "$kernel_bytes"
