#!/usr/bin/env bash
# Installs the Debian 12 packages kvindexer needs to build and test.
# Idempotent: installs only what is missing and does nothing when all is present.
set -euo pipefail

packages=(
  build-essential cmake pkg-config ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev robin-map-dev libabsl-dev
  libspdlog-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev clang-format ccache git
  # The linker the build prefers (cmake/KvindexerLinker.cmake), and the
  # build tool of scripts/test.sh's sanitizer build.
  lld ninja-build
  # Operations (docs/operations.md): the metrics endpoint's HTTP server, TLS
  # (the tests make their certificates with the openssl command), and NATS.
  libcpp-httplib-dev openssl libssl-dev libnats-dev nats-server
  # The Debian packages' check (scripts/check-package.sh, docs/packaging.md):
  # lintian, and systemd-analyze for the units; dpkg-shlibdeps comes with
  # build-essential's dpkg-dev.
  lintian systemd
  # promtool, which checks and unit-tests the alerting rules and the
  # dashboard's queries (docs/monitoring.md).
  prometheus
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive

# Packages with a service (prometheus, nats-server) start it from their
# postinst. In a container without an init system that start fails and
# leaves the package half-configured, so unless the machine already has a
# policy, a temporary policy-rc.d tells invoke-rc.d not to start services
# (exit 101, "action forbidden"); the package is still fully configured.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi

# Finishes a package an earlier run left half-configured.
dpkg --configure -a
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
