#!/usr/bin/env bash
# Builds the benchmark set (Release, its own build directory) and runs all of
# it, writing JSON and logs to a results directory:
#   1. kvindexer_backend_bench: in-process, both backends + lookup floor
#      -> backend_bench.json
#   2. kv-indexer-bench against kv-indexer-server (one run per backend, each
#      with the transport floor server in the same run)
#      -> grpc_<backend>.json, grpc_<backend>.txt
#   3. bench/summarize_results.py -> summary.md (the tables of BENCHMARKS.md)
# Paths under the checkout that the tools write into the results (the build
# directory in cmake.log, the benchmark binary in backend_bench.json, the
# backend plugin in server_*.log) are rewritten relative to the checkout, so
# that results can be shared without naming a machine's directories.
# Every step runs under `timeout`; the whole set stays under ~10 minutes on
# 2 cores with the defaults.
#
# Environment:
#   KVINDEXER_BENCH_BUILD_DIR  build directory (default build/bench-release)
#   KVINDEXER_BENCH_RESULTS    results directory (default
#                              build/bench-results/<UTC timestamp>)
#   KVINDEXER_BENCH_BACKENDS   backends to run (default
#                              "absl_rwlock robin_sharded_snapshot")
#   KVINDEXER_BENCH_PRELOAD    placements loaded over gRPC (default 10000000)
#   KVINDEXER_JOBS             build parallelism (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${KVINDEXER_BENCH_BUILD_DIR:-build/bench-release}
results=${KVINDEXER_BENCH_RESULTS:-build/bench-results/$(date -u +%Y%m%dT%H%M%SZ)}
backends=${KVINDEXER_BENCH_BACKENDS:-absl_rwlock robin_sharded_snapshot}
preload=${KVINDEXER_BENCH_PRELOAD:-10000000}
mkdir -p "$results"
results=$(cd "$results" && pwd)

# Tests stay configured (some test directories require GoogleTest
# unconditionally) but only the benchmark targets are built.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
  -DKVINDEXER_BUILD_TESTS=ON -DKVINDEXER_BUILD_BENCH=ON >"$results/cmake.log"
cmake --build "$build_dir" -j"${KVINDEXER_JOBS:-2}" --target \
  kv-indexer-server kv-indexer-floor-server kv-indexer-bench \
  kvindexer_backend_bench >>"$results/cmake.log"
bin=$(cd "$build_dir/bin" && pwd)

machine() {
  {
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
    echo "mem: $(grep MemTotal /proc/meminfo | xargs)"
    echo "uptime: $(uptime)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "uncommitted changes: $(git status --porcelain 2>/dev/null | wc -l) paths"
  }
}
machine >"$results/machine_start.txt"
cat "$results/machine_start.txt"

echo "== in-process microbenchmarks"
KV_INDEXER_BENCH_BACKENDS=$(echo "$backends" | tr ' ' ',') \
  timeout 240 "$bin/kvindexer_backend_bench" \
  --benchmark_min_time=0.5 \
  --benchmark_out="$results/backend_bench.json" \
  --benchmark_out_format=json | tee "$results/backend_bench.txt"

for backend in $backends; do
  echo "== gRPC load: $backend"
  if ! timeout 300 "$bin/kv-indexer-bench" \
    --spawn_server="$bin/kv-indexer-server" --backend="$backend" \
    --spawn_floor="$bin/kv-indexer-floor-server" \
    --server_log="$results/server_$backend.log" \
    --preload_placements="$preload" --query_rounds=3 \
    --label="run_all $backend" \
    --json_out="$results/grpc_$backend.json" \
    --max_run_s=280 | tee "$results/grpc_$backend.txt"; then
    echo "kv-indexer-bench failed for $backend; see $results/server_$backend.log"
  fi
done

machine >"$results/machine_end.txt"

# Strip the checkout's absolute path (and its trailing slash) from every
# result file: "/src/kvindexer/build/..." becomes "build/...".
checkout_re=$(printf '%s/' "$(pwd)" | sed 's/[][\.*^$|]/\\&/g')
find "$results" -maxdepth 1 -type f \
  \( -name '*.json' -o -name '*.txt' -o -name '*.log' \) \
  -exec sed -i "s|$checkout_re||g" {} +

if command -v python3 >/dev/null; then
  python3 bench/summarize_results.py "$results" >"$results/summary.md" || true
fi
echo "results in $results"
