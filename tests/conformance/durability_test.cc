// Restart-safe state through each backend (docs/durability.md): a data
// directory written while one instance of the plugin served, then recovered
// into a new instance of the same plugin, must answer as the first did.
// Durability lives in the host, so what varies per backend is how the
// recovered placements are installed and read back.
//
// A "crash" here destroys the store, the Indexer and the backend instance
// in process; the server's SIGKILL tests live with the end-to-end tests.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "conformance_fixture.h"
#include "durable/data_dir.h"
#include "durable/durable_store.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::conformance {
namespace {

namespace fs = std::filesystem;
using test_support::ExpectedWorkers;
using test_support::Snapshot;

class DurabilityTest : public ConformanceTest {
 protected:
  // One server's memory: an instance of the plugin under test, an Indexer
  // over it and the store attached to the Indexer (destroyed first).
  struct Server {
    std::unique_ptr<BackendInstance> instance;
    std::unique_ptr<Indexer> indexer;
    std::unique_ptr<durable::DurableStore> store;
  };

  void SetUp() override {
    ConformanceTest::SetUp();
    ASSERT_FALSE(dir_.path().empty());
  }

  // Opens the data directory into a new instance of the plugin.
  void Start(uint64_t checkpoint_bytes = 64ull << 20) {
    server_ = std::make_unique<Server>();
    server_->instance = std::make_unique<BackendInstance>(descriptor());
    ASSERT_NE(server_->instance->get(), nullptr)
        << "create() failed: " << server_->instance->error();
    server_->indexer = std::make_unique<Indexer>(server_->instance->get(),
                                                 /*gate_log=*/nullptr,
                                                 RequestLimits{}, abi_minor());
    durable::DurableOptions options;
    options.dir = dir_.path();
    options.checkpoint_bytes = checkpoint_bytes;
    options.backend = server_->instance->get();
    options.backend_abi_minor = abi_minor();
    absl::StatusOr<std::unique_ptr<durable::DurableStore>> store =
        durable::DurableStore::Open(options,
                                    &server_->indexer->durable_state());
    ASSERT_TRUE(store.ok()) << store.status();
    server_->store = *std::move(store);
  }
  void Crash() {
    if (server_ == nullptr) return;
    server_->store.reset();
    server_->indexer.reset();
    server_->instance.reset();
    server_.reset();
  }
  void TearDown() override {
    Crash();
    ConformanceTest::TearDown();
  }

  Indexer& served() { return *server_->indexer; }
  durable::DurableStore& store() { return *server_->store; }

  v1::ApplyExternalKvBatchResponse ApplyAck(
      const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s = served().operations().Apply(req, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s << " for " << Text(req);
    return resp;
  }
  absl::Status ApplyStatus(const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    return served().operations().Apply(req, &resp).Wait();
  }
  void ReplaceOk(const v1::ReplaceExternalKvSnapshotRequest& req) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    const absl::Status s = served().operations().Replace(req, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s << " for " << Text(req);
  }
  void ConfigureOk(const v1::ConfigureExpectedWorkersRequest& req) {
    v1::ConfigureExpectedWorkersResponse resp;
    const absl::Status s = served().operations().Configure(req, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s << " for " << Text(req);
  }
  // The checkpoint a probe (gated, seq 0, no actions) reports.
  uint64_t Probe(const std::string& worker, const std::string& epoch) {
    const v1::ApplyExternalKvBatchResponse resp =
        ApplyAck(Batch(worker, "probe-address").Gated(epoch, 0));
    EXPECT_TRUE(resp.duplicate());
    return resp.applied_seq();
  }

  // The served answers over the universe, canonical: a non-counting match
  // and prefix queries from several starting points (hit counts are not
  // durable).
  std::string Answers() {
    const v1::MatchExternalKvRequest match_req = MatchRequest(universe_);
    v1::MatchExternalKvResponse match;
    EXPECT_TRUE(served().operations().Match(match_req, &match).ok());
    CanonicalizeMatch(match_req, &match);
    std::string out = absl::StrCat("match ", Text(match));
    for (size_t start = 0; start < universe_.size(); start += 7) {
      const v1::MatchExternalKvPrefixRequest req = PrefixRequest(Hashes(
          universe_.begin() + static_cast<ptrdiff_t>(start), universe_.end()));
      v1::MatchExternalKvPrefixResponse prefix;
      EXPECT_TRUE(MatchPrefix(served().operations(), req, &prefix).ok());
      CanonicalizePrefix(&prefix);
      absl::StrAppend(&out, "\nprefix@", start, " ", Text(prefix));
    }
    return out;
  }

  // Gated applies of `worker` from `first` to `last`, each one reporting,
  // revoking or moving blocks over the universe; returns the last seq
  // acknowledged.
  uint64_t Stream(const std::string& worker, const std::string& address,
                  const std::string& epoch, uint64_t first, uint64_t last) {
    uint64_t acked = 0;
    for (uint64_t seq = first; seq <= last; ++seq) {
      const int64_t h = static_cast<int64_t>(seq % universe_.size());
      Batch batch(worker, address);
      batch.Gated(epoch, seq);
      switch (seq % 4) {
        case 0:
          batch.Report(kTierHbm, {h, h + 1}, {}, {16, 16});
          break;
        case 1:
          batch.Report(kTierDram, {h}, {kComponentFull});
          break;
        case 2:
          batch.Revoke(kTierHbm, {h - 2});
          break;
        default:
          batch.Report(kTierSsd, {h}).Revoke(kTierDram, {h - 3});
          break;
      }
      const v1::ApplyExternalKvBatchResponse resp = ApplyAck(batch);
      if (!resp.duplicate()) acked = resp.applied_seq();
    }
    return acked;
  }

  durable::TestTempDir dir_;
  std::unique_ptr<Server> server_;
  Hashes universe_ = Range(0, 48);
};
KVINDEXER_INSTANTIATE_CONFORMANCE(DurabilityTest);

// Acknowledged gated applies, across log rotations and checkpoints, come
// back into a new instance; the gate goes on where it stood.
TEST_P(DurabilityTest, AcknowledgedAppliesSurviveARestart) {
  Start(/*checkpoint_bytes=*/4096);
  ConfigureOk(ExpectedWorkers()
                  .Worker("w1", "addr-1")
                  .Worker("w2", "addr-2")
                  .Worker("w3", "addr-3"));
  ReplaceOk(Snapshot("w1", "addr-1")
                .Epoch("e1")
                .AppliedSeq(0)
                .Tier(kTierHbm, Range(0, 8), {}, Masks(8, 16)));
  ReplaceOk(Snapshot("w2", "addr-2")
                .Epoch("e2")
                .AppliedSeq(100)
                .Tier(kTierDram, Range(20, 4)));
  ReplaceOk(Snapshot("w3", "addr-3")
                .Epoch("e3")
                .AppliedSeq(7)
                .Tier(kTierHbm, Range(30, 4)));
  const uint64_t acked = Stream("w1", "addr-1", "e1", 1, 160);
  ASSERT_EQ(acked, 160u);
  ApplyAck(Batch("w2", "addr-2").Gated("e2", 101).Report(kTierHbm, {21}));
  // A gap before the crash: w2 is cleared and must stay so.
  EXPECT_EQ(ApplyStatus(Batch("w2", "addr-2").Gated("e2", 105)).code(),
            absl::StatusCode::kFailedPrecondition);
  // A scale-in before the crash: w3 goes.
  ConfigureOk(ExpectedWorkers().Worker("w1", "addr-1").Worker("w2", "addr-2"));
  store().WaitForCheckpoints();
  EXPECT_GE(store().checkpoints_written(), 1u);
  const std::string before = Answers();
  Crash();

  Start(4096);
  EXPECT_GE(store().recovery().checkpoint_generation, 2u);
  EXPECT_EQ(Answers(), before);
  EXPECT_EQ(Probe("w1", "e1"), acked);
  EXPECT_FALSE(served()
                   .operator_view()
                   .WorkerState("w2")
                   .value_or(WorkerRecord{})
                   .ready);
  EXPECT_FALSE(served().operator_view().WorkerState("w3").has_value());

  // Gate continuity: the next seq is accepted, a repeat is a duplicate, a
  // gap still invalidates.
  const Batch next =
      Batch("w1", "addr-1").Gated("e1", acked + 1).Report(kTierHbm, {40});
  EXPECT_FALSE(ApplyAck(next).duplicate());
  EXPECT_TRUE(ApplyAck(next).duplicate());
  EXPECT_EQ(ApplyStatus(Batch("w1", "addr-1").Gated("e1", acked + 3)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(served()
                   .operator_view()
                   .WorkerState("w1")
                   .value_or(WorkerRecord{})
                   .ready);

  // And all of that survives the next restart too.
  const std::string after = Answers();
  Crash();
  Start(4096);
  EXPECT_EQ(Answers(), after);
}

// A log cut inside its last record recovers the state before that record.
TEST_P(DurabilityTest, TornTailRecoversTheIntactPrefix) {
  Start();
  ConfigureOk(ExpectedWorkers().Worker("w1", "addr-1"));
  ReplaceOk(Snapshot("w1", "addr-1")
                .Epoch("e1")
                .AppliedSeq(0)
                .Tier(kTierHbm, Range(0, 4)));
  const uint64_t acked = Stream("w1", "addr-1", "e1", 1, 20);
  const std::string before = Answers();
  const std::string wal =
      (fs::path(dir_.path()) / durable::WalFileName(1)).string();
  const uint64_t size_before = fs::file_size(wal);
  ApplyAck(
      Batch("w1", "addr-1").Gated("e1", acked + 1).Report(kTierDram, {44, 45}));
  const uint64_t size_after = fs::file_size(wal);
  ASSERT_GT(size_after, size_before);
  Crash();

  fs::resize_file(wal, size_after - 1);
  Start();
  EXPECT_TRUE(store().recovery().torn_tail);
  EXPECT_EQ(fs::file_size(wal), size_before);
  EXPECT_EQ(Answers(), before);
  EXPECT_EQ(Probe("w1", "e1"), acked);
}

// Removals and self-registered workers: the backend side of a removal is
// RemoveWorker from ABI 1.1, a clear before it; either way the recovered
// instance holds what the first held.
TEST_P(DurabilityTest, RemovalsAndSeedWorkersSurviveARestart) {
  Start();
  ApplyAck(Batch("s1", "addr-s1").Report(kTierHbm, Range(0, 6)));
  ApplyAck(Batch("s2", "addr-s2")
               .Spec(Spec(kComponentFull, 0, kServableTierMask))
               .Report(kTierDram, Range(3, 6), {}, Masks(6, 32)));
  ApplyAck(Batch("s3", "addr-s3").Report(kTierHbm, Range(10, 3)));
  EXPECT_TRUE(
      served().operator_view().RemoveWorker("s3", RemovalReason::kAdmin).ok());
  const std::string before = Answers();
  Crash();

  Start();
  EXPECT_EQ(Answers(), before);
  EXPECT_FALSE(served().operator_view().WorkerState("s3").has_value());
  EXPECT_TRUE(served().operator_view().WorkerState("s2").has_value());
}

}  // namespace
}  // namespace kvindexer::conformance
