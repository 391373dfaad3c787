// The fixture of the DurableStore tests: one server's memory (a model
// backend, an Indexer, the store) that a test "crashes" (destroys) and
// starts again on the same directory, and the state it must bring back,
// as text. Shared by durable_store_test.cc and checkpoint_builder_test.cc.
#ifndef KVINDEXER_TESTS_SUPPORT_DURABLE_STORE_FIXTURE_H_
#define KVINDEXER_TESTS_SUPPORT_DURABLE_STORE_FIXTURE_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/heartbeat_header.h"
#include "common/wire_vocabulary.h"
#include "core/indexer.h"
#include "durable/durable_store.h"
#include "gtest/gtest.h"
#include "spdlog/spdlog.h"
#include "tests/support/fake_clock.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/test_log_capture.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {

namespace fs = std::filesystem;
using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::Hashes;
using test_support::ModelBackend;
using test_support::Range;
using test_support::Snapshot;

// True when a line logged at `level` contains `part`.
inline bool Logged(const TestLogCapture& log, spdlog::level::level_enum level,
                   const std::string& part) {
  for (const std::string& line : log.Lines(level)) {
    if (line.find(part) != std::string::npos) return true;
  }
  return false;
}

// Flips one bit of the byte at `offset` of `path`.
inline void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.good()) << path;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&c, 1);
  ASSERT_TRUE(f.good()) << path;
}

// One server's memory: a backend, an Indexer over it and, once opened, the
// store attached to it (destroyed first).
struct Node {
  ModelBackend backend;
  FakeMonotonicClock clock;
  Indexer indexer{&backend, nullptr, RequestLimits{}, kBackendAbiMinor, &clock};
  std::unique_ptr<DurableStore> store;
};

inline v1::WorkerCacheSpec SwaSpec() {
  return test_support::Spec(kComponentFull | kComponentSwa, 64,
                            kServableTierMask, kTierBitHbm);
}

class DurableStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()); }

  DurableOptions Options(uint64_t checkpoint_bytes = 64ull << 20) {
    DurableOptions options;
    options.dir = dir_.path();
    options.checkpoint_bytes = checkpoint_bytes;
    return options;
  }
  absl::Status Start(DurableOptions options) {
    node_ = std::make_unique<Node>();
    options.backend = &node_->backend;
    absl::StatusOr<std::unique_ptr<DurableStore>> store =
        DurableStore::Open(options, &node_->indexer.durable_state());
    if (!store.ok()) return store.status();
    node_->store = *std::move(store);
    return absl::OkStatus();
  }
  void StartOk(const DurableOptions& options) {
    const absl::Status s = Start(options);
    ASSERT_TRUE(s.ok()) << s;
  }
  void Crash() { node_.reset(); }
  // Closes the store when the scope it is declared in ends. A test that
  // hands the store a FileIo of its own declares one right after it, so
  // that the store is gone before the object it writes through, even when a
  // failed assertion ends the test early.
  auto CloseOnExit() {
    return absl::MakeCleanup([this] { Crash(); });
  }

  Indexer& indexer() { return node_->indexer; }
  DurableStore& store() { return *node_->store; }

  // Everything the store must bring back, as text.
  std::string State() {
    std::string out;
    node_->indexer.durable_state().ExportHost(
        [&](const state::v1::CheckpointChunk& chunk) {
          absl::StrAppend(&out, chunk.ShortDebugString(), "\n");
        });
    for (const auto& [hash, block] : node_->backend.model().blocks()) {
      absl::StrAppend(&out, "block ", hash, " tokens ", block.token_count);
      for (const auto& [placement, mask] : block.placements) {
        absl::StrAppend(&out, " ", placement.first, "@", placement.second, "=",
                        mask);
      }
      absl::StrAppend(&out, "\n");
    }
    for (const auto& [id, worker] : node_->backend.model().workers()) {
      if (worker.holdings.empty()) continue;
      absl::StrAppend(
          &out, "worker ", id, " at ", worker.address, " spec ",
          worker.spec.has_value()
              ? test_support::ToWorkerCacheSpec(*worker.spec).ShortDebugString()
              : "none",
          "\n");
    }
    return out;
  }

  absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req,
                     const HeartbeatHeader& heartbeat = {}) {
    v1::ApplyExternalKvBatchResponse resp;
    return indexer()
        .operations()
        .Apply(req, &resp, {.heartbeat = heartbeat})
        .Wait();
  }
  void ApplyOk(const v1::ApplyExternalKvBatchRequest& req,
               const HeartbeatHeader& heartbeat = {}) {
    const absl::Status s = Apply(req, heartbeat);
    EXPECT_TRUE(s.ok()) << s << " for " << req.ShortDebugString();
  }
  void ReplaceOk(const v1::ReplaceExternalKvSnapshotRequest& req) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    const absl::Status s = indexer().operations().Replace(req, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s << " for " << req.ShortDebugString();
  }
  void ConfigureOk(const v1::ConfigureExpectedWorkersRequest& req) {
    v1::ConfigureExpectedWorkersResponse resp;
    const absl::Status s = indexer().operations().Configure(req, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s << " for " << req.ShortDebugString();
  }
  // The checkpoint a probe (gated, seq 0, no actions) reports.
  uint64_t Probe(const std::string& worker, const std::string& epoch) {
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s =
        indexer()
            .operations()
            .Apply(Batch(worker, "probe").Gated(epoch, 0), &resp)
            .Wait();
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_TRUE(resp.duplicate());
    return resp.applied_seq();
  }

  // Every kind of logged mutation: configure, replace, gated and seed-era
  // applies, a gap, a removal, heartbeat markers and a liveness clear.
  void Workload() {
    ConfigureOk(ExpectedWorkers()
                    .Worker("w1", "addr-1")
                    .Worker("w2", "addr-2", SwaSpec())
                    .Worker("w3", "addr-3"));
    ReplaceOk(Snapshot("w1", "addr-1")
                  .Epoch("e1")
                  .AppliedSeq(10)
                  .Tier(kTierHbm, {1, 2, 3}, {}, {16, 16, 16}));
    ApplyOk(Batch("w1", "addr-1").Gated("e1", 11).Report(kTierDram, {4, 5}));
    ApplyOk(Batch("w1", "addr-1").Gated("e1", 12).Revoke(kTierHbm, {1}));
    ReplaceOk(Snapshot("w2", "addr-2")
                  .Epoch("e2")
                  .AppliedSeq(0)
                  .Spec(SwaSpec())
                  .Tier(kTierHbm, {10, 11}, {kComponentFull, kComponentSwa}));
    ApplyOk(Batch("w2", "addr-2")
                .Spec(SwaSpec())
                .Gated("e2", 1)
                .Report(kTierHbm, {12}, {kComponentFull | kComponentSwa}));
    // A gap: w2 is cleared and stays invalid.
    EXPECT_EQ(Apply(Batch("w2", "addr-2").Gated("e2", 5).Report(kTierHbm, {13}))
                  .code(),
              absl::StatusCode::kFailedPrecondition);
    ReplaceOk(Snapshot("w3", "addr-3")
                  .Epoch("e3")
                  .AppliedSeq(4)
                  .Tier(kTierDram, {20, 21}));
    // Seed-era workers, one of them marked with a short heartbeat TTL.
    ApplyOk(Batch("s1", "addr-s1").Report(kTierHbm, {30, 31}),
            HeartbeatHeader::Valid(std::chrono::milliseconds(1000)));
    ApplyOk(Batch("s2", "addr-s2").Report(kTierHbm, {31, 32}),
            HeartbeatHeader::Valid(std::chrono::milliseconds(600000)));
    ApplyOk(Batch("s3", "addr-s3").Report(kTierHbm, {33}));
    EXPECT_TRUE(indexer()
                    .operator_view()
                    .RemoveWorker("s3", RemovalReason::kAdmin)
                    .ok());
    EXPECT_TRUE(indexer()
                    .operator_view()
                    .RemoveWorker("w3", RemovalReason::kAdmin)
                    .ok());
    // s1 expires, s2 does not: the sweep clears s1.
    node_->clock.Advance(std::chrono::seconds(5));
    const OperatorView::SweepResult sweep =
        indexer().operator_view().SweepLiveness(node_->clock.Now());
    EXPECT_EQ(sweep.cleared, 1u);
  }

  // Gated applies of w1 (after Workload) until the store has written
  // `checkpoints` checkpoints; returns the next seq.
  uint64_t ApplyUntilCheckpoints(uint64_t seq, uint64_t checkpoints) {
    for (int i = 0; i < 20000 && store().checkpoints_written() < checkpoints;
         ++i) {
      ApplyW1(seq++);
      if (i % 16 == 0) store().WaitForCheckpoints();
    }
    store().WaitForCheckpoints();
    EXPECT_GE(store().checkpoints_written(), checkpoints);
    return seq;
  }

  // `count` gated applies of w1 (after Workload) from `seq`, waiting for
  // checkpoints in progress every 16 and at the end; returns the next seq.
  uint64_t ApplyW1Batches(uint64_t seq, int count) {
    for (int i = 0; i < count; ++i) {
      ApplyW1(seq++);
      if (i % 16 == 0) store().WaitForCheckpoints();
    }
    store().WaitForCheckpoints();
    return seq;
  }
  // One gated apply of w1 at `seq`, reporting 8 hashes of its own.
  void ApplyW1(uint64_t seq) {
    ApplyOk(Batch("w1", "addr-1")
                .Gated("e1", seq)
                .Report(kTierHbm, Range(static_cast<int64_t>(1000 + seq), 8)));
  }

  // The logs and checkpoints of the directory: its files but LOCK and
  // INDEXER_EPOCH.
  std::set<std::string> Files() const {
    std::set<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_.path())) {
      const std::string name = entry.path().filename().string();
      if (name != "LOCK" && name != "INDEXER_EPOCH") out.insert(name);
    }
    return out;
  }
  std::string Path(const std::string& name) const {
    return (fs::path(dir_.path()) / name).string();
  }

  TestTempDir dir_;
  std::unique_ptr<Node> node_;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_TESTS_SUPPORT_DURABLE_STORE_FIXTURE_H_
