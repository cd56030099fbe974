#!/bin/sh
# The fuzzers' short runs in `make test` (tests/fuzz/run.sh; `make fuzz` runs
# them for FUZZ_MIN minutes each): the trace reader for RINGSIDE_FUZZ_SECONDS
# (20), the Kineto importer, diff's readers and the node sampler's parsers
# for a few seconds each, every run with a fixed seed and the inputs that
# once failed (tests/fuzz/regress/).
BUILD=${BUILD:-build}
export BUILD
rc=0
FUZZ_SECONDS=${RINGSIDE_FUZZ_SECONDS:-20} sh tests/fuzz/run.sh fuzz_chunk || rc=1
FUZZ_SECONDS=${RINGSIDE_FUZZ_SHORT:-5} sh tests/fuzz/run.sh fuzz_kineto fuzz_diff fuzz_nodes || rc=1
exit $rc
