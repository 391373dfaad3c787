#!/usr/bin/env bash
# A/B comparison of two commits on one machine: builds kv-indexer-server
# (with both backend plugins) of each commit in Release, then runs the
# headline cases of kv-indexer-bench against A's and B's server in
# alternating order, round after round, and prints B/A for every headline
# figure per round and its median (bench/ab_compare.py). Alternating and
# pairing the runs lets a regression show against the machine's drift.
#
# Usage: bash bench/ab.sh <commit A> <commit B>
#
# Both servers are driven by the bench tool of the current checkout, so only
# the servers differ. Each commit is checked out with `git worktree add` under
# the work directory and built there; results (JSON, logs, the comparison)
# stay there too.
#
# Environment:
#   KVINDEXER_AB_DIR       work directory (default build/ab)
#   KVINDEXER_AB_ROUNDS    rounds, each one run of A and one of B (default 5)
#   KVINDEXER_AB_BACKEND   backend for both servers (default: the default)
#   KVINDEXER_AB_PRELOAD   placements loaded before each run (default 2000000)
#   KVINDEXER_AB_PHASES    kv-indexer-bench phases (default
#                          preload,ingest,query,mixed)
#   KVINDEXER_AB_ENV_A, KVINDEXER_AB_ENV_B
#                          more environment for A's or B's server
#                          (kv-indexer-bench --server_env: NAME=VALUE pairs
#                          separated by commas); with A = B, this compares
#                          one build under two configurations
#   KVINDEXER_JOBS         build parallelism (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -ne 2 ]]; then
  echo "usage: bash bench/ab.sh <commit A> <commit B>" >&2
  exit 2
fi
work=${KVINDEXER_AB_DIR:-build/ab}
rounds=${KVINDEXER_AB_ROUNDS:-5}
backend=${KVINDEXER_AB_BACKEND:-}
preload=${KVINDEXER_AB_PRELOAD:-2000000}
phases=${KVINDEXER_AB_PHASES:-preload,ingest,query,mixed}
jobs=${KVINDEXER_JOBS:-2}
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "KVINDEXER_AB_ROUNDS=$rounds: use a positive integer" >&2
  exit 2
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)

# build <commit> -> prints the bin directory of that commit's Release build.
build() {
  local sha
  sha=$(git rev-parse --verify --quiet "$1^{commit}") || {
    echo "ab: $1 is not a commit" >&2
    exit 2
  }
  local src="$work/src-${sha:0:12}"
  if [[ ! -d $src ]]; then
    git worktree add --detach --quiet "$src" "$sha"
  fi
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
    -DKVINDEXER_BUILD_TESTS=ON -DKVINDEXER_BUILD_BENCH=OFF -DKVINDEXER_UNITY_BUILD=ON \
    >"$work/cmake-${sha:0:12}.log" 2>&1
  # With ccache, paths relative to each checkout let the two builds share
  # its cache.
  CCACHE_BASEDIR=$src CCACHE_NOHASHDIR=true \
    cmake --build "$src/build" -j"$jobs" --target kv-indexer-server \
      kvindexer_backend_robin_sharded_snapshot kvindexer_backend_absl_rwlock \
      >>"$work/cmake-${sha:0:12}.log" 2>&1
  echo "$src/build/bin"
}

echo "ab: building $1 and $2 (logs in $work)"
bin_a=$(build "$1")
bin_b=$(build "$2")
cmake -S . -B "$work/tool" -DCMAKE_BUILD_TYPE=Release \
  -DKVINDEXER_BUILD_TESTS=ON -DKVINDEXER_BUILD_BENCH=ON -DKVINDEXER_UNITY_BUILD=ON \
  >"$work/cmake-tool.log" 2>&1
cmake --build "$work/tool" -j"$jobs" --target kv-indexer-bench \
  >>"$work/cmake-tool.log" 2>&1
bench="$work/tool/bin/kv-indexer-bench"

results="$work/results-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$results"
{
  echo "A: $(git rev-parse "$1") ($1)"
  echo "B: $(git rev-parse "$2") ($2)"
  echo "rounds: $rounds, preload: $preload, phases: $phases, backend: ${backend:-default}"
  echo "server env: A: ${KVINDEXER_AB_ENV_A:-(none)}; B: ${KVINDEXER_AB_ENV_B:-(none)}"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), nproc: $(nproc)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$results/conditions.txt"

run() {  # run <side> <bin> <round> <server env>
  echo "ab: round $3, $1"
  timeout 600 "$bench" --spawn_server="$2/kv-indexer-server" \
    ${backend:+--backend="$backend"} --phases="$phases" \
    --server_env="$4" \
    --preload_placements="$preload" --query_rounds=1 --mixed_rounds=1 \
    --label="ab $1 round $3" --server_log="$results/server_$1_$3.log" \
    --json_out="$results/$1_$3.json" --max_run_s=580 \
    >"$results/$1_$3.txt"
}
a_files=()
b_files=()
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then
    run a "$bin_a" "$r" "${KVINDEXER_AB_ENV_A:-}"
    run b "$bin_b" "$r" "${KVINDEXER_AB_ENV_B:-}"
  else
    run b "$bin_b" "$r" "${KVINDEXER_AB_ENV_B:-}"
    run a "$bin_a" "$r" "${KVINDEXER_AB_ENV_A:-}"
  fi
  a_files+=("$results/a_$r.json")
  b_files+=("$results/b_$r.json")
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results/conditions.txt"
python3 bench/ab_compare.py --a "${a_files[@]}" --b "${b_files[@]}" |
  tee "$results/comparison.txt"
echo "ab: results in $results"
