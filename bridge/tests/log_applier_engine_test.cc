// The recovery engine (StreamRecovery) writing through a LogApplier to a
// MemoryEventLog, as the bridge does with KV_INDEXER_SINK=jetstream: the
// gated cycle, its probes and heartbeats run over the log without losing
// state, a replica that applies the log holds the worker's cache, and a
// second bridge writing the same worker stops the engine with a permanent
// error naming it.
#include <chrono>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bridge/log_applier.h"
#include "bridge/stream_recovery.h"
#include "bridge/tests/fake_publisher.h"
#include "bridge/tests/fake_recovery_env.h"
#include "core/indexer.h"
#include "fleet/memory_event_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replica/record_applier.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::bridge::testing {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using Op = PublisherOp;

constexpr char kLogWorker[] = "w";
constexpr char kProducer[] = "host-a:1:aa";
constexpr milliseconds kSecond(1000);

// StreamRecovery over the log, with FakePublisher as the SGLang side
// (live and replay).
struct LogRig {
  LogRig()
      : applier(kLogWorker, kProducer, &log),
        queue(&clock),
        publisher(
            [this](uint64_t seq, std::string topic, std::string payload) {
              queue.PushBatch(seq, std::move(payload), std::move(topic));
            },
            /*buffer_steps=*/10'000, /*epoch_labels=*/false),
        rng(7) {
    RecoveryOptions options;
    options.header.worker_id = kLogWorker;
    options.header.worker_address = "http://w:1";
    options.heartbeat_ttl = 3 * kSecond;
    RecoveryIo io;
    io.applier = &applier;
    io.live = &queue;
    io.replay = &publisher;
    io.clock = &clock;
    io.random = [this] { return rng(); };
    io.stats = &stats;
    engine = std::make_unique<StreamRecovery>(std::move(options), io);
  }

  absl::Status RunFor(milliseconds duration) {
    clock.StopAfter(duration);
    return engine->Run();
  }

  std::vector<fleet::LoggedRecord> Records() {
    absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
        log.Read(1, 100'000, milliseconds(0));
    EXPECT_TRUE(records.ok()) << records.status();
    return records.ok() ? *records : std::vector<fleet::LoggedRecord>{};
  }

  fleet::MemoryEventLog log;
  LogApplier applier;
  FakeClock clock;
  FakeLiveQueue queue;
  FakePublisher publisher;
  std::mt19937_64 rng;
  BridgeStats stats;
  std::unique_ptr<StreamRecovery> engine;
};

std::set<int64_t> HeldBy(Indexer& indexer, const std::string& worker,
                         const std::vector<int64_t>& hashes) {
  std::set<int64_t> held;
  for (int64_t hash : hashes) {
    kv_indexer::v1::MatchExternalKvResponse response;
    EXPECT_TRUE(indexer.operations()
                    .Match(test_support::MatchRequest({hash}), &response)
                    .ok());
    for (const auto& match : response.matches()) {
      if (match.worker_id() == worker) held.insert(hash);
    }
  }
  return held;
}

TEST(LogApplierEngine, AGatedStreamReachesAReplicaThroughTheLog) {
  LogRig rig;
  rig.publisher.Publish({Op::Store({1, 2})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());
  rig.publisher.Publish({Op::Remove({1}), Op::Store({3})});
  ASSERT_TRUE(rig.RunFor(10 * kSecond).ok());

  EXPECT_EQ(rig.stats.server_mode, "gated");
  EXPECT_EQ(rig.stats.state, "exact");
  EXPECT_EQ(rig.stats.state_losses, 0u);
  EXPECT_GE(rig.stats.heartbeats, 5u);
  EXPECT_EQ(rig.stats.resyncs, 1u);

  test_support::ModelBackend backend;
  Indexer replica_indexer(&backend);
  const std::vector<fleet::LoggedRecord> records = rig.Records();
  for (const fleet::LoggedRecord& record : records) {
    const replica::RecordResult result =
        replica::ApplyLogRecord(replica_indexer, record);
    EXPECT_EQ(result.outcome, replica::RecordOutcome::kApplied)
        << "record " << record.position << ": " << result.status;
  }
  EXPECT_EQ(HeldBy(replica_indexer, kLogWorker, {1, 2, 3}),
            (std::set<int64_t>{2, 3}));
  EXPECT_TRUE(replica_indexer.operator_view()
                  .HeartbeatDeadline(kLogWorker)
                  .has_value());
}

TEST(LogApplierEngine, ASecondBridgeStopsTheEngineNamingIt) {
  LogRig rig;
  rig.publisher.Publish({Op::Store({1})});
  ASSERT_TRUE(rig.RunFor(kSecond).ok());

  LogApplier other(kLogWorker, "host-b:2:bb", &rig.log);
  kv_indexer::v1::ApplyExternalKvBatchResponse response;
  ASSERT_TRUE(
      other.Apply(test_support::Batch(kLogWorker, "http://w:1"), &response)
          .ok());
  const uint64_t others_position = rig.Records().back().position;

  rig.publisher.Publish({Op::Store({2})});
  const absl::Status status = rig.RunFor(10 * kSecond);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("\"host-b:2:bb\""));
  // Nothing of this bridge's after the other's record.
  EXPECT_EQ(rig.Records().back().position, others_position);
}

}  // namespace
}  // namespace kvindexer::bridge::testing
