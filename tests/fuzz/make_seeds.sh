#!/bin/sh
# Seeds for fuzz_kineto, fuzz_diff and fuzz_nodes, all from real inputs, into
# OUT/kineto, OUT/diff, OUT/nodes:
#  - a small simtrain job (2 ranks) run twice under the agent and reported:
#    the two report folders packed as one diff input (fuzz_tree.h), and the
#    job's Perfetto/Kineto export (ringside export perfetto);
#  - the shared A100 Kineto traces (../shared/data/kineto, when there), cut
#    to a few tens of KB by kineto_cut.py;
#  - this machine's /proc and /sys files that the node sampler reads.
# A Kineto seed's first byte is fuzz_kineto's mode: 0 the file as it is,
# 1 JSON that the fuzzer gzips.
#
#   BUILD=build sh tests/fuzz/make_seeds.sh OUT
set -e
BUILD=${BUILD:-build}
OUT=$1
ROOT=$(pwd)
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
KINETO=${KINETO_DATA:-$(dirname "$ROOT")/shared/data/kineto}
[ -d "$KINETO" ] || KINETO=/work/shared/data/kineto
mkdir -p "$OUT/kineto" "$OUT/diff" "$OUT/nodes"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# fuzz_tree.h's packing of a folder's files: "%%%% NAME" then the bytes.
pack_file() { # NAME FILE
  printf '%%%%%%%% %s\n' "$1"
  cat "$2"
  printf '\n'
}

# ---- the simtrain job, twice ----
job() { # NAME simtrain-args...
  name=$1; shift
  mkdir -p "$T/$name"
  env -u RANK -u LOCAL_RANK -u WORLD_SIZE -u RINGSIDE_JOB LD_LIBRARY_PATH="$BUILD/sim" \
    RINGSIDE_OUT="$T/$name/trace" SIMNCCL_TIMEOUT_S=60 AGENT_SO="$BUILD/libagent.so" \
    "$BUILD/simlaunch" -n 2 -- sh -c 'export LD_PRELOAD="$AGENT_SO"; exec "$@"' sh \
    "$BUILD/simtrain" --ckpt-dir "$T/$name" "$@" >"$T/$name.log" 2>&1
  "$BUILD/ringside" report "$T/$name"/trace/* -o "$T/$name/rep" -q
}
job b --steps 8 --layers 3 --fwd-us 300 --bwd-us 600
job a --steps 8 --layers 4 --fwd-us 300 --bwd-us 600 --straggler 1:1.5
{
  for side in b a; do
    for f in "$T/$side/rep/report.json" "$T/$side"/rep/flame-*.folded; do
      [ -f "$f" ] && pack_file "$side/$(basename "$f")" "$f"
    done
  done
} >"$OUT/diff/job"
# The stacks alone beside a small report: the folded readers get most of the input.
{
  for side in b a; do
    printf '%%%%%%%% %s/report.json\n{"schema":"ringside-report/1"}\n' "$side"
    for f in "$T/$side"/rep/flame-*.folded; do
      [ -f "$f" ] && pack_file "$side/$(basename "$f")" "$f"
    done
    # simtrain has no CPU samples: its wait stacks stand in for them
    [ -f "$T/$side/rep/flame-wait.folded" ] && pack_file "$side/flame-cpu.folded" "$T/$side/rep/flame-wait.folded"
  done
} >"$OUT/diff/stacks"

# ---- Kineto ----
"$BUILD/ringside" export perfetto "$T/b"/trace/* -o "$T/trace.json" -q
kineto_seed() { # NAME TRACE
  python3 tests/fuzz/kineto_cut.py "$2" 40000 "$T/cut.json"
  { printf '\000'; cat "$T/cut.json"; } >"$OUT/kineto/$1.json"
  { printf '\001'; cat "$T/cut.json"; } >"$OUT/kineto/$1.json-gz"
  gzip -9 -n -c "$T/cut.json" >"$T/cut.json.gz"
  { printf '\000'; cat "$T/cut.json.gz"; } >"$OUT/kineto/$1.gz"
}
kineto_seed ringside-export "$T/trace.json"
for f in "$KINETO"/*.json.gz "$KINETO"/*/*.json.gz; do
  [ -f "$f" ] && kineto_seed "$(basename "$f" .json.gz)" "$f"
done

# ---- /proc and /sys of this machine ----
{
  for f in /proc/diskstats /proc/stat /proc/meminfo /proc/self/mountstats; do
    cat "$f" >"$T/f" 2>/dev/null && pack_file "${f#/}" "$T/f"
  done
  for i in /sys/class/net/*; do
    for f in type speed statistics/tx_bytes statistics/rx_bytes; do
      cat "$i/$f" >"$T/f" 2>/dev/null && pack_file "sys/class/net/$(basename "$i")/$f" "$T/f"
    done
  done
  for d in /sys/block/*; do
    printf '%%%%%%%% sys/block/%s/\n' "$(basename "$d")"
    for s in "$d"/slaves/*; do
      [ -e "$s" ] && printf '%%%%%%%% sys/block/%s/slaves/%s/\n' "$(basename "$d")" "$(basename "$s")"
    done
  done
  for p in /sys/class/infiniband/*/ports/*; do
    [ -d "$p" ] || continue
    for f in rate link_layer counters/port_xmit_data counters/port_rcv_data; do
      cat "$p/$f" >"$T/f" 2>/dev/null && pack_file "${p#/}/$f" "$T/f"
    done
  done
} >"$OUT/nodes/this-machine"
# What this machine lacks (InfiniBand, an NFS mount, a stacked disk), as the
# node test's tree has them.
P=sys/class/infiniband/mlx5_0/ports/1
{
  printf '%%%%%%%% %s/rate\n400 Gb/sec (4X NDR)\n' $P
  printf '%%%%%%%% %s/link_layer\nInfiniBand\n' $P
  printf '%%%%%%%% %s/counters/port_xmit_data\n1000\n' $P
  printf '%%%%%%%% %s/counters/port_rcv_data\n2000\n' $P
  printf '%%%%%%%% sys/block/sda/\n%%%%%%%% sys/block/dm-0/slaves/sda/\n'
  printf '%%%%%%%% proc/diskstats\n   8       0 sda 10 0 400 5 20 0 9000 9 0 0 0 0 0 0 0 0 0\n'
  printf '   8       1 sda1 10 0 400 5 20 0 9000 9 0 0 0 0 0 0 0 0 0\n 253 0 dm-0 1 0 8 0 0 0 0 0 0 0 0\n'
  printf '%%%%%%%% proc/self/mountstats\ndevice srv:/export mounted on /data with fstype nfs4 statvers=1.1\n'
  printf '\topts:\trw,vers=4.2\n\tbytes:\t100 200 0 0 300 400 0 0\n'
} >"$OUT/nodes/ib-nfs"
ls "$OUT"/* | wc -l >/dev/null
