#!/usr/bin/env bash
# Restart time of two builds on the same data directory: each round starts
# both servers, one after the other (A first in odd rounds, B first in even
# ones), each on a fresh copy of the directory, reads the recovery time from
# the server's "recovered ... in <ms> ms" line and its peak RSS from /proc
# as soon as it listens (a checkpoint build that recovery starts may add to
# it), and stops it with SIGTERM. Pairing the runs round by round lets a
# difference show against the machine's drift.
#
# Usage: bash bench/restart_ab.sh <data dir> <server A> <server B>
#
# A server is a kv-indexer-server binary; its backend is its default unless
# KVINDEXER_RESTART_BACKEND_A / _B name one (KV_INDEXER_BACKEND: a name or
# the path of a plugin; a server refuses a plugin of a newer ABI minor, so
# give each build its own). The directory is copied, never written. Make one
# with a server that has KV_INDEXER_DATA_DIR set and kv-indexer-bench
# --phases=preload --preload_placements=<n> against it, then SIGTERM.
#
# Environment:
#   KVINDEXER_RESTART_ROUNDS  rounds (default 3)
#   KVINDEXER_RESTART_PORT    the servers' port on 127.0.0.1 (default 50777)
#   KVINDEXER_RESTART_WORK    where the copies go (default: a temporary
#                             directory beside the data directory, removed
#                             at the end)
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: bash bench/restart_ab.sh <data dir> <server A> <server B>" >&2
  exit 2
fi
data=$1
servers=("$2" "$3")
backends=("${KVINDEXER_RESTART_BACKEND_A:-}" "${KVINDEXER_RESTART_BACKEND_B:-}")
rounds=${KVINDEXER_RESTART_ROUNDS:-3}
port=${KVINDEXER_RESTART_PORT:-50777}
if [[ ! -d $data ]]; then
  echo "restart_ab: $data is not a directory" >&2
  exit 2
fi
for s in "${servers[@]}"; do
  if [[ ! -x $s ]]; then
    echo "restart_ab: $s is not an executable" >&2
    exit 2
  fi
done
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "KVINDEXER_RESTART_ROUNDS=$rounds: use a positive integer" >&2
  exit 2
fi
if ! [[ $port =~ ^[1-9][0-9]*$ ]] || ((port > 65535)); then
  echo "KVINDEXER_RESTART_PORT=$port: use a port number" >&2
  exit 2
fi
work=${KVINDEXER_RESTART_WORK:-$(mktemp -d "$(dirname "$data")/restart-ab.XXXXXX")}
mkdir -p "$work"
pid=
cleanup() {
  if [[ -n $pid ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
  if [[ -z ${KVINDEXER_RESTART_WORK:-} ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# run <label> <server> <backend>: one restart of round $round; prints
# "<round> <label> <ms> <kB>" and keeps "<label> <ms> <kB>" in results.
run() {
  local label=$1 server=$2 backend=$3
  rm -rf "$work/dir"
  cp -a "$data" "$work/dir"
  sync
  local log="$work/$label.log"
  env ${backend:+KV_INDEXER_BACKEND="$backend"} \
    KV_INDEXER_DATA_DIR="$work/dir" KV_INDEXER_WAL_SYNC=none \
    KV_INDEXER_LISTEN_ADDR="127.0.0.1:$port" "$server" >"$log" 2>&1 &
  pid=$!
  # Bounded: a 10M-placement restart takes seconds; give up after 10 min.
  local waited=0
  until grep -q "listening" "$log"; do
    if ! kill -0 "$pid" 2>/dev/null || ((waited >= 6000)); then
      echo "restart_ab: $label did not start; see $log" >&2
      tail -5 "$log" >&2
      exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  local ms kb
  kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
  ms=$(sed -n 's/.*recovered .* in \([0-9]*\) ms.*/\1/p' "$log" | head -1)
  if [[ -z $ms ]]; then
    echo "restart_ab: $label logged no recovery line; see $log" >&2
    kill -KILL "$pid" 2>/dev/null || true
    exit 1
  fi
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  echo "$label $ms $kb" >>"$work/results"
  echo "$round $label $ms $kb"
}

echo "round build recovery_ms peak_rss_kB"
: >"$work/results"
for ((round = 1; round <= rounds; round++)); do
  if ((round % 2 == 1)); then
    run A "${servers[0]}" "${backends[0]}"
    run B "${servers[1]}" "${backends[1]}"
  else
    run B "${servers[1]}" "${backends[1]}"
    run A "${servers[0]}" "${backends[0]}"
  fi
done
awk '
  { ms[$1] = ms[$1] " " $2; kb[$1] = kb[$1] " " $3 }
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    ma = median(ms["A"]); mb = median(ms["B"])
    ka = median(kb["A"]); kb_ = median(kb["B"])
    printf "median recovery: A %d ms, B %d ms, B/A %s\n", ma, mb,
      (ma > 0 ? sprintf("%.3f", mb / ma) : "n/a")
    printf "median peak RSS: A %d kB, B %d kB, B/A %s\n", ka, kb_,
      (ka > 0 ? sprintf("%.3f", kb_ / ka) : "n/a")
  }' "$work/results"
