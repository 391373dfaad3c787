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
# STARVED_CHECKPOINT_BYTES (4194304; the bound is four times it, given
# explicitly since the server's default is twice),
# STARVED_SPIN_S (how long the busy loops run at most, 120: a preload still
# waiting then goes on once they end, so its time shows the wait),
# STARVED_BENCH_FLAGS (more flags for the bench, e.g. --max_replay_bytes=0
# for a control run whose writes never wait, or
# --checkpoint_builder=thread).
# Needs root (setpriv drops the capability from the bounding set).
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 <kv-indexer-durability-bench> <server>..." >&2
  exit 2
fi
if ! setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice true; then
  echo "$0: setpriv cannot drop CAP_SYS_NICE here (run as root)" >&2
  exit 1
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
  for pid in ${spinners[@]+"${spinners[@]}"}; do kill "$pid" 2>/dev/null || true; done
  for pid in ${spinners[@]+"${spinners[@]}"}; do wait "$pid" 2>/dev/null || true; done
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
    progress=$work/bench.stderr
    rm -f "$log"
    line=$(setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
      "$bench" --server="$server" --data_root="$work" --server_log="$log" \
      --phases=preload --workers=8 --placements="$placements" \
      --checkpoint_bytes="$checkpoint_bytes" --progress_s=600 \
      --max_replay_bytes=$((4 * checkpoint_bytes)) \
      --max_run_s=$((2 * spin_s + 60)) ${extra_flags[@]+"${extra_flags[@]}"} \
      2>"$progress" | grep '^preload:' || true)
    stop_spinners
    restarts=0
    if [[ -f $log ]]; then
      restarts=$(grep -cE 'starts over in a (builder process|thread)' "$log" || true)
    fi
    if [[ -z $line ]]; then
      line="preload: no result; the bench said: $(tail -1 "$progress")"
    fi
    printf 'round %d  %s  %s  (builds started over: %s)\n' \
      "$round" "$server" "$line" "$restarts"
  done
done
