#include "server/status_inputs_source.h"

#include <string>
#include <vector>

#include "core/indexer.h"
#include "gtest/gtest.h"
#include "server/prefix_admission.h"
#include "server/status_report_body.h"
#include "server/status_report_parser.h"
#include "server/status_report_validation.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace status_inputs_source_test {

namespace v1 = ::kv_indexer::v1;
using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::ModelBackend;
using test_support::Snapshot;

class StatusInputsSourceTest : public ::testing::Test {
 protected:
  StatusInputsParts Parts() {
    StatusInputsParts parts;
    parts.indexer = &indexer_.operator_view();
    parts.serving = [this] { return serving_; };
    parts.caught_up = [this] { return caught_up_; };
    parts.admission = &admission_;
    parts.permits_capacity = 4;
    return parts;
  }

  StatusReport Report(const StatusInputs& inputs) {
    const std::string body = BuildStatusReportBody(
        StatusReportIdentity{.indexer_id = "i", .endpoint = "http://i:1"},
        inputs);
    EXPECT_TRUE(ValidateStatusReportBody(body).ok()) << body;
    return *ParseStatusReport(body);
  }

  ModelBackend backend_;
  Indexer indexer_{&backend_};
  PrefixAdmission admission_{4};
  bool serving_ = true;
  bool caught_up_ = true;
};

TEST_F(StatusInputsSourceTest, EveryRecordIsALegacyStream) {
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(indexer_.operations()
                  .Configure(ExpectedWorkers()
                                 .Worker("w2", "http://w2:8000")
                                 .Worker("w1", "http://w1:8000"),
                             &configured)
                  .Wait()
                  .ok());
  StatusInputs inputs = ReadStatusInputs(Parts());
  EXPECT_TRUE(inputs.serving);
  EXPECT_TRUE(inputs.replica_caught_up);
  EXPECT_FALSE(inputs.counts.has_value());
  ASSERT_EQ(inputs.streams.size(), 2u);
  StatusReport report = Report(inputs);
  EXPECT_FALSE(report.ready);  // configured, not ready yet
  EXPECT_EQ(report.ready_workers, 0u);

  v1::ReplaceExternalKvSnapshotResponse replaced;
  for (const char* id : {"w1", "w2"}) {
    ASSERT_TRUE(indexer_.operations()
                    .Replace(Snapshot(id, std::string("http://") + id + ":8000")
                                 .Epoch(std::string("epoch-") + id)
                                 .AppliedSeq(7),
                             &replaced)
                    .Wait()
                    .ok());
  }
  inputs = ReadStatusInputs(Parts());
  ASSERT_EQ(inputs.streams.size(), 2u);
  const ReportedStream& w1 = inputs.streams[0];
  EXPECT_EQ(w1.ns, "");
  EXPECT_EQ(w1.worker_id, "w1");
  EXPECT_EQ(w1.dp_rank, 0u);
  EXPECT_EQ(w1.worker_address, "http://w1:8000");
  EXPECT_TRUE(w1.covered);
  EXPECT_EQ(w1.worker_epoch, "epoch-w1");
  EXPECT_EQ(w1.watermark, 7u);
  EXPECT_EQ(w1.worker_generation, "");
  report = Report(inputs);
  EXPECT_TRUE(report.ready);
  EXPECT_EQ(report.ready_workers, 2u);

  // Not SERVING, or a replica behind its log: not ready.
  serving_ = false;
  EXPECT_FALSE(Report(ReadStatusInputs(Parts())).ready);
  serving_ = true;
  caught_up_ = false;
  EXPECT_FALSE(Report(ReadStatusInputs(Parts())).ready);
}

TEST_F(StatusInputsSourceTest, LoadIsHeldPermitsOverCapacity) {
  EXPECT_EQ(Report(ReadStatusInputs(Parts())).normalized_load, 0.0);
  std::vector<PrefixAdmission::Permit> held;
  for (int i = 0; i < 3; ++i) held.push_back(admission_.TryAcquire());
  const StatusInputs inputs = ReadStatusInputs(Parts());
  EXPECT_EQ(inputs.permits_held, 3u);
  EXPECT_EQ(inputs.permits_capacity, 4u);
  EXPECT_EQ(Report(inputs).normalized_load, 0.75);
  held.push_back(admission_.TryAcquire());
  EXPECT_EQ(Report(ReadStatusInputs(Parts())).normalized_load, 1.0);
  held.clear();
  EXPECT_EQ(Report(ReadStatusInputs(Parts())).normalized_load, 0.0);
}

TEST_F(StatusInputsSourceTest, AboveTheCapOnlyTheCountsAreRead) {
  // kMaxReportedStreams configured records (one Configure's most), and one
  // more of the seed-era kind.
  ExpectedWorkers many;
  for (size_t i = 0; i < kMaxReportedStreams; ++i) {
    many.Worker("w" + std::to_string(i));
  }
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(indexer_.operations().Configure(many, &configured).Wait().ok());
  v1::ApplyExternalKvBatchResponse applied;
  ASSERT_TRUE(indexer_.operations()
                  .Apply(Batch("extra").Report(1, {1}), &applied)
                  .Wait()
                  .ok());
  const StatusInputs inputs = ReadStatusInputs(Parts());
  EXPECT_TRUE(inputs.streams.empty());
  ASSERT_TRUE(inputs.counts.has_value());
  EXPECT_EQ(inputs.counts->total, kMaxReportedStreams + 1);
  const StatusReport report = Report(inputs);
  EXPECT_TRUE(report.streams.empty());
  EXPECT_EQ(report.total_workers, kMaxReportedStreams + 1);
  EXPECT_EQ(report.ready_workers, inputs.counts->covered);
}

}  // namespace status_inputs_source_test
}  // namespace kvindexer
