// The server side of the randomised recovery test: a KvApplier with fault
// injection that can restart empty and list one worker's placements. Two
// implementations: the FakeGatedServer test double and the real in-process
// core Indexer over the reference-model backend (core/indexer.h,
// tests/support/model_backend.h), so the engine is checked against the
// server's actual gate.
//
// Thread safety: not thread-safe.
#ifndef KVINDEXER_BRIDGE_TESTS_SIM_SERVER_H_
#define KVINDEXER_BRIDGE_TESTS_SIM_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "bridge/kv_applier.h"
#include "bridge/tests/fake_gated_server.h"

namespace kvindexer::bridge::testing {

class SimServer : public KvApplier {
 public:
  using Fault = FakeGatedServer::Fault;
  using Call = FakeGatedServer::Call;
  // Restarts with nothing (no durable state).
  virtual void RestartEmpty() = 0;
  // (hash, tier) held by `worker` among hashes 1..max_hash.
  virtual std::set<std::pair<int64_t, int>> Placements(
      const std::string& worker, int64_t max_hash) = 0;
  std::function<Fault(Call)> fault_hook;
  // Called after every gated apply that moved the checkpoint and every
  // Replace that succeeded, with the new checkpoint; `answered` is false
  // when the answer is then lost (the bridge does not learn of it). Only
  // the FakeGatedServer implementation calls it.
  std::function<void(uint64_t checkpoint, bool answered)> on_checkpoint;
};

// FakeGatedServer behind the SimServer interface.
std::unique_ptr<SimServer> MakeFakeSimServer();
// kvindexer::Indexer over test_support::ModelBackend.
std::unique_ptr<SimServer> MakeCoreSimServer();

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_SIM_SERVER_H_
