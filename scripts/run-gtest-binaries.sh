#!/usr/bin/env bash
# Runs GoogleTest binaries whole, each once, at most JOBS at a time, and
# prints one line per binary and, last, the number of tests that passed.
# Usage: run-gtest-binaries.sh <bin dir> <binary>[:NAME=VALUE[,NAME=VALUE...]]...
# A binary may carry environment variables of its own after a colon, e.g.
# kvindexer-conformance:KV_INDEXER_BACKEND=robin_sharded_snapshot; the
# commas separate them, so a value cannot hold one. The same binary may be
# listed more than once with different variables.
# JOBS (default 2) binaries at a time; a binary still running after
# TIMEOUT_S seconds (default 900) is killed and fails.
#
# Why not ctest: ctest starts one process per test, and under ASan a test
# binary's start-up costs about 0.3 s, which a thousand tests pay a thousand
# times; one process per binary pays it once (docs/testing.md). Each
# binary's output goes to a log next to it, printed when the binary fails.
set -euo pipefail

bin_dir=$1
shift
jobs=${JOBS:-2}
timeout_s=${TIMEOUT_S:-900}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# The files of one entry: named after the whole entry, variables included.
log_key() { printf '%s' "${1//[^A-Za-z0-9_.=-]/_}"; }

run_one() {
  local spec=$1 started=$SECONDS rc=0
  local name=${spec%%:*} vars=() key
  key=$(log_key "$spec")
  if [[ $spec == *:* ]]; then IFS=, read -ra vars <<<"${spec#*:}"; fi
  env "${vars[@]}" timeout "$timeout_s" "$bin_dir/$name" >"$logs/$key.log" 2>&1 ||
    rc=$?
  local passed
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' \
    "$logs/$key.log" | tail -1)
  if [[ $rc -ne 0 || -z $passed ]]; then
    echo "$spec: FAILED (exit $rc)"
    cat "$logs/$key.log"
    return 1
  fi
  echo "$passed" >"$logs/$key.passed"
  printf '%s: %d passed (%d s)\n' "$spec" "$passed" $((SECONDS - started))
}
export -f log_key run_one
export bin_dir logs timeout_s

status=0
printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} ||
  status=$?
[[ $status -eq 0 ]] || exit 1
total=0
for spec in "$@"; do
  total=$((total + $(cat "$logs/$(log_key "$spec").passed")))
done
echo "$total"
