#!/bin/sh
# Runs every unit test binary and every integration test, counts the lines
# "ok NAME" / "not ok NAME" / "skip NAME: why" they print, and ends with the
# line "N passed, N failed" (", N skipped" when any were skipped). A program
# that exits non-zero without reporting a failure counts as one failure.
# Before that line, the failures are listed again, so that the tail of a
# long log (all that some CI pages show) names them, after the slowest
# integration tests and their seconds.
#
#   sh tests/run.sh [--unit] [--list] [--dir DIR] [NAME]
#
# NAME: only the tests whose file name contains it (test_ring,
# test_units.py); --unit: the unit tests alone (make unit); --list: print
# the names that would run and exit 1 when there are none, before anything
# is built (make check); --dir DIR: the programs DIR/test_* instead of the
# integration tests, and no unit tests (make test-modern: tests/modern,
# which need the chroot of make chroot). The tests are found from their sources
# (tests/unit/test_*.c, tests/integration/test_*): a unit test whose binary
# is missing from $BUILD/tests is a failure, not a test left out.
BUILD=${BUILD:-build}
UNIT_ONLY=0; LIST=0; DIR=
while :; do
  case "${1:-}" in
    --unit) UNIT_ONLY=1; shift ;;
    --list) LIST=1; shift ;;
    --dir) DIR=${2:?--dir needs a folder}; shift 2 ;;
    *) break ;;
  esac
done
ONLY=${1:-}
# The tests that run, one "unit:NAME" or "integration:NAME" line each.
selected() {
  if [ -n "$DIR" ]; then
    for t in "$DIR"/test_*; do
      [ -x "$t" ] || continue
      name=$(basename "$t")
      case "$name" in *"$ONLY"*) echo "integration:$name" ;; esac
    done
    return
  fi
  for src in tests/unit/test_*.c; do
    [ -f "$src" ] || continue
    name=$(basename "$src" .c)
    case "$name" in *"$ONLY"*) echo "unit:$name" ;; esac
  done
  [ "$UNIT_ONLY" -eq 1 ] && return
  for t in tests/integration/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    case "$name" in *"$ONLY"*) echo "integration:$name" ;; esac
  done
}
tests=$(selected)
if [ -z "$tests" ]; then
  [ -n "$DIR" ] && echo "tests/run.sh: no program $DIR/test_* whose name contains '$ONLY'" >&2 && exit 1
  echo "tests/run.sh: no test's name contains '$ONLY' (unit tests: tests/unit/test_*.c, integration tests: tests/integration/test_*)" >&2
  exit 1
fi
if [ "$LIST" -eq 1 ]; then
  echo "$tests" | sed 's/^/  /; s/:/ /'
  exit 0
fi
pass=0; fail=0; skip=0
out=$(mktemp); failed=$(mktemp); units=$(mktemp -d); times=$(mktemp)
trap 'rm -rf "$out" "$failed" "$units" "$times"' EXIT
# Counts the lines of a test's output (in $out) that exited with status rc.
count() {
  name=$1; rc=$2
  p=$(grep -c '^ok ' "$out"); f=$(grep -c '^not ok ' "$out"); s=$(grep -c '^skip ' "$out")
  grep -E '^(ok|not ok|skip) ' "$out" | sed "s|^|[$name] |"
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    f=1; echo "[$name] not ok: exited with status $rc" | tee -a "$failed"
    tail -n 20 "$out" | sed 's/^/    /'
    tail -n 3 "$out" | cut -c1-200 | sed 's/^/    /' >>"$failed"
  elif [ "$f" -gt 0 ]; then
    grep -E '^not ok ' "$out" | cut -c1-300 | sed "s|^|[$name] |" >>"$failed"
    grep -v -E '^(ok|not ok|skip) ' "$out" | tail -n 20 | sed 's/^/    /'
  fi
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
}
# The unit tests first, as many at a time as there are CPUs (they share
# nothing and time nothing against a bound the load could break), each into
# a file of its own; then counted in order.
for t in $tests; do
  case "$t" in unit:*) [ -x "$BUILD/tests/${t#unit:}" ] && echo "${t#unit:}" ;; esac
done | xargs -r -P "$(nproc 2>/dev/null || echo 1)" -I{} \
  sh -c '"$1/tests/$2" >"$3/$2.out" 2>&1; echo $? >"$3/$2.rc"' sh "$BUILD" {} "$units"
for t in $tests; do
  kind=${t%%:*}; name=${t#*:}
  if [ "$kind" = integration ]; then
    start=$(date +%s)
    env BUILD="$BUILD" "${DIR:-tests/integration}/$name" >"$out" 2>&1
    rc=$?
    echo "$(($(date +%s) - start)) $name" >>"$times"
    count "$name" $rc
  elif [ -f "$units/$name.rc" ]; then
    cp "$units/$name.out" "$out"
    count "$name" "$(cat "$units/$name.rc")"
  else
    echo "[$name] not ok: $BUILD/tests/$name is not built (make test-build)" | tee -a "$failed"
    fail=$((fail + 1))
  fi
done
# The slowest integration tests (seconds), where the suite's time goes.
if [ -s "$times" ] && [ "$(wc -l <"$times")" -gt 10 ]; then
  echo "slowest: $(sort -rn "$times" | head -n 12 | awk '{printf "%s%s %ss", (NR > 1 ? ", " : ""), $2, $1}')"
fi
# The failures again, last, where a log's tail shows them.
if [ -s "$failed" ]; then
  echo "failures:"
  cat "$failed"
fi
if [ "$skip" -gt 0 ]; then
  echo "$pass passed, $fail failed, $skip skipped"
else
  echo "$pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
