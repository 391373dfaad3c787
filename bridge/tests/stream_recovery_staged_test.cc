// Multi-stream mode's snapshot-v2 install (docs/bridge-events.md, "Many
// streams in one process > Snapshot-v2 installs"): Begin, Appends of at most
// 16,384 placements and Commit, the worker generation on every later
// request, the header check that parks the stream, Abort and retry after a
// failed Append, the Replace fallback, the resynchronisation a new indexer
// epoch asks for, after its random wait, and the registration apply sent
// only when the process's Configure was refused.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridge/bridge_config.h"
#include "bridge/multi_stream_runner.h"
#include "bridge/stream_recovery.h"
#include "bridge/tests/fake_gated_server.h"
#include "bridge/tests/fake_publisher.h"
#include "bridge/tests/fake_recovery_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge::testing {
namespace stream_recovery_staged_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

WorkerEntry Entry() {
  WorkerEntry entry;
  entry.worker_id = "w";
  entry.worker_address = "http://w:1";
  entry.event_endpoint = "tcp://w:2";
  entry.snapshot_endpoint = "tcp://w:3";
  entry.stream_namespace = "ns";
  entry.dp_rank = 1;
  entry.model = "llama";
  entry.hash_schema_version = 2;
  entry.page_size = 16;
  entry.is_bigram = true;
  return entry;
}

// A snapshot-v2 provider over a FakePublisher: the publisher publishes the
// barrier and holds the blocks; the header carries `fields`.
class V2Source final : public SnapshotSource {
 public:
  V2Source(FakePublisher* publisher, FakeClock* clock)
      : publisher_(publisher), clock_(clock) {}
  absl::StatusOr<PublisherSnapshot> Fetch() override {
    fetch_times.push_back(clock_->Elapsed());
    absl::StatusOr<PublisherSnapshot> v1 = publisher_->Fetch();
    if (!v1.ok()) return v1;
    PublisherSnapshot snapshot = *std::move(v1);
    snapshot.version = 2;
    snapshot.hashes.clear();
    for (const auto& [hash, tier] : publisher_->cache()) {
      snapshot.blocks.push_back(
          SnapshotBlock{hash, static_cast<Tier>(tier), 1, 16});
    }
    snapshot.fields = fields;
    return snapshot;
  }

  SnapshotHeaderFields fields;
  std::vector<std::chrono::milliseconds> fetch_times;

 private:
  FakePublisher* publisher_;
  FakeClock* clock_;
};

SnapshotHeaderFields MatchingFields(std::string generation) {
  SnapshotHeaderFields fields;
  fields.stream_namespace = "ns";
  fields.worker_id = "w";
  fields.dp_rank = 1;
  fields.model = "llama";
  fields.hash_schema_version = 2;
  fields.page_size = 16;
  fields.is_bigram = true;
  fields.worker_generation = std::move(generation);
  return fields;
}

struct StagedRig {
  StagedRig()
      : queue(&clock),
        publisher(
            [this](uint64_t seq, std::string topic, std::string payload) {
              queue.PushBatch(seq, std::move(payload), std::move(topic));
            },
            10'000, /*epoch_labels=*/true),
        source(&publisher, &clock) {
    source.fields = MatchingFields("gen-7");
  }

  void Start() {
    BridgeConfig config;
    config.workers = {Entry()};
    RecoveryIo io;
    io.applier = &server;
    io.live = &queue;
    io.snapshot = &source;
    io.clock = &clock;
    io.random = [this] { return random_value; };
    io.stats = &stats;
    io.configure = [this](const std::string& generation) {
      configured.push_back(generation);
      return server.Configure(Entry().worker_id, Entry().worker_address).ok();
    };
    io.indexer_epoch = [this](const std::string& epoch) {
      epochs.push_back(epoch);
    };
    io.take_resync = [this] { return std::exchange(resync, false); };
    engine = std::make_unique<StreamRecovery>(
        RecoveryOptionsForEntry(config, Entry()), io);
  }

  absl::Status RunFor(std::chrono::milliseconds duration) {
    clock.StopAfter(duration);
    return engine->Run();
  }

  FakeClock clock;
  FakeLiveQueue queue;
  FakePublisher publisher;
  V2Source source;
  FakeGatedServer server;
  BridgeStats stats;
  uint64_t random_value = 0;
  bool resync = false;
  std::vector<std::string> configured;
  std::vector<std::string> epochs;
  std::unique_ptr<StreamRecovery> engine;
};

TEST(StagedInstall, AppendsOfAtMost16384ThenCommitAndTheGenerationAfter) {
  StagedRig rig;
  for (int64_t h = 1; h <= 40'000; ++h) rig.publisher.Hold(h);
  rig.Start();
  ASSERT_TRUE(rig.RunFor(1s).ok());
  ASSERT_TRUE(rig.engine->exact());

  ASSERT_EQ(rig.server.begins.size(), 1u);
  const auto& begin = rig.server.begins[0];
  EXPECT_EQ(begin.stream_id().namespace_(), "ns");
  EXPECT_EQ(begin.stream_id().worker_id(), "w");
  EXPECT_EQ(begin.stream_id().dp_rank(), 1u);
  EXPECT_EQ(begin.worker_address(), "http://w:1");
  EXPECT_EQ(begin.worker_epoch(), rig.publisher.epoch());
  EXPECT_EQ(begin.expected_placements(), 40'000u);
  EXPECT_EQ(begin.metadata().worker_generation(), "gen-7");
  EXPECT_EQ(begin.metadata().model(), "llama");
  EXPECT_EQ(begin.metadata().hash_schema_version(), 2u);
  EXPECT_EQ(begin.metadata().page_size(), 16u);
  EXPECT_TRUE(begin.metadata().is_bigram());
  std::vector<int> sizes;
  for (const auto& append : rig.server.appends) {
    EXPECT_EQ(append.transaction_id(), "tx1");
    sizes.push_back(append.placements_size());
  }
  EXPECT_THAT(sizes, ElementsAre(16'384, 16'384, 7'232));
  EXPECT_THAT(rig.server.commits, ElementsAre("tx1"));
  EXPECT_TRUE(rig.server.replaces.empty());
  const FakeGatedServer::Worker* worker = rig.server.worker("w");
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->placement.size(), 40'000u);
  EXPECT_EQ(worker->worker_generation, "gen-7");
  EXPECT_EQ(*worker->checkpoint, begin.applied_seq());
  // Configure ran at the start of the synchronisation (no generation yet)
  // and again once the header named one; the Begin's epoch was reported.
  EXPECT_THAT(rig.configured, ElementsAre("", "gen-7"));
  EXPECT_THAT(rig.epochs, ElementsAre("epoch-1"));
  EXPECT_EQ(rig.engine->worker_generation(), "gen-7");

  // A live batch after the barrier is a gated apply carrying the stream
  // key and the generation; the server fences on the generation, so it
  // goes through only with it.
  const size_t applies_before = rig.server.applies.size();
  rig.publisher.Publish({PublisherOp::Store({50'001})});
  ASSERT_TRUE(rig.RunFor(500ms).ok());
  ASSERT_GT(rig.server.applies.size(), applies_before);
  const auto& apply = rig.server.applies.back();
  EXPECT_TRUE(apply.enforce_sequence());
  EXPECT_EQ(apply.worker_generation(), "gen-7");
  EXPECT_EQ(apply.stream_id().worker_id(), "w");
  EXPECT_TRUE(rig.server.Held("w").contains(50'001));
  EXPECT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.stats.state_losses, 0u);
}

// Registration applies the server received: seed-era applies with no
// actions and sequence 0.
int Registrations(const FakeGatedServer& server) {
  return static_cast<int>(std::count_if(
      server.applies.begin(), server.applies.end(), [](const auto& apply) {
        return !apply.enforce_sequence() && apply.actions_size() == 0 &&
               apply.seq() == 0;
      }));
}

// The process's Configure lists the stream, which creates its record: the
// synchronisation sends no registration apply of its own.
TEST(StagedInstall, AnAcceptedConfigureIsTheOnlyRegistration) {
  StagedRig rig;
  for (int64_t h = 1; h <= 10; ++h) rig.publisher.Hold(h);
  rig.Start();
  ASSERT_TRUE(rig.RunFor(1s).ok());
  ASSERT_TRUE(rig.engine->exact());
  EXPECT_GE(rig.server.configures, 1);
  EXPECT_EQ(Registrations(rig.server), 0);
  EXPECT_EQ(rig.server.Held("w").size(), 10u);
}

// When the indexer refuses the process's list (another entry breaks one of
// its rules), the stream registers alone: a registration refused for good
// parks only that stream. This one's registration goes through, but its
// install waits for a Configure that lists it (a line-A Begin needs a
// configured record), which comes once the bad entry's stream is parked:
// here the Configure of the next synchronisation. (The header names no
// generation, so no Configure goes out before the first Begin.)
TEST(StagedInstall, ARefusedConfigureFallsBackToARegistrationApply) {
  StagedRig rig;
  for (int64_t h = 1; h <= 10; ++h) rig.publisher.Hold(h);
  rig.source.fields.worker_generation.reset();
  rig.server.refuse_configures = 1;
  rig.Start();
  ASSERT_TRUE(rig.RunFor(2s).ok());
  ASSERT_TRUE(rig.engine->exact());
  EXPECT_EQ(rig.server.configures, 2);
  EXPECT_EQ(Registrations(rig.server), 1);
  const auto& first = rig.server.applies.front();
  EXPECT_EQ(first.stream_id().worker_id(), "w");
  EXPECT_EQ(first.worker_address(), "http://w:1");
  // The Begin before the accepted Configure was refused as unconfigured.
  EXPECT_EQ(rig.server.begins.size(), 2u);
  EXPECT_EQ(rig.stats.state_losses, 1u);
  EXPECT_EQ(rig.server.Held("w").size(), 10u);
}

// A Commit whose answer carries the eviction header (an install past the
// indexer's placement bound) is an install that came back evicted: it is
// counted as it lands, not only by the calls after it.
TEST(StagedInstall, AnEvictedCommitIsCountedAsItLands) {
  StagedRig rig;
  for (int64_t h = 1; h <= 10; ++h) rig.publisher.Hold(h);
  rig.server.evict_on_install = true;
  // Calls the indexer answered after the Commit, which also carry the
  // header once the install is in.
  bool committed = false;
  int calls_after_commit = 0;
  rig.server.fault_hook = [&](FakeGatedServer::Call call) {
    if (committed) ++calls_after_commit;
    if (call == FakeGatedServer::Call::kCommit) committed = true;
    return FakeGatedServer::Fault::kNone;
  };
  rig.Start();
  ASSERT_TRUE(rig.RunFor(1s).ok());
  ASSERT_THAT(rig.server.commits, ElementsAre("tx1"));
  EXPECT_EQ(rig.stats.evictions_reported,
            static_cast<uint64_t>(1 + calls_after_commit));
}

TEST(StagedInstall, AnEmptySnapshotIsABeginAndACommit) {
  StagedRig rig;
  rig.Start();
  ASSERT_TRUE(rig.RunFor(1s).ok());
  ASSERT_EQ(rig.server.begins.size(), 1u);
  EXPECT_EQ(rig.server.begins[0].expected_placements(), 0u);
  EXPECT_TRUE(rig.server.appends.empty());
  EXPECT_THAT(rig.server.commits, ElementsAre("tx1"));
  EXPECT_TRUE(rig.engine->exact());
}

// A header naming another stream or hashing ends the run (the supervisor
// parks the stream) with the field and both values, before any Begin.
TEST(StagedInstall, AHeaderThatDiffersFromTheEntryIsRefused) {
  struct Case {
    const char* field;
    void (*set)(SnapshotHeaderFields*);
    const char* header_value;
    const char* entry_value;
  };
  const Case cases[] = {
      {"namespace", [](SnapshotHeaderFields* f) { f->stream_namespace = "x"; },
       "'x'", "'ns'"},
      {"worker_id", [](SnapshotHeaderFields* f) { f->worker_id = "v"; }, "'v'",
       "'w'"},
      {"dp_rank", [](SnapshotHeaderFields* f) { f->dp_rank = 0; }, "0", "1"},
      {"model", [](SnapshotHeaderFields* f) { f->model = "qwen"; }, "'qwen'",
       "'llama'"},
      {"hash_schema_version",
       [](SnapshotHeaderFields* f) { f->hash_schema_version = 1; }, "1", "2"},
      {"page_size", [](SnapshotHeaderFields* f) { f->page_size = 32; }, "32",
       "16"},
      {"is_bigram", [](SnapshotHeaderFields* f) { f->is_bigram = false; },
       "false", "true"},
  };
  for (const Case& c : cases) {
    StagedRig rig;
    rig.publisher.Hold(5);
    c.set(&rig.source.fields);
    rig.Start();
    const absl::Status status = rig.RunFor(1s);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << c.field;
    EXPECT_THAT(
        status.message(),
        HasSubstr(std::string("snapshot header ") + c.field + " is " +
                  c.header_value + "; the entry says " + c.entry_value));
    EXPECT_TRUE(rig.server.begins.empty()) << c.field;
    EXPECT_TRUE(rig.server.replaces.empty()) << c.field;
    EXPECT_FALSE(rig.engine->synchronised()) << c.field;
  }
}

TEST(StagedInstall, FieldsTheHeaderLeavesOutAreNotCompared) {
  StagedRig rig;
  rig.publisher.Hold(5);
  rig.source.fields = SnapshotHeaderFields{};
  rig.Start();
  ASSERT_TRUE(rig.RunFor(1s).ok());
  EXPECT_TRUE(rig.engine->exact());
  ASSERT_EQ(rig.server.begins.size(), 1u);
  EXPECT_EQ(rig.server.begins[0].metadata().worker_generation(), "");
  EXPECT_EQ(rig.server.begins[0].metadata().model(), "llama");
  EXPECT_EQ(rig.engine->worker_generation(), "");
}

TEST(StagedInstall, AWrongTypedHeaderKeyIsRefused) {
  StagedRig rig;
  rig.source.fields.unreadable = {"page_size"};
  rig.Start();
  const absl::Status status = rig.RunFor(1s);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("page_size"));
}

TEST(StagedInstall, AFailedAppendIsAbortedAndTheInstallStartsAgain) {
  StagedRig rig;
  for (int64_t h = 1; h <= 20'000; ++h) rig.publisher.Hold(h);
  int appends = 0;
  rig.server.fault_hook = [&appends](FakeGatedServer::Call call) {
    if (call == FakeGatedServer::Call::kAppend && ++appends == 2) {
      return FakeGatedServer::Fault::kFail;
    }
    return FakeGatedServer::Fault::kNone;
  };
  rig.Start();
  ASSERT_TRUE(rig.RunFor(2s).ok());
  EXPECT_THAT(rig.server.aborts, ElementsAre("tx1"));
  ASSERT_EQ(rig.server.begins.size(), 2u);
  EXPECT_THAT(rig.server.commits, ElementsAre("tx2"));
  EXPECT_EQ(rig.server.worker("w")->placement.size(), 20'000u);
  EXPECT_TRUE(rig.engine->exact());
}

TEST(StagedInstall, APermanentAppendRefusalEndsTheRunAfterTheAbort) {
  StagedRig rig;
  rig.publisher.Hold(1);
  rig.server.fault_hook = [](FakeGatedServer::Call call) {
    return call == FakeGatedServer::Call::kAppend
               ? FakeGatedServer::Fault::kRefuse
               : FakeGatedServer::Fault::kNone;
  };
  rig.Start();
  const absl::Status status = rig.RunFor(1s);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rig.server.aborts, ElementsAre("tx1"));
  EXPECT_TRUE(rig.server.commits.empty());
}

TEST(StagedInstall, ATransientCommitFailureRetriesTheSameTransaction) {
  StagedRig rig;
  rig.publisher.Hold(3);
  bool failed = false;
  rig.server.fault_hook = [&failed](FakeGatedServer::Call call) {
    if (call == FakeGatedServer::Call::kCommit && !failed) {
      failed = true;
      return FakeGatedServer::Fault::kFail;
    }
    return FakeGatedServer::Fault::kNone;
  };
  rig.Start();
  ASSERT_TRUE(rig.RunFor(1s).ok());
  EXPECT_EQ(rig.server.begins.size(), 1u);
  // The injected failure answers before recording; the retry commits tx1.
  EXPECT_THAT(rig.server.commits, ElementsAre("tx1"));
  EXPECT_TRUE(rig.server.aborts.empty());
  EXPECT_TRUE(rig.engine->exact());
}

TEST(StagedInstall, WithoutStagedRpcsTheSnapshotIsAReplace) {
  StagedRig rig;
  rig.publisher.Hold(3);
  rig.server.staged = false;
  rig.Start();
  ASSERT_TRUE(rig.RunFor(1s).ok());
  ASSERT_EQ(rig.server.replaces.size(), 1u);
  EXPECT_EQ(rig.server.replaces[0].worker_generation(), "gen-7");
  EXPECT_EQ(rig.server.replaces[0].stream_id().worker_id(), "w");
  EXPECT_TRUE(rig.engine->exact());
}

// A new indexer epoch: the stream resynchronises after its random wait
// (random % 501 ms), then the snapshot cycle's settle (50 ms) precedes the
// fetch.
TEST(StagedInstall, AnEpochChangeResynchronisesAfterTheRandomWait) {
  for (const uint64_t random : {uint64_t{0}, uint64_t{1'400}, uint64_t{500}}) {
    StagedRig rig;
    rig.publisher.Hold(3);
    rig.random_value = random;
    rig.Start();
    ASSERT_TRUE(rig.RunFor(1s).ok());
    ASSERT_EQ(rig.source.fetch_times.size(), 1u);
    ASSERT_TRUE(rig.engine->exact());
    const std::chrono::milliseconds asked = rig.clock.Elapsed();
    rig.resync = true;
    ASSERT_TRUE(rig.RunFor(2s).ok());
    ASSERT_EQ(rig.source.fetch_times.size(), 2u) << random;
    const auto wait = std::chrono::milliseconds(random % 501);
    EXPECT_EQ(rig.source.fetch_times[1] - asked, wait + 50ms) << random;
    EXPECT_EQ(rig.server.begins.size(), 2u);
    EXPECT_TRUE(rig.engine->exact());
  }
}

}  // namespace stream_recovery_staged_test
}  // namespace kvindexer::bridge::testing
