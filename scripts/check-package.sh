#!/usr/bin/env bash
# Builds the Debian packages of a build directory and checks them
# (docs/packaging.md): `cpack -G DEB`, the files each package must and must
# not hold, the conffiles and Depends, `lintian --fail-on error`, the
# environment files against the installed programs' --help, the units
# through `systemd-analyze verify`, and then both packages unpacked
# (dpkg -x) into a scratch root: the unpacked server must start from there
# with no environment but a loopback address and a data directory, load the
# unpacked robin_sharded_snapshot plugin and answer the unpacked
# kv-indexer-ctl, and the unpacked conformance suite must find the unpacked
# absl_rwlock plugin by name.
#
# Usage: scripts/check-package.sh BUILD_DIR
# The build should be complete: cpack first runs the build's preinstall
# step, which builds whatever is out of date (nothing, in a complete build).
# Everything is written under BUILD_DIR/packaging/check, which the run
# empties first; the build's own tree is not installed into.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
work=$build/packaging/check
started=$SECONDS
server_pid=

fail() {
  echo "check-package: FAIL: $*" >&2
  exit 1
}
step() { printf '\n== %s (%d s so far)\n' "$*" $((SECONDS - started)); }
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

for tool in cpack dpkg-deb dpkg-shlibdeps lintian systemd-analyze; do
  command -v "$tool" >/dev/null ||
    fail "$tool is not installed (scripts/install-deps.sh installs it)"
done
[[ -f $build/CPackConfig.cmake ]] || fail "$build has no CPackConfig.cmake"

rm -rf "$work"
mkdir -p "$work/out" "$work/root"

step "cpack -G DEB"
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' \
  "$build/CPackConfig.cmake")
[[ -n $version ]] || fail "no CPACK_PACKAGE_VERSION in CPackConfig.cmake"
arch=$(dpkg --print-architecture)
# The CPack files of this run (its staging trees) stay under $work.
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" \
  >"$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log" >&2
  fail "cpack failed"
}
runtime_deb=$work/out/kvindexer_${version}_${arch}.deb
dev_deb=$work/out/kvindexer-dev_${version}_${arch}.deb
for deb in "$runtime_deb" "$dev_deb"; do
  [[ -f $deb ]] || fail "cpack did not write $(basename "$deb"): $(ls "$work/out")"
done

step "contents"
# Paths as dpkg-deb -c prints them, without the leading "./".
contents() { dpkg-deb -c "$1" | awk '{print $NF}' | sed 's|^\./||'; }
contents "$runtime_deb" >"$work/runtime.list"
contents "$dev_deb" >"$work/dev.list"
expect() {
  local list=$1
  shift
  local path
  for path in "$@"; do
    grep -qx "$path" "$work/$list.list" ||
      fail "$list package lacks $path"
  done
}
expect_not() {
  local list=$1 pattern=$2
  if grep -E "$pattern" "$work/$list.list"; then
    fail "$list package holds files matching $pattern (listed above)"
  fi
}
expect runtime usr/bin/kv-indexer-server usr/bin/kv-indexer-bridge \
  usr/bin/kv-indexer-ctl \
  usr/lib/kvindexer/backends/kvindexer-backend-absl_rwlock.so \
  usr/lib/kvindexer/backends/kvindexer-backend-robin_sharded_snapshot.so \
  lib/systemd/system/kv-indexer-server.service \
  'lib/systemd/system/kv-indexer-bridge@.service' \
  etc/default/kv-indexer-server etc/kvindexer/bridge-example.env \
  usr/share/man/man1/kv-indexer-server.1.gz \
  usr/share/man/man1/kv-indexer-bridge.1.gz \
  usr/share/man/man1/kv-indexer-ctl.1.gz \
  usr/share/doc/kvindexer/copyright usr/share/doc/kvindexer/changelog.gz
expect_not runtime '^usr/include/|^usr/lib/cmake/|kvindexer-conformance'
expect dev usr/include/kvindexer/backend.h usr/include/kvindexer/backend_kit.h \
  usr/lib/cmake/kvindexer/kvindexerConfig.cmake \
  usr/lib/cmake/kvindexer/kvindexerConfigVersion.cmake \
  usr/lib/cmake/kvindexer/kvindexerTargets.cmake \
  usr/lib/cmake/kvindexer/KvindexerBackend.cmake \
  usr/bin/kvindexer-conformance \
  usr/share/doc/kvindexer-dev/copyright
expect_not dev '^usr/bin/kv-indexer-|^usr/lib/kvindexer/backends/.+|^etc/.+|^lib/systemd/.+'
conffiles=$(dpkg-deb -I "$runtime_deb" conffiles)
for file in /etc/default/kv-indexer-server /etc/kvindexer/bridge-example.env; do
  grep -qx "$file" <<<"$conffiles" || fail "$file is not a conffile"
done
depends=$(dpkg-deb -f "$runtime_deb" Depends)
[[ $depends == *libgrpc++* && $depends == *libc6* ]] ||
  fail "kvindexer's Depends lacks the gRPC and C libraries: $depends"
echo "kvindexer Depends: $depends"
echo "kvindexer-dev Depends: $(dpkg-deb -f "$dev_deb" Depends)"

step "lintian --fail-on error"
lintian_rc=0
lintian --fail-on error --tag-display-limit 0 "$runtime_deb" "$dev_deb" \
  >"$work/lintian.log" 2>&1 || lintian_rc=$?
cat "$work/lintian.log"
echo "lintian: $(grep -c '^E: ' "$work/lintian.log" || true) errors," \
  "$(grep -c '^W: ' "$work/lintian.log" || true) warnings"
[[ $lintian_rc -eq 0 ]] || fail "lintian exited $lintian_rc"

step "unpack into $work/root"
dpkg -x "$runtime_deb" "$work/root"
dpkg -x "$dev_deb" "$work/root"
root=$work/root
bin=$root/usr/bin

# Each environment file assigns (commented out) exactly the variables the
# installed program's --help names.
variables() { grep -oE '(KV_INDEXER|SGLANG)_[A-Z0-9_]*[A-Z0-9]' | sort -u; }
assigned() { sed -n 's/^#\{0,1\}\([A-Z0-9_]*\)=.*/\1/p' "$1" | variables; }
check_env_file() {
  local program=$1 file=$2
  diff <("$bin/$program" --help | variables) <(assigned "$root$file") ||
    fail "$file and $program --help name different variables (< --help, > file)"
  echo "$file: the $(assigned "$root$file" | wc -l) variables of $program --help"
}
check_env_file kv-indexer-server /etc/default/kv-indexer-server
check_env_file kv-indexer-bridge /etc/kvindexer/bridge-example.env

step "systemd-analyze verify"
# The units as installed, but for the programs' paths, which point into the
# scratch root; an instance stands for the bridge's template. Any remark
# (an unknown key, a bad value) fails.
mkdir -p "$work/units"
sed "s|/usr/bin/|$bin/|" "$root/lib/systemd/system/kv-indexer-server.service" \
  >"$work/units/kv-indexer-server.service"
sed "s|/usr/bin/|$bin/|" "$root/lib/systemd/system/kv-indexer-bridge@.service" \
  >"$work/units/kv-indexer-bridge@check.service"
for unit in "$work"/units/*.service; do
  remarks=$(systemd-analyze verify --man=no "$unit" 2>&1) ||
    fail "systemd-analyze verify $(basename "$unit"): $remarks"
  [[ -z $remarks ]] || fail "systemd-analyze verify $(basename "$unit"): $remarks"
  echo "$(basename "$unit"): no remarks"
done

step "the installed server, from $root"
# No environment but a free port on loopback and a data directory: the
# backend must come from the plugin folder next to the installed executable.
env -i PATH=/usr/bin:/bin KV_INDEXER_LISTEN_ADDR=127.0.0.1:0 \
  KV_INDEXER_DATA_DIR="$work/state" \
  "$bin/kv-indexer-server" >"$work/server.log" 2>&1 &
server_pid=$!
deadline=$((SECONDS + 60))
port=
while [[ -z $port ]]; do
  kill -0 "$server_pid" 2>/dev/null || {
    cat "$work/server.log" >&2
    fail "the installed server exited before listening"
  }
  ((SECONDS < deadline)) || fail "the server did not listen within 60 s"
  port=$(sed -n 's/.*listening addr=127\.0\.0\.1:\([0-9]*\).*/\1/p' \
    "$work/server.log" | head -1)
  [[ -n $port ]] || sleep 0.1
done
plugins=$root/usr/bin/../lib/kvindexer/backends
grep -q "backend=robin_sharded_snapshot " "$work/server.log" &&
  grep -qF "backend_path=$plugins/kvindexer-backend-robin_sharded_snapshot.so " \
    "$work/server.log" || {
  cat "$work/server.log" >&2
  fail "the server did not load the installed robin_sharded_snapshot plugin from $plugins"
}
status=
while ! status=$(env -i "$bin/kv-indexer-ctl" status \
  --endpoint "http://127.0.0.1:$port" --timeout 2 2>&1); do
  ((SECONDS < deadline)) || fail "kv-indexer-ctl status kept failing: $status"
  sleep 0.1
done
echo "$status"
grep -q robin_sharded_snapshot <<<"$status" ||
  fail "kv-indexer-ctl status does not name the backend"
kill -TERM "$server_pid"
deadline=$((SECONDS + 30))
# Until it is reaped below, a server that exited is a zombie.
while state=$(ps -o stat= -p "$server_pid") && [[ $state != Z* ]]; do
  ((SECONDS < deadline)) || fail "the server did not stop within 30 s of SIGTERM"
  sleep 0.1
done
server_rc=0
wait "$server_pid" || server_rc=$?
server_pid=
[[ $server_rc -eq 0 ]] || {
  cat "$work/server.log" >&2
  fail "the server exited $server_rc after SIGTERM"
}
echo "server: served on 127.0.0.1:$port, stopped cleanly"

step "the installed conformance suite on the installed absl_rwlock plugin"
env -i PATH=/usr/bin:/bin KV_INDEXER_BACKEND=absl_rwlock \
  "$bin/kvindexer-conformance" --gtest_filter='*Stats*' \
  >"$work/conformance.log" 2>&1 || {
  cat "$work/conformance.log" >&2
  fail "kvindexer-conformance failed on the installed absl_rwlock"
}
grep -q '\[  PASSED  \] [1-9]' "$work/conformance.log" ||
  fail "kvindexer-conformance ran no test"
tail -1 "$work/conformance.log"

printf '\ncheck-package: OK in %d s (%s, %s)\n' $((SECONDS - started)) \
  "$(basename "$runtime_deb")" "$(basename "$dev_deb")"
