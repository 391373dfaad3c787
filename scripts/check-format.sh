#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (with the
# repository's .clang-format) would write, and names the files to reformat.
# Fix with: git ls-files '*.h' '*.cc' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t files < <(git ls-files '*.h' '*.cc')
if ! out=$(clang-format --dry-run --Werror "${files[@]}" 2>&1); then
  echo "check-format: these files need clang-format:" >&2
  grep -o '^[^:]*\.\(h\|cc\):' <<<"$out" | sort -u | tr -d ':' |
    sed 's/^/  /' >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
