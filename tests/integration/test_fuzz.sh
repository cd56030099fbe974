#!/bin/sh
# Runs the trace reader's libFuzzer target (tests/fuzz/fuzz_chunk.c) for a
# bounded time with a fixed seed, from a fresh copy of the seed corpus made at
# build time. Any crash, sanitizer report, leak or timeout fails the test; the
# input that caused it is left in $BUILD/fuzz/artifacts.
BUILD=${BUILD:-build}
F=$BUILD/fuzz
SECONDS_MAX=${RINGSIDE_FUZZ_SECONDS:-45}
if [ ! -x "$F/fuzz_chunk" ] || [ ! -f "$F/seeds/.made" ]; then
  echo "skip fuzz_chunk: $F/fuzz_chunk was not built (it needs clang)"
  exit 0
fi
rm -rf "$F/corpus" "$F/artifacts"
mkdir -p "$F/corpus" "$F/artifacts"
cp "$F"/seeds/* "$F/corpus/"
# A trace read allocates LZ4's 4 MiB block buffers; a small quarantine keeps
# ASan's bookkeeping of them from dominating the run.
ASAN_OPTIONS=quarantine_size_mb=16 "$F/fuzz_chunk" -seed=20240601 -max_total_time="$SECONDS_MAX" \
  -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$F/artifacts/" "$F/corpus" >"$F/fuzz.log" 2>&1
rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$F/fuzz.log")
if [ "$rc" -eq 0 ] && [ -z "$(ls "$F/artifacts")" ]; then
  echo "ok fuzz_chunk: ${runs:-?} inputs in ${SECONDS_MAX}s, no crash"
else
  echo "not ok fuzz_chunk: exit status $rc; log $F/fuzz.log, inputs in $F/artifacts"
  tail -n 40 "$F/fuzz.log"
  exit 1
fi
