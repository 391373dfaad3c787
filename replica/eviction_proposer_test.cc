// The index-wide placement bound on replicas (replica/eviction_proposer.h):
// replicas never evict index-wide on their own, one proposal goes into the
// log for the fleet, and every replica applies it at its position, the
// same tiers everywhere, also where a replica has cleared a worker the
// others still hold. Proposals are fenced, retried and held back as the
// header says. Records under kEvictionLogKey that are malformed or misfiled
// change nothing.
#include "replica/eviction_proposer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/indexer.h"
#include "core/request_limits.h"
#include "fleet/memory_event_log.h"
#include "gtest/gtest.h"
#include "kvindexer_fleet.pb.h"
#include "replica/record_applier.h"
#include "replica/snapshot_image.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::replica {
namespace eviction_proposer_test {

using test_support::Batch;
using test_support::Hashes;
using test_support::ModelBackend;
using Counts = std::array<uint64_t, kMaxTier + 1>;

constexpr uint64_t kBound = 30;

// `count` consecutive hashes from `first`.
Hashes Consecutive(int64_t first, int count) {
  Hashes out;
  for (int i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

RequestLimits FromLog(uint64_t max_placements, uint64_t max_per_worker = 0) {
  RequestLimits limits;
  limits.placement_bound = {.max_placements = max_placements,
                            .max_per_worker = max_per_worker,
                            .index_bound_from_log = true};
  return limits;
}

// A log whose LastPositionOf answers a fixed, stale position when told to,
// and whose Append can lose its acknowledgement (the record is appended,
// the caller hears UNAVAILABLE): the two races the proposer must survive.
class ScriptedLog final : public fleet::EventLog {
 public:
  absl::StatusOr<fleet::AppendAck> Append(
      std::string_view worker_id, std::string_view payload,
      std::string_view dedup_id,
      std::optional<uint64_t> expected_last) override {
    absl::StatusOr<fleet::AppendAck> ack =
        log_.Append(worker_id, payload, dedup_id, expected_last);
    if (lose_next_ack && ack.ok()) {
      lose_next_ack = false;
      return absl::UnavailableError("the acknowledgement was lost");
    }
    return ack;
  }
  absl::StatusOr<uint64_t> LastPositionOf(std::string_view worker_id) override {
    if (stale_last_once.has_value()) {
      const uint64_t stale = *stale_last_once;
      stale_last_once.reset();
      return stale;
    }
    if (stale_last.has_value()) return *stale_last;
    return log_.LastPositionOf(worker_id);
  }
  absl::StatusOr<std::vector<fleet::LoggedRecord>> Read(
      uint64_t from, size_t max_records,
      std::chrono::milliseconds wait) override {
    return log_.Read(from, max_records, wait);
  }
  absl::StatusOr<fleet::LogBounds> Bounds() override { return log_.Bounds(); }
  absl::Status TrimBefore(uint64_t position) override {
    return log_.TrimBefore(position);
  }
  size_t max_payload_bytes() const override {
    return max_payload.value_or(log_.max_payload_bytes());
  }

  bool lose_next_ack = false;
  // Answered by LastPositionOf while set; stale_last_once only once.
  std::optional<uint64_t> stale_last;
  std::optional<uint64_t> stale_last_once;
  // What max_payload_bytes() tells the proposer (the log itself takes more).
  std::optional<size_t> max_payload;

 private:
  fleet::MemoryEventLog log_;
};

// One replica: an Indexer fed from the log by hand, and its proposer.
struct Replica {
  explicit Replica(fleet::EventLog& log, std::string name,
                   const RequestLimits& limits = FromLog(kBound))
      : indexer(&backend, nullptr, limits),
        proposer(log, indexer.operator_view(), std::move(name)) {}

  // Applies every record after `applied`; false when one was not applied.
  bool Follow(fleet::EventLog& log) {
    absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
        log.Read(applied + 1, 1000, std::chrono::milliseconds(0));
    if (!records.ok()) return false;
    bool all = true;
    for (const fleet::LoggedRecord& record : *records) {
      const std::optional<RecordResult> result =
          ApplyLogRecordAfter(indexer, &applied, record);
      if (result.has_value() && result->outcome != RecordOutcome::kApplied) {
        ADD_FAILURE() << "position " << record.position << ": "
                      << result->status;
        all = false;
      }
    }
    return all;
  }

  Counts CountsOf(const std::string& id) {
    return indexer.operator_view().PlacementCounts(id).value_or(Counts{});
  }
  bool Evicted(const std::string& id) {
    const std::optional<WorkerRecord> record =
        indexer.operator_view().WorkerState(id);
    return record.has_value() && record->evicted;
  }
  EvictionStats Stats() { return indexer.operator_view().eviction_stats(); }
  uint64_t IndexClears() {
    return Stats().tiers[static_cast<size_t>(EvictionReason::kIndexBound)];
  }

  ModelBackend backend;
  Indexer indexer;
  EvictionProposer proposer;
  uint64_t applied = 0;
};

void AppendApply(fleet::EventLog& log,
                 const ::kv_indexer::v1::ApplyExternalKvBatchRequest& req) {
  ::kvindexer::fleet::v1::LogRecord record;
  *record.mutable_apply() = req;
  record.set_producer("bridge");
  const absl::StatusOr<fleet::AppendAck> ack =
      log.Append(req.worker_id(), record.SerializeAsString(), "", std::nullopt);
  ASSERT_TRUE(ack.ok()) << ack.status();
}

// w1: 10 placements at each tier; w2: 10 at HBM; w3: 2 at HBM. 42 in all,
// over a bound of 30 whose fair share is 10: w1 loses SSD, then DRAM.
void Feed(fleet::EventLog& log) {
  AppendApply(log, Batch("w1", "10.0.0.1:1")
                       .Report(kTierHbm, Consecutive(100, 10))
                       .Report(kTierDram, Consecutive(200, 10))
                       .Report(kTierSsd, Consecutive(300, 10)));
  AppendApply(log,
              Batch("w2", "10.0.0.2:1").Report(kTierHbm, Consecutive(400, 10)));
  AppendApply(log,
              Batch("w3", "10.0.0.3:1").Report(kTierHbm, Consecutive(500, 2)));
}

std::vector<fleet::LoggedRecord> EvictionRecords(fleet::EventLog& log) {
  std::vector<fleet::LoggedRecord> out;
  absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
      log.Read(1, 1000, std::chrono::milliseconds(0));
  EXPECT_TRUE(records.ok()) << records.status();
  if (!records.ok()) return out;
  for (fleet::LoggedRecord& record : *records) {
    if (record.worker_id == fleet::kEvictionLogKey) {
      out.push_back(std::move(record));
    }
  }
  return out;
}

TEST(EvictionProposerTest, OneProposalEvictsTheSameTiersOnEveryReplica) {
  fleet::MemoryEventLog log;
  Replica a(log, "a");
  Replica b(log, "b");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  ASSERT_TRUE(b.Follow(log));
  // Over the bound, and neither evicted index-wide on its own.
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 10, 10}));
  EXPECT_EQ(a.IndexClears(), 0u);
  EXPECT_EQ(b.IndexClears(), 0u);

  a.proposer.AfterPass(a.applied, /*caught_up=*/true);
  // b has not read a's proposal: it waits for it instead of racing it.
  b.proposer.AfterPass(b.applied, /*caught_up=*/true);
  EXPECT_EQ(a.proposer.counts().appended, 1u);
  EXPECT_EQ(b.proposer.counts().appended, 0u);
  EXPECT_EQ(b.proposer.counts().fenced, 0u);
  ASSERT_EQ(EvictionRecords(log).size(), 1u);

  ASSERT_TRUE(a.Follow(log));
  ASSERT_TRUE(b.Follow(log));
  for (Replica* r : {&a, &b}) {
    EXPECT_EQ(r->CountsOf("w1"), (Counts{0, 10, 0, 0}));
    EXPECT_EQ(r->CountsOf("w2"), (Counts{0, 10, 0, 0}));
    EXPECT_EQ(r->CountsOf("w3"), (Counts{0, 2, 0, 0}));
    EXPECT_TRUE(r->Evicted("w1"));
    EXPECT_FALSE(r->Evicted("w2"));
    EXPECT_FALSE(r->Evicted("w3"));
    EXPECT_EQ(r->IndexClears(), 2u);
    EXPECT_EQ(
        r->Stats().placements[static_cast<size_t>(EvictionReason::kIndexBound)],
        20u);
  }
  // Within the bound now: nobody proposes again.
  a.proposer.AfterPass(a.applied, true);
  b.proposer.AfterPass(b.applied, true);
  EXPECT_EQ(EvictionRecords(log).size(), 1u);
}

TEST(EvictionProposerTest, AReplicaThatClearedAWorkerAppliesTheSameRecord) {
  fleet::MemoryEventLog log;
  Replica a(log, "a");
  Replica b(log, "b");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  ASSERT_TRUE(b.Follow(log));
  // b's own liveness sweep cleared w1: b is within the bound and proposes
  // nothing; a is over it and proposes.
  ASSERT_TRUE(b.indexer.operator_view()
                  .RemoveWorker("w1", RemovalReason::kLiveness)
                  .ok());
  b.proposer.AfterPass(b.applied, true);
  EXPECT_TRUE(EvictionRecords(log).empty());
  a.proposer.AfterPass(a.applied, true);
  ASSERT_EQ(EvictionRecords(log).size(), 1u);
  ASSERT_TRUE(a.Follow(log));
  ASSERT_TRUE(b.Follow(log));
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 0, 0}));
  // Nothing to evict on b: no clear counted, no record made.
  EXPECT_FALSE(b.indexer.operator_view().WorkerState("w1").has_value());
  EXPECT_EQ(b.IndexClears(), 0u);
  for (const char* id : {"w2", "w3"}) {
    EXPECT_EQ(a.CountsOf(id), b.CountsOf(id)) << id;
  }
}

TEST(EvictionProposerTest, OnlyACaughtUpReplicaProposes) {
  fleet::MemoryEventLog log;
  Replica a(log, "a");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  a.proposer.AfterPass(a.applied, /*caught_up=*/false);
  EXPECT_TRUE(EvictionRecords(log).empty());
  a.proposer.AfterPass(a.applied, true);
  EXPECT_EQ(EvictionRecords(log).size(), 1u);
}

TEST(EvictionProposerTest, ARaceIsLostToTheFenceAndPlannedAgainAfter) {
  ScriptedLog log;
  Replica a(log, "a");
  Replica b(log, "b");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  ASSERT_TRUE(b.Follow(log));
  a.proposer.AfterPass(a.applied, true);
  ASSERT_EQ(EvictionRecords(log).size(), 1u);
  // b read the last proposal's position before a's append landed.
  log.stale_last = 0;
  b.proposer.AfterPass(b.applied, true);
  log.stale_last.reset();
  EXPECT_EQ(b.proposer.counts().fenced, 1u);
  EXPECT_EQ(EvictionRecords(log).size(), 1u);
  ASSERT_TRUE(b.Follow(log));
  ASSERT_TRUE(a.Follow(log));
  EXPECT_EQ(a.CountsOf("w1"), b.CountsOf("w1"));
  // More growth: b, caught up with a's proposal, proposes the next one.
  AppendApply(
      log, Batch("w2", "10.0.0.2:1").Report(kTierDram, Consecutive(600, 20)));
  ASSERT_TRUE(a.Follow(log));
  ASSERT_TRUE(b.Follow(log));
  b.proposer.AfterPass(b.applied, true);
  EXPECT_EQ(b.proposer.counts().appended, 1u);
  ASSERT_TRUE(a.Follow(log));
  ASSERT_TRUE(b.Follow(log));
  EXPECT_EQ(a.CountsOf("w2"), (Counts{0, 10, 0, 0}));
  EXPECT_EQ(b.CountsOf("w2"), (Counts{0, 10, 0, 0}));
}

TEST(EvictionProposerTest, ALostAcknowledgementLeavesOneRecord) {
  ScriptedLog log;
  Replica a(log, "a");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  log.lose_next_ack = true;
  a.proposer.AfterPass(a.applied, true);
  EXPECT_EQ(a.proposer.counts().failed, 1u);
  // Looked at again on the next pass, nothing applied in between: the
  // record in the log is found and awaited, not appended twice.
  a.proposer.AfterPass(a.applied, true);
  EXPECT_EQ(EvictionRecords(log).size(), 1u);
  ASSERT_TRUE(a.Follow(log));
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 0, 0}));
}

TEST(EvictionProposerTest, TheWorkerBoundStaysLocal) {
  fleet::MemoryEventLog log;
  Replica a(log, "a", FromLog(1000, 15));
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  // w1 (30) over its own bound of 15: SSD and DRAM go where it is applied.
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 0, 0}));
  EXPECT_EQ(a.Stats().tiers[static_cast<size_t>(EvictionReason::kWorkerBound)],
            2u);
  a.proposer.AfterPass(a.applied, true);
  EXPECT_TRUE(EvictionRecords(log).empty());
}

TEST(EvictionProposerTest, MalformedOrMisfiledEvictionsChangeNothing) {
  fleet::MemoryEventLog log;
  Replica a(log, "a");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  ::kvindexer::fleet::v1::LogRecord record;
  ::kvindexer::fleet::v1::PlacementEvictions* body =
      record.mutable_placement_evictions();
  ::kvindexer::state::v1::PlacementEviction* good = body->add_evictions();
  good->set_worker_id("w1");
  good->set_tier(kTierSsd);
  good->set_reason(static_cast<uint32_t>(EvictionReason::kIndexBound));
  ::kvindexer::state::v1::PlacementEviction* bad = body->add_evictions();
  bad->set_worker_id("w2");
  bad->set_tier(9);
  bad->set_reason(static_cast<uint32_t>(EvictionReason::kIndexBound));
  uint64_t applied = a.applied;
  const std::optional<RecordResult> malformed = ApplyLogRecordAfter(
      a.indexer, &applied,
      fleet::LoggedRecord{applied + 1, std::string(fleet::kEvictionLogKey),
                          record.SerializeAsString()});
  ASSERT_TRUE(malformed.has_value());
  EXPECT_EQ(malformed->outcome, RecordOutcome::kUndecodable);
  body->mutable_evictions()->RemoveLast();
  const RecordResult misfiled = ApplyLogRecord(
      a.indexer,
      fleet::LoggedRecord{applied + 1, "w1", record.SerializeAsString()});
  EXPECT_EQ(misfiled.outcome, RecordOutcome::kUndecodable);
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 10, 10}));
  EXPECT_FALSE(a.Evicted("w1"));
  // Filed where it belongs, the good eviction alone applies.
  const RecordResult applied_ok = ApplyLogRecord(
      a.indexer,
      fleet::LoggedRecord{applied + 1, std::string(fleet::kEvictionLogKey),
                          record.SerializeAsString()});
  EXPECT_EQ(applied_ok.outcome, RecordOutcome::kApplied) << applied_ok.status;
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 10, 0}));
  EXPECT_TRUE(a.Evicted("w1"));
}

TEST(EvictionProposerTest, AStreamWithinTheShareWhereTheRecordLiesKeepsAll) {
  fleet::MemoryEventLog log;
  Replica a(log, "a");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  // Before the proposal lands, w1 revokes its DRAM and SSD placements: at
  // the record's position it holds its share (10) and loses nothing.
  AppendApply(log, Batch("w1", "10.0.0.1:1")
                       .Revoke(kTierDram, Consecutive(200, 10))
                       .Revoke(kTierSsd, Consecutive(300, 10)));
  a.proposer.AfterPass(a.applied, true);
  ASSERT_EQ(EvictionRecords(log).size(), 1u);
  ASSERT_TRUE(a.Follow(log));
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 0, 0}));
  EXPECT_FALSE(a.Evicted("w1"));
  EXPECT_EQ(a.IndexClears(), 0u);
}

TEST(EvictionProposerTest, APlanTooLargeForOneRecordIsProposedInParts) {
  ScriptedLog log;
  Replica a(log, "a");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  // Room for the record and one eviction, not two.
  log.max_payload = 40;
  a.proposer.AfterPass(a.applied, true);
  std::vector<fleet::LoggedRecord> records = EvictionRecords(log);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_LE(records[0].payload.size(), 40u);
  ASSERT_TRUE(a.Follow(log));
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 10, 0}));
  a.proposer.AfterPass(a.applied, true);
  ASSERT_EQ(EvictionRecords(log).size(), 2u);
  ASSERT_TRUE(a.Follow(log));
  EXPECT_EQ(a.CountsOf("w1"), (Counts{0, 10, 0, 0}));
  // Not even one fits: nothing is appended, and the failure is counted.
  AppendApply(
      log, Batch("w2", "10.0.0.2:1").Report(kTierDram, Consecutive(600, 20)));
  ASSERT_TRUE(a.Follow(log));
  log.max_payload = 10;
  a.proposer.AfterPass(a.applied, true);
  EXPECT_EQ(EvictionRecords(log).size(), 2u);
  EXPECT_EQ(a.proposer.counts().failed, 1u);
}

TEST(EvictionProposerTest, AFenceLostToATrimIsTriedAgain) {
  ScriptedLog log;
  Replica a(log, "a");
  Feed(log);
  ASSERT_TRUE(a.Follow(log));
  // The proposer read a last proposal at 2 that a trim has since removed:
  // the fence fails with no winner to wait for.
  log.stale_last_once = 2;
  a.proposer.AfterPass(a.applied, true);
  EXPECT_EQ(a.proposer.counts().fenced, 1u);
  EXPECT_TRUE(EvictionRecords(log).empty());
  a.proposer.AfterPass(a.applied, true);
  EXPECT_EQ(a.proposer.counts().appended, 1u);
  EXPECT_EQ(EvictionRecords(log).size(), 1u);
}

// Exported images, serialised part after part.
std::string ExportOf(SnapshotImage& image) {
  std::string out;
  const absl::Status s =
      image.Export(1 << 20, [&](std::string_view part, uint64_t /*chunks*/) {
        out.append(part);
        return absl::OkStatus();
      });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(EvictionProposerTest, ASnapshotImageEvictsIndexWideOnlyFromTheLog) {
  fleet::MemoryEventLog log;
  Feed(log);
  // Limits as a caller that forgot the flag would give them, and none.
  RequestLimits bounded;
  bounded.placement_bound.max_placements = kBound;
  SnapshotImage image(bounded);
  SnapshotImage unbounded{RequestLimits{}};
  Replica a(log, "a");
  ASSERT_TRUE(a.Follow(log));
  a.proposer.AfterPass(a.applied, true);
  absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
      log.Read(1, 1000, std::chrono::milliseconds(0));
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 4u);
  std::string before;
  for (const fleet::LoggedRecord& record : *records) {
    if (record.worker_id == fleet::kEvictionLogKey) {
      before = ExportOf(image);
      EXPECT_EQ(before, ExportOf(unbounded));
    }
    for (SnapshotImage* i : {&image, &unbounded}) {
      const std::optional<RecordResult> result = i->Apply(record);
      ASSERT_TRUE(result.has_value());
      EXPECT_EQ(result->outcome, RecordOutcome::kApplied) << result->status;
    }
  }
  const std::string after = ExportOf(image);
  EXPECT_EQ(after, ExportOf(unbounded));
  EXPECT_NE(after, before);
}

}  // namespace eviction_proposer_test
}  // namespace kvindexer::replica
