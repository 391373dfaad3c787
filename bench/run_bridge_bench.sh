#!/usr/bin/env bash
# Builds what the bridge benchmarks need (Release, -j2) and runs
# kv-indexer-bridge-bench (BENCHMARKS.md, "Bridge: end-to-end throughput and
# restore"), writing everything to one results directory:
#   bridge_bench.json, bridge_bench.txt   the report (JSON; table + progress)
#   throughput_{server,bridge}_<variant>.log, restore_{server,bridge}.log
#   machine_start.txt, machine_end.txt, cmake.log
# Three bridges take part:
#   baseline  kv-indexer-bridge of KVINDEXER_BRIDGE_BASE_COMMIT (default
#             45f7238: the bridge before the sequence gate and the recovery
#             engine, one thread that decodes and sends), exported with
#             `git archive` and built in its own directory;
#   off, on   this checkout's kv-indexer-bridge with
#             KV_INDEXER_SEQUENCE_GATE=off, and =on with a replay endpoint.
# All of them talk to this checkout's kv-indexer-server. Paths under the
# checkout are rewritten relative to it in the results, so that results can
# be shared without naming a machine's directories.
#
# Environment:
#   KVINDEXER_BENCH_BUILD_DIR        build directory (default
#                                    build/bench-release)
#   KVINDEXER_BRIDGE_BASE_COMMIT     baseline commit (default 45f7238)
#   KVINDEXER_BRIDGE_BASE_DIR        baseline source + build (default
#                                    build/bridge-base)
#   KVINDEXER_BRIDGE_BASE_BIN        a kv-indexer-bridge built from the
#                                    baseline commit (skips that build)
#   KVINDEXER_BRIDGE_BENCH_RESULTS   results directory (default
#                                    bench/results/<UTC timestamp>-bridge,
#                                    created if absent; ignored by git)
#   KVINDEXER_BRIDGE_BENCH_SCENARIOS default "throughput,restore"
#   KVINDEXER_BRIDGE_BENCH_GATE_MODES default "off,on"
#   KVINDEXER_BRIDGE_BENCH_REPS      throughput repetitions (default 7)
#   KVINDEXER_BRIDGE_BENCH_RESTORE_REPS  restore repetitions (default 3)
#   KVINDEXER_BRIDGE_BENCH_ARGS      more kv-indexer-bridge-bench flags
#   KVINDEXER_JOBS                   build parallelism (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${KVINDEXER_BENCH_BUILD_DIR:-build/bench-release}
base_commit=${KVINDEXER_BRIDGE_BASE_COMMIT:-45f7238}
base_dir=${KVINDEXER_BRIDGE_BASE_DIR:-build/bridge-base}
results=${KVINDEXER_BRIDGE_BENCH_RESULTS:-bench/results/$(date -u +%Y%m%dT%H%M%SZ)-bridge}
jobs=${KVINDEXER_JOBS:-2}
mkdir -p "$results"
results=$(cd "$results" && pwd)

# This checkout: server, bridge and the benchmark.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
  -DKVINDEXER_BUILD_TESTS=ON -DKVINDEXER_BUILD_BENCH=ON >"$results/cmake.log"
cmake --build "$build_dir" -j"$jobs" --target \
  kv-indexer-server kv-indexer-bridge kv-indexer-bridge-bench \
  >>"$results/cmake.log"
bin=$(cd "$build_dir/bin" && pwd)

# The baseline bridge, from a clean export of its commit (or a binary
# given as KVINDEXER_BRIDGE_BASE_BIN, which must come from that commit).
base_rev=$(git rev-parse --short "$base_commit")
if [[ -n "${KVINDEXER_BRIDGE_BASE_BIN:-}" ]]; then
  base_bin=$(cd "$(dirname "$KVINDEXER_BRIDGE_BASE_BIN")" && pwd)
elif [[ ! -f "$base_dir/src/.commit" ||
  "$(cat "$base_dir/src/.commit")" != "$base_rev" ]]; then
  rm -rf "$base_dir/src"
  mkdir -p "$base_dir/src"
  git archive "$base_commit" | tar -x -C "$base_dir/src"
  echo "$base_rev" >"$base_dir/src/.commit"
fi
if [[ -z "${base_bin:-}" ]]; then
  cmake -S "$base_dir/src" -B "$base_dir/build" -DCMAKE_BUILD_TYPE=Release \
    -DKVINDEXER_BUILD_TESTS=ON -DKVINDEXER_BUILD_BENCH=ON >>"$results/cmake.log"
  cmake --build "$base_dir/build" -j"$jobs" --target kv-indexer-bridge \
    >>"$results/cmake.log"
  base_bin=$(cd "$base_dir/build/bin" && pwd)
fi

machine() {
  {
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
    echo "mem: $(grep MemTotal /proc/meminfo | xargs)"
    echo "uptime: $(uptime)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "baseline commit: $base_rev"
    echo "uncommitted changes (outside bench/results): $(git status \
      --porcelain -- . ':(exclude)bench/results' 2>/dev/null | wc -l) paths"
  }
}
machine >"$results/machine_start.txt"
cat "$results/machine_start.txt"

set +e
# shellcheck disable=SC2086  # KVINDEXER_BRIDGE_BENCH_ARGS is a flag list
timeout 3600 "$bin/kv-indexer-bridge-bench" \
  --server="$bin/kv-indexer-server" \
  --baseline_bridge="$base_bin/kv-indexer-bridge" \
  --bridge="$bin/kv-indexer-bridge" \
  --gate_modes="${KVINDEXER_BRIDGE_BENCH_GATE_MODES:-off,on}" \
  --scenarios="${KVINDEXER_BRIDGE_BENCH_SCENARIOS:-throughput,restore}" \
  --reps="${KVINDEXER_BRIDGE_BENCH_REPS:-7}" \
  --restore_reps="${KVINDEXER_BRIDGE_BENCH_RESTORE_REPS:-3}" \
  --log_dir="$results" --json_out="$results/bridge_bench.json" \
  --label="run_bridge_bench $(git rev-parse --short HEAD) vs $base_rev" \
  ${KVINDEXER_BRIDGE_BENCH_ARGS:-} 2>&1 | tee "$results/bridge_bench.txt"
status=${PIPESTATUS[0]}
set -e

machine >"$results/machine_end.txt"

# Strip the checkout's absolute path (and its trailing slash) from every
# result file: "/src/kvindexer/build/..." becomes "build/...".
checkout_re=$(printf '%s/' "$(pwd)" | sed 's/[][\.*^$|]/\\&/g')
find "$results" -maxdepth 1 -type f \
  \( -name '*.json' -o -name '*.txt' -o -name '*.log' \) \
  -exec sed -i "s|$checkout_re||g" {} +
echo "results in $results"
exit "$status"
