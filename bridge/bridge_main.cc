// kv-indexer-bridge: one SGLang worker's ZMQ KV-event stream ->
// kv-indexer-server. Configuration comes from the environment; see --help.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "bridge/bridge_config.h"
#include "bridge/bridge_runner.h"
#include "bridge/shutdown_signal.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace {

void SetUpLogging() {
  auto logger = spdlog::stderr_color_mt("kv-indexer-bridge");
  logger->set_pattern("[%Y-%m-%dT%H:%M:%S.%e] [%l] %v");
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kvindexer::BridgeUsage().c_str(), stdout);
      return kvindexer::kExitOk;
    }
    std::fprintf(stderr,
                 "kv-indexer-bridge: unknown argument \"%s\"; configuration "
                 "comes from the environment (see --help)\n",
                 argv[i]);
    return kvindexer::kExitConfigError;
  }

  // Block SIGINT/SIGTERM before any thread exists (gRPC and ZMQ start
  // threads); a dedicated thread receives them with sigwait.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  const bool signals_blocked =
      pthread_sigmask(SIG_BLOCK, &signals, nullptr) == 0;

  SetUpLogging();
  absl::StatusOr<kvindexer::BridgeConfig> config =
      kvindexer::LoadBridgeConfig(kvindexer::ProcessEnvironment());
  if (!config.ok()) {
    spdlog::error("configuration error: {}",
                  std::string(config.status().message()));
    return kvindexer::kExitConfigError;
  }
  spdlog::set_level(config->log_level);
  spdlog::info("starting kv-indexer-bridge: {}",
               kvindexer::DescribeConfig(*config));

  kvindexer::ShutdownSignal shutdown;
  std::thread signal_thread;
  if (signals_blocked) {
    signal_thread = std::thread([&shutdown, signals] {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) return;
      if (!shutdown.triggered()) {
        spdlog::info("received {}; shutting down",
                     sig == SIGINT ? "SIGINT" : "SIGTERM");
      }
      shutdown.Trigger();
    });
  } else {
    spdlog::warn(
        "could not install signal handling; SIGINT/SIGTERM will not "
        "stop the bridge cleanly");
  }

  const int exit_code =
      kvindexer::BridgeRunner(*std::move(config), &shutdown).Run();

  if (signal_thread.joinable()) {
    if (!shutdown.triggered()) {
      shutdown.Trigger();
      pthread_kill(signal_thread.native_handle(), SIGTERM);  // wake sigwait
    }
    signal_thread.join();
  }
  return exit_code;
}
