#!/usr/bin/env bash
# Installs missing Debian packages, builds everything with -Werror and runs the
# whole test suite through ctest. Then runs tests under ASan+UBSan
# (KVINDEXER_SANITIZERS: `core`, the default, for the index core, the
# default backend with the conformance suite, the durable store and the
# in-process tests of the server, the replica and the bridge; `full` for
# every test the plain stage runs but the fleet end-to-end ones; `0` for
# none),
# the concurrent backend's tests under TSan when KVINDEXER_TSAN=backend or
# full (see below), and a bounded libFuzzer run of the bridge's event
# decoder.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${KVINDEXER_JOBS:-2}
root=${KVINDEXER_BUILD_ROOT:-build}

bash scripts/install-deps.sh

# ccache (installed by install-deps.sh) keys objects by paths relative to the
# checkout, so a fresh clone in another folder reuses the objects of an
# earlier build on this machine. A cache that holds nothing yet only costs:
# every miss hashes the file and all it includes and stores the result,
# about an eighth more compile time (a fifth in ccache's default mode),
# which a CI machine that builds once never gets back. KVINDEXER_CCACHE=auto,
# the default, therefore uses the cache only when it holds objects of an
# earlier build on this machine (scripts/run-server.sh's build fills it, or
# a run with KVINDEXER_CCACHE=on); `on` and `off` decide without looking. A
# second run in the same checkout rebuilds only what changed either way.
ccache_mode=${KVINDEXER_CCACHE:-auto}
case $ccache_mode in
  on | off) ;;
  auto)
    ccache_mode=off
    cached=0
    if command -v ccache >/dev/null; then
      cached=$(ccache --print-stats 2>/dev/null |
        awk '$1 == "files_in_cache" { print $2 }') || cached=0
    fi
    if [[ ${cached:-0} -gt 0 ]]; then ccache_mode=on; fi
    ;;
  *) echo "KVINDEXER_CCACHE=$ccache_mode: use auto, on or off" >&2; exit 2 ;;
esac
if [[ $ccache_mode == off ]]; then
  export CCACHE_DISABLE=1
fi
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
# Depend mode: a miss does not run the preprocessor a second time, the
# compiler's dependency file names the headers. The test programs' shared
# precompiled header (below): ccache caches what is compiled with it only
# when told to take the header's macros and __DATE__/__TIME__ as they are,
# and a header built a moment before its users as it is (this replaces any
# sloppiness configured elsewhere).
export CCACHE_DEPEND=true
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
echo "compiler cache: $ccache_mode (KVINDEXER_CCACHE=${KVINDEXER_CCACHE:-auto})"

# Each stage prints how long the one before it took, and the summary the
# whole run's time, so the CI figure of docs/testing.md can be checked from
# any log.
started=$SECONDS
stage_started=$SECONDS
step() {
  if [[ -n ${stage_name:-} ]]; then
    printf '(%s: %d s)\n' "$stage_name" $((SECONDS - stage_started))
  fi
  stage_name=$*
  stage_started=$SECONDS
  printf '\n=== %s ===\n' "$*"
}

# Counts of passed tests over every stage, for the closing summary line.
passed=0
run_ctest() {
  local log
  log=$(mktemp)
  ctest "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local n
  n=$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9]*\).*/\1/p' "$log")
  rm -f "$log"
  [[ $rc -eq 0 ]] || exit "$rc"
  passed=$((passed + ${n:-0}))
}
summary() {
  step "done"
  printf 'total: %d s\n' $((SECONDS - started))
  printf '\nkvindexer: %d passed, 0 failed\n' "$passed"
}

step "clang-format check"
bash scripts/check-format.sh

# CI builds keep line tables only (-g1): enough for file:line in sanitizer
# reports and backtraces, while full debug info costs compile and link time
# (docs/testing.md). A developer build keeps -g.
line_tables_only=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
  -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1")

# CI's builds compile each target's sources in batches (unity builds,
# cmake/KvindexerUnity.cmake), parse the third-party headers of the test
# programs once, into one precompiled header they all reuse
# (cmake/KvindexerTestPch.cmake), and link with lld when it is installed
# (cmake/KvindexerLinker.cmake): a cold run gets nothing from ccache, and
# these cut the compile time of both builds (docs/testing.md). A
# developer's build compiles file by file without a precompiled header,
# which also catches a file that misses one of its own #includes.
unity=(-DKVINDEXER_UNITY_BUILD=ON -DKVINDEXER_TEST_PCH=ON)

# The -Werror build needs no debug information at all: no sanitizer reports
# come from it, and it is the longest stage. It optimises with -O1, which
# compiles about a quarter faster than -O2, and the test programs' own
# sources (gtest and gmock templates, mostly) not at all, which saves about
# a sixth of the stage while the code they test keeps -O1 (docs/testing.md);
# the run command's and the benchmarks' builds use -O2 (Release).
step "build (RelWithDebInfo at -O1 without -g, tests at -O0, -Werror)"
cmake -S . -B "$root/ci" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVINDEXER_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DKVINDEXER_TEST_CXX_FLAGS=-O0 \
  "${unity[@]}"
cmake --build "$root/ci" -j"$jobs"

sanitizers=${KVINDEXER_SANITIZERS:-core}
case $sanitizers in
  0 | off | core | full | 1) ;;
  *) echo "KVINDEXER_SANITIZERS=$sanitizers: use core, full or 0" >&2; exit 2 ;;
esac

# The ASan+UBSan build starts now, at nice 19, beside the ctest stage: most
# tests wait on sockets and child processes, and ctest leaves about a third
# of the two cores idle, which the build takes without taking CPU time from
# the tests (they keep priority). Its output goes to a log, printed when
# the stage below waits for it.
# The programs the `core` sanitizer stage runs, longest first so that its
# two lanes end together (scripts/run-gtest-binaries.sh; the conformance
# suite takes its backend after the colon).
asan_binaries=(kvindexer_robin_tests kvindexer_durable_tests
  kvindexer-conformance:KV_INDEXER_BACKEND=robin_sharded_snapshot
  kvindexer_core_tests kvindexer_replica_tests bridge_recovery_tests
  kvindexer_server_service_test kvindexer_server_tests bridge_io_tests
  bridge_unit_tests)
asan_build_pid=
if [[ $sanitizers != 0 && $sanitizers != off ]]; then
  # Everything compiles with ASan and UBSan but the test programs' own
  # sources (the test files, mostly gtest and gmock templates, and the few
  # fakes compiled into one program), which keep ASan only: UBSan's checks,
  # instrumented again by ASan, double the compile time of an unoptimised
  # test file, and the code under test, the libraries, backends, servers
  # and the fakes built as libraries, keeps both (docs/testing.md).
  # Ninja, because CMake's Makefiles build the targets named on the command
  # line one after another (their top level is .NOTPARALLEL), and a target
  # whose last step is one batch or one link leaves a core idle; Ninja
  # builds the whole list as one graph. A build directory that a run before
  # configured for Make is configured again from scratch.
  if [[ -f $root/asan/CMakeCache.txt ]] &&
    ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$root/asan/CMakeCache.txt"; then
    rm -rf "$root/asan"
  fi
  cmake -G Ninja -S . -B "$root/asan" -DCMAKE_BUILD_TYPE=Debug -DKVINDEXER_WERROR=ON \
    -DKVINDEXER_SANITIZE=address -DKVINDEXER_BUILD_BENCH=OFF "${line_tables_only[@]}" \
    -DKVINDEXER_TEST_CXX_FLAGS=-fno-sanitize=undefined "${unity[@]}"
  asan_targets=()
  if [[ $sanitizers == core ]]; then
    asan_targets=(--target "${asan_binaries[@]%%:*}")
  fi
  asan_build_log=$(mktemp)
  # In a process group of its own, so that a failing stage can stop the
  # whole build (make and compilers included) rather than leave it running.
  # A new session is also a new scheduling group where the kernel groups
  # processes by session (autogroup), and a group's nice value, not its
  # processes', sets its share against the tests: the build lowers its
  # group's too, or it would take half the machine from them.
  setsid bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null || true
    exec nice -n 19 "$@"' _ cmake --build "$root/asan" -j"$jobs" \
    "${asan_targets[@]}" >"$asan_build_log" 2>&1 &
  asan_build_pid=$!
  trap 'kill -- -"$asan_build_pid" 2>/dev/null || true' EXIT
fi

step "ctest (all tests)"
run_ctest --test-dir "$root/ci" --output-on-failure -j"$jobs" --timeout 300

if [[ -z $asan_build_pid ]]; then
  summary
  exit 0
fi

# `core` builds and runs, under ASan+UBSan, what holds the index and its
# bytes on disk: the Indexer, the default backend (robin_sharded_snapshot)
# with its own tests and the conformance suite, and the durable store (its
# parsers of the log and of checkpoints included); the replica's in-process
# tests (record applier, log follower, snapshots and payloads) and the
# bridge's (decoder, actions, chunking, configuration, the replay and
# snapshot clients, the recovery engine); and the server's (services,
# line-A streams and staged snapshots, admin API, metrics). Fleet mode's
# stores on NATS (event log, lease register, snapshot store) and the
# bridge's fleet sink, the reference backend (one lock around abseil's
# map) with its own tests and the conformance suite over it (the server's
# service tests above load it too), and the end-to-end tests run under the
# sanitizers with `full`, which
# a 25-minute CI run on 2 cores has no room for (docs/testing.md); the
# bridge's event decoder is fuzzed below either way.
step "ASan+UBSan build (the rest of it) and tests ($sanitizers)"
asan_build_rc=0
wait "$asan_build_pid" || asan_build_rc=$?
trap - EXIT
cat "$asan_build_log"
rm -f "$asan_build_log"
[[ $asan_build_rc -eq 0 ]] || exit "$asan_build_rc"
# The recovery engine's randomised fault test runs 1,500 seeds in the plain
# run above; under the sanitizers 40 keep the stage's time in check. The
# robin conformance run with merges forced after every apply runs in the
# plain run and under TSan; here the default policy's run covers robin. The
# fleet end-to-end tests (real nats-server, replicas and bridges) run in the
# plain stage only: under ASan they repeat code the fleet unit tests cover.
if [[ $sanitizers == core ]]; then
  # Each program runs whole, once (scripts/run-gtest-binaries.sh): one
  # process per test, as ctest runs them, costs an ASan start-up each,
  # about three minutes over the stage.
  asan_log=$(mktemp)
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    KV_INDEXER_RECOVERY_SEEDS=40 JOBS=$jobs \
    bash scripts/run-gtest-binaries.sh "$root/asan/bin" "${asan_binaries[@]}" |
    tee "$asan_log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || exit 1
  passed=$((passed + $(tail -1 "$asan_log")))
  rm -f "$asan_log"
else
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    KV_INDEXER_RECOVERY_SEEDS=40 \
    run_ctest --test-dir "$root/asan" --output-on-failure -j"$jobs" --timeout 600 \
    -E '^(bench\.|conformance\.out_of_tree|conformance\.robin_sharded_snapshot\.merging|bridge\.fleet_e2e\.)'
fi

# TSan is opt-in: KVINDEXER_TSAN=backend runs the concurrent backend's own
# tests (its readers never take a lock), about 2.5 minutes; =full adds the
# absl_rwlock tests, the conformance suite over robin (default and
# forced-merge policies), the bridge's reader thread and the durable store
# (group commit, compaction), about 6 more. With restart-safe state's build
# and tests, CI has no room left for either in its 25-minute budget
# (docs/testing.md).
if [[ ${KVINDEXER_TSAN:-off} != off ]]; then
step "TSan build and concurrency tests (${KVINDEXER_TSAN})"
tsan_targets=(kvindexer_backend_robin_sharded_snapshot kvindexer_robin_tests)
if [[ $KVINDEXER_TSAN == full ]]; then
  tsan_targets+=(kvindexer-conformance kvindexer_backend_absl_rwlock
    kvindexer_absl_rwlock_tests bridge_io_tests kvindexer_durable_tests)
fi
cmake -S . -B "$root/tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVINDEXER_WERROR=ON \
  -DKVINDEXER_SANITIZE=thread -DKVINDEXER_BUILD_BENCH=OFF "${line_tables_only[@]}"
cmake --build "$root/tsan" -j"$jobs" --target "${tsan_targets[@]}"
export TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/scripts/tsan-suppressions.txt"
"$root/tsan/bin/kvindexer_robin_tests"
if [[ $KVINDEXER_TSAN == full ]]; then
  "$root/tsan/bin/kvindexer_absl_rwlock_tests"
  KV_INDEXER_BACKEND=robin_sharded_snapshot \
    "$root/tsan/bin/kvindexer-conformance"
  KV_INDEXER_BACKEND=robin_sharded_snapshot KV_INDEXER_ROBIN_MERGE_MIN_DELTA=0 \
    "$root/tsan/bin/kvindexer-conformance"
  # The bridge's reader thread and live buffer (the recovery engine itself
  # is single-threaded and runs under ASan+UBSan above).
  "$root/tsan/bin/bridge_io_tests"
  # The write-ahead log's group commit and the store's compaction thread.
  "$root/tsan/bin/kvindexer_durable_tests"
fi
unset TSAN_OPTIONS
fi

if [[ -x bridge/fuzz/run_fuzz.sh ]]; then
  step "bridge decoder fuzzing (bounded)"
  FUZZ_BUILD_DIR="$root/fuzz" FUZZ_JOBS="$jobs" \
    bash bridge/fuzz/run_fuzz.sh "${KVINDEXER_FUZZ_SECONDS:-10}"
fi

summary
