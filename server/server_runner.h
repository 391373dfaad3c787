// RunServer: the whole life of the kv-indexer-server process after main():
// command line, configuration, logging and backend loading here; then what
// every server shares (server/server_wiring.h: the services, the metrics,
// the gRPC server, graceful shutdown on SIGINT/SIGTERM) with the start
// function of its mode: standalone, with or without a data directory
// (server/standalone_start.h), or a replica of the fleet event log
// (server/replica_start.h).
//
// Exit codes: 0 after --help or a graceful shutdown; 2 for a bad command line
// or configuration; 1 when the backend cannot be loaded, the listen address
// cannot be bound, or (KV_INDEXER_EVENT_SOURCE=jetstream) the fleet event
// log cannot be opened.
//
// REQUIRES: called from the main thread before any other thread is started
// (signals are blocked first thing so every later thread inherits the mask).
#ifndef KVINDEXER_SERVER_SERVER_RUNNER_H_
#define KVINDEXER_SERVER_SERVER_RUNNER_H_

#include <chrono>
#include <span>
#include <string>

#include "grpcpp/server.h"

namespace kvindexer {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// How long running calls may take to finish after a shutdown signal before
// they are cancelled.
inline constexpr std::chrono::seconds kShutdownGrace{10};

inline constexpr std::string_view kStartupMessage =
    "starting single-server in-memory SGLang KV Indexer";

// args[0] is the program name.
int RunServer(std::span<const char* const> args);

// The address actually bound: `listen_addr` with its port replaced by
// `bound_port` (they differ when port 0 was requested).
std::string BoundAddress(const std::string& listen_addr, int bound_port);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SERVER_RUNNER_H_
