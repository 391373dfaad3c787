// RegisterWorkers: gives a server `workers` worker records, each by one
// seed-era ApplyExternalKvBatch (no epoch, no sequence gate) that reports
// one block hash of its own at HBM, sent from several client threads, each
// on a connection of its own. This is how kv-indexer-operator-poll-bench
// fills a server to the worker bound.
//
// Worker i is RegisteredWorkerId(i): "worker-" and i in at least five
// digits, so that ids sort as their numbers do; its address is a private
// IPv4 address derived from i.
//
// Thread safety: RegisterWorkers blocks its caller and joins every thread
// it starts before it returns.
#ifndef KVINDEXER_BENCH_WORKER_REGISTRATION_H_
#define KVINDEXER_BENCH_WORKER_REGISTRATION_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kvindexer::bench {

std::string RegisteredWorkerId(uint32_t index);
std::string RegisteredWorkerAddress(uint32_t index);

struct RegistrationFigures {
  uint32_t workers = 0;
  double seconds = 0;
};

// Fails with the first failed apply's status (and stops the other threads
// at their next apply) or when a connection cannot be made within
// `rpc_deadline`; each apply has `rpc_deadline`.
[[nodiscard]] absl::StatusOr<RegistrationFigures> RegisterWorkers(
    const std::string& address, uint32_t workers, uint32_t threads,
    std::chrono::milliseconds rpc_deadline);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_WORKER_REGISTRATION_H_
