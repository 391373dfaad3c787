#include "tests/e2e/durability_fixture.h"

#include <utility>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/reference_model.h"

namespace kvindexer::e2e {

void DurabilityTest::SetUp() {
  absl::StatusOr<std::unique_ptr<test_support::ScratchDir>> scratch =
      test_support::ScratchDir::Create(scratch_prefix_);
  ASSERT_TRUE(scratch.ok()) << scratch.status();
  scratch_ = *std::move(scratch);
  options_.data_dir = scratch_->Sub("data");
}

void DurabilityTest::ExpectPlacementsAt(DurableServer& server,
                                        const GatedWorkerStream& stream,
                                        uint64_t seq) {
  test_support::ReferenceModel model = stream.ModelAt(seq);
  const Placements want = ModelPlacements(model, stream.universe());
  absl::StatusOr<Placements> got =
      ServerPlacements(server.stub(), stream.universe());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == want) << FirstDifference(*got, want);
}

void DurabilityTest::ExpectStateAt(DurableServer& server,
                                   const GatedWorkerStream& stream,
                                   uint64_t seq) {
  absl::StatusOr<uint64_t> checkpoint = ProbeCheckpoint(server.stub());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ(*checkpoint, seq);
  ExpectPlacementsAt(server, stream, seq);
}

int DurabilityTest::MetricsPort(DurableServer& server) {
  return test_support::WaitForMetricsPort(server.process(), kDurableStartBound);
}

admin::v1::DurabilityInfo DurabilityTest::Durability(DurableServer& server) {
  auto admin = admin::v1::KvIndexerAdmin::NewStub(grpc::CreateChannel(
      server.address(), grpc::InsecureChannelCredentials()));
  admin::v1::GetStatsResponse stats;
  const grpc::Status s =
      admin->GetStats(Deadline().get(), admin::v1::GetStatsRequest(), &stats);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return stats.durability();
}

}  // namespace kvindexer::e2e
