#!/bin/sh
# Runs libFuzzer targets for a bounded time each, with a fixed seed, each from
# a fresh corpus: its seeds (made at build time) and the inputs that once
# failed (tests/fuzz/regress/NAME/, which must pass every time). Prints
# "ok NAME: N inputs in S s, no crash" or "not ok NAME: ..." with the log's
# tail; a crash, sanitizer report, leak or an input that runs past the time
# limit fails it, and the input is left in $BUILD/fuzz/artifacts-NAME/.
# fuzz_kineto runs twice, half the time each: gzip through ISA-L, then
# through zlib (FUZZ_GZIP=zlib).
#
#   BUILD=build FUZZ_SECONDS=60 sh tests/fuzz/run.sh NAME...
BUILD=${BUILD:-build}
F=$BUILD/fuzz
SECS=${FUZZ_SECONDS:-10}
SEED=${FUZZ_SEED:-20240601}
status=0

# One run: NAME LABEL SECONDS SEEDS MAX_LEN [VAR=VALUE...]
run_one() {
  name=$1; label=$2; secs=$3; seeds=$4; maxlen=$5; shift 5
  corpus=$F/corpus-$label; art=$F/artifacts-$label; log=$F/$label.log
  rm -rf "$corpus" "$art"
  mkdir -p "$corpus" "$art"
  cp "$seeds"/* "$corpus/" 2>/dev/null
  [ -d "tests/fuzz/regress/$name" ] && cp "tests/fuzz/regress/$name"/* "$corpus/" 2>/dev/null
  # A trace read allocates LZ4's 4 MiB block buffers; a small quarantine keeps
  # ASan's bookkeeping of them from dominating the run.
  env ASAN_OPTIONS=quarantine_size_mb=16 "$@" "$F/$name" -seed="$SEED" -max_total_time="$secs" \
    -timeout=10 -rss_limit_mb=2048 -max_len="$maxlen" -print_final_stats=1 \
    -artifact_prefix="$art/" "$corpus" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  if [ "$rc" -eq 0 ] && [ -z "$(ls "$art")" ]; then
    echo "ok $label: ${runs:-?} inputs in ${secs}s, no crash"
  else
    echo "not ok $label: exit status $rc; log $log, inputs in $art"
    tail -n 40 "$log"
    status=1
  fi
}

for name in "$@"; do
  if [ ! -x "$F/$name" ]; then
    echo "skip $name: $F/$name was not built (it needs clang)"
    continue
  fi
  case $name in
    fuzz_chunk)  run_one "$name" "$name" "$SECS" "$F/seeds" 65536 ;;
    fuzz_kineto) half=$(( (SECS + 1) / 2 ))
                 run_one "$name" "$name" "$half" "$F/seeds-all/kineto" 65536
                 run_one "$name" "${name}_zlib" "$half" "$F/seeds-all/kineto" 65536 FUZZ_GZIP=zlib ;;
    fuzz_diff)   run_one "$name" "$name" "$SECS" "$F/seeds-all/diff" 524288 ;;
    fuzz_nodes)  run_one "$name" "$name" "$SECS" "$F/seeds-all/nodes" 131072 ;;
    *)           echo "not ok $name: tests/fuzz/run.sh does not know it"; status=1 ;;
  esac
done
exit $status
