// The pieces recovery_e2e_test.cc drives: the real kv-indexer-server (with a
// stub to read its index back), the real kv-indexer-bridge wired to a
// FakeSglangPublisher, and the batches the tests publish together with a
// model of what the worker holds after them.
//
// Everything here waits in bounded loops; a wait that runs out reports the
// processes' output through gtest and returns a failure value.
//
// Thread safety: none; one test thread uses these objects.
#ifndef KVINDEXER_TESTS_E2E_RECOVERY_E2E_HARNESS_H_
#define KVINDEXER_TESTS_E2E_RECOVERY_E2E_HARNESS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/fake_sglang_publisher.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {

using namespace std::chrono_literals;

// Upper bounds of waits that normally end within milliseconds; the machine
// may be busy.
inline constexpr std::chrono::milliseconds kStartBound = 30s;
inline constexpr std::chrono::milliseconds kEffectBound = 30s;

inline constexpr char kWorkerId[] = "worker-recovery";
inline constexpr char kWorkerAddress[] = "http://127.0.0.1:30000";

// One event of a test batch, at the GPU medium (HBM) only.
struct Ev {
  enum class Kind { kStore, kRemove, kClear };
  Kind kind = Kind::kStore;
  std::vector<int64_t> hashes;
  std::optional<int64_t> parent;  // stores only
};
Ev Store(std::vector<int64_t> hashes,
         std::optional<int64_t> parent = std::nullopt);
Ev Remove(std::vector<int64_t> hashes);
Ev Clear();
using Events = std::vector<Ev>;

// SGLang's msgpack payload of `events` ([ts, events, dp_rank]).
std::string Payload(const Events& events);
// Applies `events` to the set of hashes a worker holds.
void Fold(std::set<int64_t>& held, const Events& events);

// A kv-indexer-server process plus a stub.
class IndexerUnderTest {
 public:
  // port 0: the server chooses; otherwise exactly that port (a restart).
  // Liveness sweeps are at their default unless `env` (applied last) sets
  // them. Returns once the server answers queries; nullptr (with a gtest
  // failure) otherwise.
  static std::unique_ptr<IndexerUnderTest> Start(
      int port = 0, std::map<std::string, std::string> env = {});

  int port() const { return port_; }
  std::string endpoint() const;
  test_support::ServerProcess& process() { return *process_; }

  // The hashes among `universe` that kWorkerId holds at HBM; nullopt when
  // the query fails.
  std::optional<std::set<int64_t>> Held(const std::vector<int64_t>& universe);
  // The hashes among `universe` that kWorkerId holds, per tier (TierType
  // number -> hashes; tiers holding none are absent); nullopt when the
  // query fails.
  std::optional<std::map<int, std::set<int64_t>>> HeldByTier(
      const std::vector<int64_t>& universe);
  // Held(), or an empty set when the query fails.
  std::set<int64_t> HeldOrEmpty(const std::vector<int64_t>& universe);
  // matched_prefix_blocks of kWorkerAddress for `hashes`; 0 if absent.
  uint32_t Prefix(const std::vector<int64_t>& hashes);
  // The server's checkpoint of kWorkerId under `epoch` (a PROBE: a gated
  // apply with seq 0 and no actions, answered as a duplicate); nullopt when
  // the server covers no such checkpoint.
  std::optional<uint64_t> Checkpoint(const std::string& epoch = "");
  // What the admin API's ListWorkers says of `worker_id`'s fidelity:
  // "exact", "degraded; <reason>" or "unknown"; nullopt when the call fails
  // or the worker is not listed.
  std::optional<std::string> Fidelity(const std::string& worker_id);
  // Closes the stub's connection before a graceful stop: an idle gRPC C++
  // client does not read its socket, so the server would wait for its
  // GOAWAY ping to time out (about 4 s). REQUIRES: no query afterwards.
  void CloseClient() {
    stub_.reset();
    channel_.reset();
  }

 private:
  IndexerUnderTest() = default;
  std::unique_ptr<test_support::ServerProcess> process_;
  int port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::kv_indexer::v1::KVIndexer::Stub> stub_;
};

// Starts kv-indexer-bridge for kWorkerId against `indexer` and `publisher`
// in gated mode (KV_INDEXER_SEQUENCE_GATE=on), with the publisher's replay
// endpoint when `with_replay`, its snapshot endpoint when it has one, a 1 s
// stats line and no heartbeats; `extra_env` is applied last. Returns once
// the bridge's SUB socket has subscribed at the publisher (so live batches
// reach it); nullptr (with a gtest failure) otherwise.
std::unique_ptr<test_support::ServerProcess> StartBridge(
    const IndexerUnderTest& indexer, FakeSglangPublisher& publisher,
    bool with_replay, std::map<std::string, std::string> extra_env = {});

// SIGTERM; the bridge must exit 0 within the bound.
void StopBridge(test_support::ServerProcess& bridge);

// The fixture of the end-to-end recovery tests: a server per test, started
// in SetUp, and the bridge a test starts against it. On a failure both
// processes' output goes to the test log; a bridge still running is
// stopped.
class BridgeAndIndexerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // StartBridge() against indexer_; the bridge is bridge_.
  void Start(FakeSglangPublisher& publisher, bool with_replay,
             std::map<std::string, std::string> env = {});

  std::unique_ptr<IndexerUnderTest> indexer_;
  std::unique_ptr<test_support::ServerProcess> bridge_;
};

// The first stats line the bridge prints after this call
// (KV_INDEXER_STATS_INTERVAL_SECS=1): the state after everything the test
// has already observed. nullopt when none comes within the bound.
std::optional<std::string> NextStatsLine(test_support::ServerProcess& bridge);

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_TESTS_E2E_RECOVERY_E2E_HARNESS_H_
