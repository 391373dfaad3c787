#!/usr/bin/env bash
# Writes that wait for a checkpoint build on a busy CPU, in a server that
# cannot raise priorities: CAP_SYS_NICE is dropped (as in most containers
# and in the packaged systemd unit) and two busy loops at normal priority
# hold both cores while kv-indexer-durability-bench preloads a wal-always
# server whose replay bound is below the preload's log, so its writes wait
# for builds (docs/durability.md, "The replay bound"). Each server given is
# run in turn, round after round, and each run prints the preload's time
# and how many builds the server started over at normal priority.
#
# usage: bench/starved_builder.sh <kv-indexer-durability-bench> <server>...
# Variables: STARVED_ROUNDS (3), STARVED_PLACEMENTS (2000000),
# STARVED_CHECKPOINT_BYTES (4194304; the bound is four times it),
# STARVED_SPIN_S (how long the busy loops run at most, 120: a preload still
# waiting then goes on once they end, so its time shows the wait),
# STARVED_BENCH_FLAGS (more flags for the bench, e.g. --max_replay_bytes=0
# for a control run whose writes never wait).
# Needs root (setpriv drops the capability from the bounding set).
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 <kv-indexer-durability-bench> <server>..." >&2
  exit 2
fi
bench=$1
shift
rounds=${STARVED_ROUNDS:-3}
placements=${STARVED_PLACEMENTS:-2000000}
checkpoint_bytes=${STARVED_CHECKPOINT_BYTES:-4194304}
spin_s=${STARVED_SPIN_S:-120}
read -r -a extra_flags <<<"${STARVED_BENCH_FLAGS:-}"
work=$(mktemp -d)
spinners=()
stop_spinners() {
  for pid in "${spinners[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${spinners[@]}"; do wait "$pid" 2>/dev/null || true; done
  spinners=()
}
trap 'stop_spinners; rm -rf "$work"' EXIT

for ((round = 1; round <= rounds; ++round)); do
  for server in "$@"; do
    for _ in 1 2; do
      timeout "$spin_s" bash -c 'while :; do :; done' &
      spinners+=($!)
    done
    log=$work/server.log
    rm -f "$log"
    line=$(setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
      "$bench" --server="$server" --data_root="$work" --server_log="$log" \
      --phases=preload --workers=8 --placements="$placements" \
      --checkpoint_bytes="$checkpoint_bytes" --progress_s=600 \
      --max_run_s=$((2 * spin_s + 60)) "${extra_flags[@]}" 2>/dev/null | grep '^preload:' || true)
    stop_spinners
    restarts=$(grep -c 'starts over in a builder process' "$log" || true)
    stalls=$(grep -c 'writes wait for' "$log" || true)
    printf 'round %d  %s  %s  (server log: %s lines on waits, %s starts over)\n' \
      "$round" "$server" "${line:-preload: no result}" "$stalls" "$restarts"
  done
done
