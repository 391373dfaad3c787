#!/usr/bin/env bash
# Checkpoint build time of two builds on the same files: each round runs the
# checkpoint builder of both servers (A first in odd rounds, B first in even
# ones) on a fresh copy of the directory, exactly as a server starts it
# (kv-indexer-server --kvindexer-build-checkpoint ... priority=normal), and
# reads its wall-clock, user and system time. Both builds must write the
# same file, byte for byte; a difference stops the script.
#
# Usage: bash bench/checkpoint_build_ab.sh <data dir> <base> <last wal> \
#          <server A> <server B>
#
# The directory must hold checkpoint-<base>.ckpt and wal-<base>.log to
# wal-<last wal>.log (copy them from a server's data directory: a stopped
# server's newest checkpoint and the logs after it, for example). It is
# copied, never written. The builders make room for
# KVINDEXER_BUILD_RESERVE_BLOCKS blocks up front (default 11000000, what a
# server of ten million blocks asks for).
#
# Environment:
#   KVINDEXER_BUILD_ROUNDS  rounds (default 3)
set -euo pipefail

if [[ $# -ne 5 ]]; then
  echo "usage: $0 <data dir> <base> <last wal> <server A> <server B>" >&2
  exit 2
fi
dir=$1
base=$2
last=$3
servers=("$4" "$5")
rounds=${KVINDEXER_BUILD_ROUNDS:-3}
reserve=${KVINDEXER_BUILD_RESERVE_BLOCKS:-11000000}
for server in "${servers[@]}"; do
  [[ -x $server ]] || { echo "$server: not an executable" >&2; exit 2; }
done
name() { printf '%016d' "$1"; }
[[ -f $dir/checkpoint-$(name "$base").ckpt ]] ||
  { echo "$dir has no checkpoint $base" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target=$(name $((last + 1)))
# The first build's file; every later one must equal it. A file, not a
# variable: each build runs in a subshell.
reference=$work/reference.ckpt

# One build in a fresh copy; prints "<wall s> <user s> <sys s>".
build() {
  local server=$1 copy=$work/copy
  rm -rf "$copy"
  mkdir -m 700 "$copy"
  cp "$dir/checkpoint-$(name "$base").ckpt" "$copy/"
  for ((g = base; g <= last; g++)); do cp "$dir/wal-$(name "$g").log" "$copy/"; done
  # The builder checks that the process that asked for it is its parent:
  # a shell of its own is (time is a keyword, not a process).
  local times
  times=$( { TIMEFORMAT='%R %U %S'; time bash -c '
    "$1" --kvindexer-build-checkpoint "dir=$2" "base=$3" "last_wal=$4" \
      "reserve_blocks=$5" "parent=$$" priority=normal >&2 || exit 1
    exit 0' _ "$server" "$copy" "$base" "$last" "$reserve"; } 2>&1 >/dev/null |
    tail -1)
  local file=$copy/checkpoint-$target.ckpt.tmp
  [[ -f $file ]] || { echo "$server wrote no checkpoint" >&2; exit 1; }
  if [[ ! -f $reference ]]; then
    mv "$file" "$reference"
  elif ! cmp -s "$file" "$reference"; then
    echo "$server wrote a different checkpoint" >&2
    exit 1
  fi
  echo "$times"
}

echo "round build wall_s user_s sys_s"
declare -A walls
for ((r = 1; r <= rounds; r++)); do
  order=(0 1)
  ((r % 2 == 0)) && order=(1 0)
  for i in "${order[@]}"; do
    label=$([[ $i -eq 0 ]] && echo A || echo B)
    # In the main shell's substitution, so that a failed build stops here.
    measured=$(build "${servers[$i]}")
    read -r wall user sys <<<"$measured"
    echo "$r $label $wall $user $sys"
    walls[$label]+="$wall "
  done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
a=$(median "${walls[A]}")
b=$(median "${walls[B]}")
awk -v a="$a" -v b="$b" 'BEGIN {printf "median wall: A %.2f s, B %.2f s, B/A %.3f; both wrote the same file\n", a, b, (a > 0 ? b / a : 0)}'
