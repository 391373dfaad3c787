#!/usr/bin/env bash
# Builds the bridge's libFuzzer decoder target in its own build directory and
# runs it for a bounded time. Exits non-zero if the fuzzer finds a crash, a
# sanitizer report or a broken invariant (or if the build fails).
#
# Usage: bridge/fuzz/run_fuzz.sh [seconds]        (default 60)
# Environment: FUZZ_BUILD_DIR (default <repo>/build/fuzz),
#              FUZZ_JOBS (parallel build jobs, default 2).
set -euo pipefail

seconds="${1:-60}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${FUZZ_BUILD_DIR:-${repo}/build/fuzz}"
jobs="${FUZZ_JOBS:-2}"

# -O1 with line tables only, as OSS-Fuzz builds its fuzzers: enough for
# file:line in a report, and the build (the generated protobuf code above
# all) takes about half as long as at -O2 with full debug information.
# The libraries compile in unity batches (cmake/KvindexerUnity.cmake).
cmake -S "${repo}" -B "${build}" \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DKVINDEXER_UNITY_BUILD=ON \
  -DKVINDEXER_FUZZ=ON -DKVINDEXER_BUILD_TESTS=ON -DKVINDEXER_BUILD_BENCH=OFF \
  >"${build}.configure.log" 2>&1 || { cat "${build}.configure.log"; exit 1; }
cmake --build "${build}" -j"${jobs}" --target bridge_event_decoder_fuzzer

# Work on a copy so that the checked-in seed corpus stays small.
work_corpus="$(mktemp -d)"
artifacts="${build}/fuzz-artifacts"
mkdir -p "${artifacts}"
trap 'rm -rf "${work_corpus}"' EXIT
cp "${repo}/bridge/fuzz/corpus/"* "${work_corpus}/"

echo "fuzzing the bridge event decoder for ${seconds}s (artifacts: ${artifacts})"
"${build}/bin/bridge_event_decoder_fuzzer" \
  -max_total_time="${seconds}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="${artifacts}/" -print_final_stats=1 \
  -dict="${repo}/bridge/fuzz/event_decoder.dict" \
  "${work_corpus}"
