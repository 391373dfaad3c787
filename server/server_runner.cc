#include "server/server_runner.h"

#include <cstdio>
#include <string>

#include "common/log_setup.h"
#include "common/shutdown_signals.h"
#include "core/backend_loader.h"
#include "core/indexer.h"
#include "fmt/format.h"
#include "server/replica_start.h"
#include "server/server_config.h"
#include "server/server_wiring.h"
#include "server/standalone_start.h"
#include "spdlog/spdlog.h"

namespace kvindexer {

std::string BoundAddress(const std::string& listen_addr, int bound_port) {
  const size_t colon = listen_addr.rfind(':');
  return fmt::format("{}:{}", listen_addr.substr(0, colon), bound_port);
}

int RunServer(std::span<const char* const> args) {
  // Before anything can start a thread.
  const ShutdownSignals signals = ShutdownSignals::Block();

  const std::string_view program = args.empty() ? "kv-indexer-server" : args[0];
  const auto action = ParseCommandLine(args);
  if (!action.ok()) {
    std::fprintf(stderr, "kv-indexer-server: %s\n",
                 std::string(action.status().message()).c_str());
    return kExitUsage;
  }
  if (*action == CommandLineAction::kHelp) {
    std::fputs(UsageText(program).c_str(), stdout);
    return kExitOk;
  }

  SetUpLogging("kv-indexer-server");
  const auto config = LoadServerConfig(ProcessEnvironment());
  if (!config.ok()) {
    spdlog::error("invalid configuration: {}",
                  std::string(config.status().message()));
    return kExitUsage;
  }
  spdlog::set_level(config->log_level);
  if (!signals.active()) {
    spdlog::warn(
        "cannot take over SIGINT/SIGTERM ({}); they keep their default "
        "action and shutdown will not be graceful",
        signals.error());
  }

  auto loaded = LoadedBackend::Load(config->backend, config->backend_path);
  if (!loaded.ok()) {
    spdlog::error("cannot load the index backend: {}",
                  std::string(loaded.status().message()));
    return kExitFailure;
  }
  const BackendDescriptor& descriptor = (*loaded)->descriptor();
  if ((*loaded)->abi_minor() != descriptor.abi_minor) {
    spdlog::warn(
        "backend {} says backend ABI {}.{} but leaves the calls of {}.{} to "
        "the header's defaults; it is used as ABI {}.{} (docs/backend-abi.md, "
        "\"Source compatibility across minors\")",
        descriptor.name != nullptr ? descriptor.name : "?",
        descriptor.abi_major, descriptor.abi_minor, descriptor.abi_major,
        (*loaded)->abi_minor() + 1, descriptor.abi_major,
        (*loaded)->abi_minor());
  }
  if (config->limits.placement_bound.enabled() &&
      (*loaded)->abi_minor() < kPlacementBoundAbiMinor) {
    spdlog::error(
        "invalid configuration: {} / {} need a backend that counts "
        "placements (backend ABI 1.{} or later); backend {} is used as ABI "
        "1.{}: unset both or choose another backend",
        kMaxPlacementsVar, kMaxPlacementsPerWorkerVar, kPlacementBoundAbiMinor,
        descriptor.name != nullptr ? descriptor.name : "?",
        (*loaded)->abi_minor());
    return kExitUsage;
  }
  Indexer indexer((*loaded)->backend(), /*gate_log=*/nullptr, config->limits,
                  (*loaded)->abi_minor(), /*clock=*/nullptr,
                  /*lifecycle_log=*/nullptr, config->staging);
  // After the Indexer, which it borrows and which outlives it; the mode's
  // state lives in the start function, inside the wiring's life.
  ServerWiring wiring(*config, **loaded, indexer, signals);
  if (!wiring.StartMetricsEndpoint()) return kExitFailure;
  return config->event_source.follows_log() ? RunReplica(wiring)
                                            : RunStandalone(wiring);
}

}  // namespace kvindexer
