#!/bin/sh
# Runs every unit test binary and every integration test, counts the lines
# "ok NAME" / "not ok NAME" / "skip NAME: why" they print, and ends with the
# line "N passed, N failed" (", N skipped" when any were skipped). A program
# that exits non-zero without reporting a failure counts as one failure.
# Before that line, the failures are listed again, so that the tail of a
# long log (all that some CI pages show) names them.
BUILD=${BUILD:-build}
ONLY=${1:-}
pass=0; fail=0; skip=0
out=$(mktemp); failed=$(mktemp); trap 'rm -f "$out" "$failed"' EXIT
run_one() {
  name=$1; shift
  "$@" >"$out" 2>&1; rc=$?
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
for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] || continue
  case "$t" in *"$ONLY"*) ;; *) continue ;; esac
  run_one "$(basename "$t")" "$t"
done
for t in tests/integration/test_*; do
  [ -x "$t" ] || continue
  case "$t" in *"$ONLY"*) ;; *) continue ;; esac
  run_one "$(basename "$t")" env BUILD="$BUILD" "$t"
done
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
