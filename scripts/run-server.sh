#!/usr/bin/env bash
# Installs missing Debian packages, builds kvindexer in Release mode and starts
# kv-indexer-server in the foreground on the default backend, keeping its
# index in ./data under the checkout so that it survives a restart
# (docs/durability.md). Configuration is read from the environment (see
# docs/configuration.md): KV_INDEXER_DATA_DIR chooses another directory, and
# an empty value keeps the index in memory only. Extra arguments go to the
# server.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build_dir=${KVINDEXER_BUILD_DIR:-build/release}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
  -DKVINDEXER_BUILD_TESTS=OFF -DKVINDEXER_BUILD_BENCH=OFF
cmake --build "$build_dir" -j"${KVINDEXER_JOBS:-2}" \
  --target kv-indexer-server kv-indexer-bridge
export KV_INDEXER_DATA_DIR=${KV_INDEXER_DATA_DIR-$PWD/data}
exec "$build_dir/bin/kv-indexer-server" "$@"
