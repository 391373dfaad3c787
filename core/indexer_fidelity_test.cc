// The Indexer's bookkeeping of the fidelity header (common/fidelity_header.h)
// on worker records.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fidelity_header.h"
#include "core/indexer.h"
#include "tests/support/fake_clock.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace indexer_fidelity_test {

// The Indexer keeps the last valid value on the record of a mutation that
// took effect, with its time; a malformed or absent one keeps the previous
// value; a refused apply changes nothing; replay sets nothing.
TEST(FidelityBookkeepingTest, StoredWhenAMutationTakesEffect) {
  test_support::ModelBackend backend;
  FakeMonotonicClock clock;
  Indexer indexer(&backend, nullptr, RequestLimits{}, kBackendAbiMinor, &clock);
  v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(indexer.operations()
                  .Apply(test_support::Batch("w", "a").Report(kTierHbm, {1}),
                         &resp,
                         {.fidelity = FidelityHeader::Parse("degraded; x")})
                  .Wait()
                  .ok());
  std::optional<WorkerRecord> r = indexer.operator_view().WorkerState("w");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->fidelity, Fidelity::kDegraded);
  EXPECT_EQ(r->fidelity_reason, "x");
  EXPECT_EQ(r->last_apply, clock.Now());

  clock.Advance(std::chrono::seconds(3));
  ASSERT_TRUE(indexer.operations()
                  .Apply(test_support::Batch("w", "a").Report(kTierHbm, {2}),
                         &resp, {.fidelity = FidelityHeader::Parse("bogus")})
                  .Wait()
                  .ok());
  r = indexer.operator_view().WorkerState("w");
  EXPECT_EQ(r->fidelity, Fidelity::kDegraded);
  EXPECT_TRUE(r->fidelity_malformed_logged);
  EXPECT_EQ(r->last_apply, clock.Now());

  // A refused (gated, unconfigured) apply has no effect.
  const auto before = r->last_apply;
  clock.Advance(std::chrono::seconds(1));
  EXPECT_FALSE(indexer.operations()
                   .Apply(test_support::Batch("v", "b").Gated("e", 1).Report(
                              kTierHbm, {1}),
                          &resp, {.fidelity = FidelityHeader::Parse("exact")})
                   .Wait()
                   .ok());
  EXPECT_FALSE(indexer.operator_view().WorkerState("v").has_value());
  EXPECT_EQ(indexer.operator_view().WorkerState("w")->last_apply, before);

  ASSERT_TRUE(indexer.operations()
                  .Apply(test_support::Batch("w", "a").Report(kTierHbm, {3}),
                         &resp, {.fidelity = FidelityHeader::Parse("exact")})
                  .Wait()
                  .ok());
  r = indexer.operator_view().WorkerState("w");
  EXPECT_EQ(r->fidelity, Fidelity::kExact);
  EXPECT_EQ(r->fidelity_reason, "");

  // ListWorkers carries it, with the backend's counts.
  const std::vector<WorkerSnapshot> workers =
      indexer.operator_view().ListWorkers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].fidelity, Fidelity::kExact);
  ASSERT_TRUE(workers[0].placements_by_tier.has_value());
  EXPECT_EQ((*workers[0].placements_by_tier)[kTierHbm], 3u);
}

TEST(FidelityBookkeepingTest, ReplaySetsNoLastApply) {
  test_support::ModelBackend backend;
  Indexer indexer(&backend);
  state::v1::WalRecord record;
  *record.mutable_apply() =
      test_support::Batch("w", "a").Report(kTierHbm, {1}).request();
  ASSERT_TRUE(indexer.durable_state().Replay(record).ok());
  const std::optional<WorkerRecord> r =
      indexer.operator_view().WorkerState("w");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->ready);
  EXPECT_FALSE(r->last_apply.has_value());
  EXPECT_EQ(r->fidelity, Fidelity::kUnknown);
}

TEST(FidelityBookkeepingTest, OlderBackendsHaveNoCounts) {
  test_support::ModelBackend backend;
  Indexer indexer(&backend, nullptr, RequestLimits{}, /*backend_abi_minor=*/1);
  v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(
      indexer.operations()
          .Apply(test_support::Batch("w", "a").Report(kTierHbm, {1}), &resp)
          .Wait()
          .ok());
  const std::vector<WorkerSnapshot> workers =
      indexer.operator_view().ListWorkers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_FALSE(workers[0].placements_by_tier.has_value());
  EXPECT_TRUE(backend.counted_workers.empty());  // never asked
}

}  // namespace indexer_fidelity_test
}  // namespace kvindexer
