// kv-indexer-bridge: one SGLang worker's ZMQ KV-event stream ->
// kv-indexer-server. Configuration comes from the environment; see --help.
#include <cstdio>
#include <optional>
#include <string>

#include "bridge/bridge_config.h"
#include "bridge/bridge_runner.h"
#include "bridge/multi_stream_runner.h"
#include "bridge/stop_request.h"
#include "bridge/stream_supervisor.h"
#include "common/env.h"
#include "common/log_setup.h"
#include "common/shutdown_signals.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  namespace bridge = kvindexer::bridge;
  // Before anything can start a thread (gRPC and ZMQ do).
  const kvindexer::ShutdownSignals signals =
      kvindexer::ShutdownSignals::Block();

  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(bridge::BridgeUsage().c_str(), stdout);
      return bridge::kExitOk;
    }
    std::fprintf(stderr,
                 "kv-indexer-bridge: unknown argument %s; configuration "
                 "comes from the environment (see --help)\n",
                 kvindexer::QuoteEnvValue(arg).c_str());
    return bridge::kExitConfigError;
  }

  kvindexer::SetUpLogging("kv-indexer-bridge");
  absl::StatusOr<bridge::BridgeConfig> config =
      bridge::LoadBridgeConfig(kvindexer::ProcessEnvironment());
  if (!config.ok()) {
    spdlog::error("configuration error: {}",
                  std::string(config.status().message()));
    return bridge::kExitConfigError;
  }
  spdlog::set_level(config->log_level);
  for (const std::string& warning : config->warnings) {
    spdlog::warn("{}", warning);
  }
  spdlog::info("starting kv-indexer-bridge: {}",
               bridge::DescribeConfig(*config));

  bridge::StopRequest shutdown;
  // Declared after `shutdown`, which its callback uses, so it is stopped and
  // joined first.
  std::optional<kvindexer::ShutdownSignalWatcher> watcher;
  if (signals.active()) {
    watcher.emplace(signals, [&shutdown](int signal_number) {
      if (!shutdown.triggered()) {
        spdlog::info("received {}; shutting down",
                     kvindexer::SignalName(signal_number));
      }
      shutdown.Trigger();
    });
  } else {
    spdlog::warn(
        "cannot take over SIGINT/SIGTERM ({}); they keep their default "
        "action and will not stop the bridge cleanly",
        signals.error());
  }

  if (!config->workers.empty()) {
    return bridge::MultiStreamRunner(*std::move(config), &shutdown,
                                     bridge::kParkRetryPeriod)
        .Run();
  }
  return bridge::BridgeRunner(*std::move(config), &shutdown).Run();
}
