#include "core/sequence_gate.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <vector>

namespace kvindexer {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

WorkerRecord Sequenced(std::string epoch, uint64_t checkpoint) {
  WorkerRecord record;
  record.ready = true;
  record.checkpoint = SequenceCheckpoint{std::move(epoch), checkpoint};
  return record;
}

TEST(DecideGate, NoRecordIsG1) {
  EXPECT_EQ(DecideGate(nullptr, "e", 1).step, GateStep::kUnconfigured);
}

TEST(DecideGate, NotReadyOrOtherEpochIsG2) {
  WorkerRecord invalid;  // not ready, no checkpoint
  EXPECT_EQ(DecideGate(&invalid, "", 0).step, GateStep::kNotReady);
  WorkerRecord unsequenced;
  unsequenced.ready = true;
  EXPECT_EQ(DecideGate(&unsequenced, "", 0).step, GateStep::kNotReady);
  const WorkerRecord e = Sequenced("e", 3);
  EXPECT_EQ(DecideGate(&e, "f", 4).step, GateStep::kNotReady);
  EXPECT_EQ(DecideGate(&e, "", 4).step, GateStep::kNotReady);
  EXPECT_EQ(DecideGate(&e, "E", 4).step, GateStep::kNotReady);
  EXPECT_EQ(DecideGate(&e, std::string("e\0", 2), 4).step, GateStep::kNotReady);
  // G2 wins over a duplicate or a gap.
  EXPECT_EQ(DecideGate(&e, "f", 0).step, GateStep::kNotReady);
  EXPECT_EQ(DecideGate(&e, "f", 9).step, GateStep::kNotReady);
  // A checkpoint whose worker is not ready cannot exist, but would be G2.
  WorkerRecord odd = Sequenced("e", 3);
  odd.ready = false;
  EXPECT_EQ(DecideGate(&odd, "e", 4).step, GateStep::kNotReady);
}

TEST(DecideGate, EmptyEpochMatchesAnInstalledEmptyEpoch) {
  const WorkerRecord empty = Sequenced("", 0);
  EXPECT_EQ(DecideGate(&empty, "", 1).step, GateStep::kAccept);
}

TEST(DecideGate, AtOrBelowTheCheckpointIsG3) {
  const WorkerRecord e = Sequenced("e", 3);
  for (uint64_t seq : {0, 1, 3}) {
    const GateDecision d = DecideGate(&e, "e", seq);
    EXPECT_EQ(d.step, GateStep::kDuplicate) << seq;
    EXPECT_EQ(d.checkpoint, 3u);
  }
}

TEST(DecideGate, AnythingButTheNextIsG4) {
  const WorkerRecord e = Sequenced("e", 3);
  for (uint64_t seq : {uint64_t{5}, uint64_t{100}, kMax}) {
    const GateDecision d = DecideGate(&e, "e", seq);
    EXPECT_EQ(d.step, GateStep::kGap) << seq;
    EXPECT_EQ(d.expected, 4u);
  }
}

TEST(DecideGate, TheNextIsG5) {
  const WorkerRecord e = Sequenced("e", 3);
  const GateDecision d = DecideGate(&e, "e", 4);
  EXPECT_EQ(d.step, GateStep::kAccept);
  EXPECT_EQ(d.expected, 4u);
}

TEST(DecideGate, CheckpointPlusOneSaturates) {
  EXPECT_EQ(SaturatingNext(kMax - 1), kMax);
  EXPECT_EQ(SaturatingNext(kMax), kMax);
  const WorkerRecord top = Sequenced("e", kMax);
  for (uint64_t seq : {uint64_t{0}, kMax - 1, kMax}) {
    EXPECT_EQ(DecideGate(&top, "e", seq).step, GateStep::kDuplicate) << seq;
  }
  const WorkerRecord below = Sequenced("e", kMax - 1);
  EXPECT_EQ(DecideGate(&below, "e", kMax).step, GateStep::kAccept);
}

TEST(GateRefusal, CodesAndMessages) {
  const absl::Status g1 = GateRefusal({GateStep::kUnconfigured}, 1);
  EXPECT_EQ(g1.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(g1.message()),
            "stream must be configured before recovery-aware apply");
  const absl::Status g2 = GateRefusal({GateStep::kNotReady}, 1);
  EXPECT_EQ(g2.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(g2.message()),
            "stream has no READY snapshot for this generation and epoch");
  const absl::Status g4 = GateRefusal({GateStep::kGap, 3, 4}, 5);
  EXPECT_EQ(g4.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(std::string(g4.message()), "event sequence gap: expected 4, got 5");
}

TEST(WorkerRecord, DerivedStates) {
  WorkerRecord record;
  EXPECT_EQ(record.state(), SequenceState::kInvalid);
  record.ready = true;
  EXPECT_EQ(record.state(), SequenceState::kUnsequenced);
  record.checkpoint = SequenceCheckpoint{"e", 1};
  EXPECT_EQ(record.state(), SequenceState::kSequenced);
}

TEST(WorkerSequenceTable, FindAddEraseAndCount) {
  WorkerSequenceTable table;
  EXPECT_EQ(table.Find("w"), nullptr);
  bool created = false;
  WorkerRecord& w = table.FindOrAdd("w", &created);
  EXPECT_TRUE(created);
  EXPECT_FALSE(w.ready);
  w.ready = true;
  EXPECT_EQ(&table.FindOrAdd("w", &created), &w);
  EXPECT_FALSE(created);
  table.FindOrAdd("v");
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.ready_count(), 1u);
  EXPECT_TRUE(table.Erase("w"));
  EXPECT_FALSE(table.Erase("w"));
  EXPECT_EQ(table.WorkerIds(), std::vector<std::string>{"v"});
}

// A refused gated apply reads the record (and records its claim) without
// changing it: nothing is noted, so nothing is published again.
TEST(WorkerSequenceTable, OnlyAChangedRecordIsNoted) {
  using Ids = std::vector<std::string>;
  WorkerSequenceTable table;
  table.FindOrAdd("w");
  EXPECT_EQ(table.TakeChanged(), Ids{"w"});

  const WorkerRecord* found = table.Find("w");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(DecideGate(found, "e", 1).step, GateStep::kNotReady);
  EXPECT_EQ(DecideGate(table.Find("x"), "e", 1).step, GateStep::kUnconfigured);
  EXPECT_TRUE(table.Contains("w"));
  EXPECT_FALSE(table.Contains("x"));
  ASSERT_NE(table.FindClaims("w"), nullptr);
  (void)table.FindClaims("w")->Observe(WorkerClaim{"peer", "addr", "e"},
                                       std::chrono::steady_clock::now());
  EXPECT_EQ(table.FindClaims("w")->runs(), 1u);
  EXPECT_EQ(table.FindClaims("x"), nullptr);
  EXPECT_EQ(table.FindToChange("x"), nullptr);
  EXPECT_EQ(table.TakeChanged(), Ids{});

  table.FindToChange("w")->ready = true;
  EXPECT_EQ(table.TakeChanged(), Ids{"w"});
  table.Touch("v");
  EXPECT_TRUE(table.Erase("w"));
  EXPECT_EQ(table.TakeChanged(), (Ids{"v", "w"}));
}

}  // namespace
}  // namespace kvindexer
