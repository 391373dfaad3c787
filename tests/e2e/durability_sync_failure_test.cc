// A failed fdatasync on the real server process (docs/durability.md,
// "Write failures"; docs/health.md, "When the state log fails"), and a disk
// that refuses appends without failing the log.
//
// The sync failure comes from the file system calls themselves: the server
// runs with LD_PRELOAD=fsync_fault_shim, which makes fdatasync and fsync
// fail with EIO once the test creates a trigger file. The restart runs
// without the shim.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/e2e/durability_client.h"
#include "tests/e2e/durability_files.h"
#include "tests/e2e/durability_fixture.h"
#include "tests/e2e/durability_server.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/requests.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_FSYNC_FAULT_SHIM
#error "KVINDEXER_FSYNC_FAULT_SHIM must name the fsync fault shim library"
#endif

namespace kvindexer::e2e {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace durability_sync_failure_test {

using ::kvindexer::test_support::CheckHealth;
using ::kvindexer::test_support::HttpGet;
using ::kvindexer::test_support::HttpResponse;
using ::kvindexer::test_support::kHealthNotServing;
using ::kvindexer::test_support::kHealthServing;
using ::kvindexer::test_support::PrefixRequest;
using ::kvindexer::test_support::ScrapedValue;
using ::kvindexer::test_support::WaitUntil;
using ::testing::HasSubstr;
namespace admin_v1 = ::kvindexer::admin::v1;

constexpr uint64_t kSeed = 11;
constexpr size_t kUniverse = 4'000;
constexpr uint32_t kReportHashes = 64;
constexpr uint32_t kRevokeHashes = 8;
constexpr uint64_t kAcknowledged = 5;
constexpr uint64_t kFileHeaderBytes = 28;

uint64_t FileSize(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<uint64_t>(size);
}

std::string MarkerName(uint64_t generation) {
  return absl::StrFormat("wal-%016u.poisoned", generation);
}

class DurabilitySyncFailureTest : public DurabilityTest {
 protected:
  DurabilitySyncFailureTest() : DurabilityTest("kvindexer-sync-failure-") {}

  void SetUp() override {
    DurabilityTest::SetUp();
    if (HasFatalFailure()) return;
    options_.extra_env["KV_INDEXER_METRICS_ADDR"] = "127.0.0.1:0";
  }

  // options_ with the shim preloaded and its trigger.
  DurableServerOptions WithShim() const {
    DurableServerOptions options = options_;
    options.extra_env["LD_PRELOAD"] = KVINDEXER_FSYNC_FAULT_SHIM;
    options.extra_env["KVINDEXER_TEST_FSYNC_FAULT_TRIGGER"] = Trigger();
    // An ASan build wants its runtime first among the loaded libraries; a
    // preloaded library comes before it, which is harmless here.
    const char* asan = std::getenv("ASAN_OPTIONS");
    options.extra_env["ASAN_OPTIONS"] =
        std::string(asan != nullptr && asan[0] != '\0' ? std::string(asan) + ":"
                                                       : std::string()) +
        "verify_asan_link_order=0";
    return options;
  }
  std::string Trigger() const { return scratch_->Sub("fail-syncs"); }

  static uint64_t Health(DurableServer& server, const std::string& service) {
    const test_support::HealthAnswer answer =
        CheckHealth(grpc::CreateChannel(server.address(),
                                        grpc::InsecureChannelCredentials()),
                    service, std::chrono::seconds(5));
    return answer.code == grpc::StatusCode::OK ? answer.status : 0;
  }
};

TEST_F(DurabilitySyncFailureTest,
       AFailedSyncIsNotServingForGoodAndTheRestartWritesANewLogFile) {
  GatedWorkerStream stream(kSeed, kUniverse, kReportHashes, kRevokeHashes);
  std::unique_ptr<DurableServer> server = DurableServer::Start(WithShim());
  ASSERT_NE(server, nullptr);
  const int metrics_port = MetricsPort(*server);
  ASSERT_NE(metrics_port, 0) << server->process().Output();
  EXPECT_EQ(Health(*server, ""), kHealthServing);
  ASSERT_TRUE(RegisterGatedWorker(server->stub()).ok());
  for (uint64_t n = 0; n < kAcknowledged; ++n) {
    v1::ApplyExternalKvBatchResponse response;
    ASSERT_TRUE(Send(server->stub(), stream.Next(), &response).ok());
  }
  absl::StatusOr<DataDirFiles> files = ListDataDir(options_.data_dir);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_FALSE(files->wals.empty());
  const uint64_t generation = files->wals.back();
  const std::string failed_log = WalPath(options_.data_dir, generation);

  // From now on every fdatasync and fsync of the server fails with EIO.
  ASSERT_TRUE(WriteWholeFile(Trigger(), "").ok());
  v1::ApplyExternalKvBatchResponse response;
  const absl::Status failed = Send(server->stub(), stream.Next(), &response);
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable) << failed;
  EXPECT_THAT(failed.message(), HasSubstr("fdatasync"));

  // grpc.health.v1 says NOT_SERVING for every name, and stays so.
  EXPECT_TRUE(
      WaitUntil([&] { return Health(*server, "") == kHealthNotServing; },
                kDurableStartBound))
      << server->process().Output();
  EXPECT_EQ(Health(*server, "kv_indexer.v1.KVIndexer"), kHealthNotServing);
  EXPECT_EQ(Health(*server, "kvindexer.admin.v1.KvIndexerAdmin"),
            kHealthNotServing);
  // /readyz names the reason.
  absl::StatusOr<HttpResponse> ready = HttpGet(metrics_port, "/readyz");
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, 503);
  EXPECT_THAT(ready->body, HasSubstr("not ready: state log failed: fdatasync: "
                                     "Input/output error (" +
                                     failed_log + ")"));
  // The admin API's status agrees.
  auto admin = admin_v1::KvIndexerAdmin::NewStub(grpc::CreateChannel(
      server->address(), grpc::InsecureChannelCredentials()));
  admin_v1::GetStatsResponse stats;
  ASSERT_TRUE(
      admin->GetStats(Deadline().get(), admin_v1::GetStatsRequest(), &stats)
          .ok());
  EXPECT_EQ(stats.health(), "NOT_SERVING");
  // One ERROR line says what happened and what it means.
  EXPECT_TRUE(server->process().WaitForOutput(
      "the state log failed and refuses every write; health is NOT_SERVING "
      "until the server is restarted error=fdatasync: Input/output error",
      kDurableStartBound))
      << server->process().Output();

  // A bridge's retry of that apply is a duplicate whose answer would rest
  // on the unsynced record, and a probe likewise: both are refused.
  EXPECT_EQ(
      Send(server->stub(), stream.request(kAcknowledged + 1), &response).code(),
      absl::StatusCode::kUnavailable);
  EXPECT_EQ(ProbeCheckpoint(server->stub()).status().code(),
            absl::StatusCode::kUnavailable);
  // The next apply cannot be logged at all: refused, and counted.
  const absl::Status refused = Send(server->stub(), stream.Next(), &response);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  absl::StatusOr<HttpResponse> scrape = HttpGet(metrics_port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_failed"), 1.0);
  EXPECT_EQ(ScrapedValue(scrape->body,
                         "kvindexer_wal_append_failures_total{reason="
                         "\"poisoned\"}"),
            1.0)
      << scrape->body;
  EXPECT_EQ(ScrapedValue(scrape->body,
                         "kvindexer_wal_append_failures_total{reason="
                         "\"no_space\"}"),
            0.0);

  // Reads keep answering, and they see the apply whose sync failed: it took
  // effect, and its caller's UNAVAILABLE means "outcome unknown".
  ExpectPlacementsAt(*server, stream, kAcknowledged + 1);
  v1::MatchExternalKvPrefixResponse prefix;
  EXPECT_TRUE(server->stub()
                  .MatchExternalKvPrefix(Deadline().get(),
                                         PrefixRequest({stream.universe()[0],
                                                        stream.universe()[1]}),
                                         &prefix)
                  .ok());
  const uint64_t failed_size = FileSize(failed_log);
  ASSERT_GT(failed_size, kFileHeaderBytes);
  files = ListDataDir(options_.data_dir);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(files->others, ::testing::Contains(MarkerName(generation)));
  // An idle channel would hold up the graceful shutdown (DurableServer::Stop).
  admin.reset();
  server->Stop();

  // The restart, without the fault: everything acknowledged is there (and
  // the apply whose sync failed, which the file holds), the failed file is
  // closed behind a new checkpoint and writing goes on in a new file.
  std::unique_ptr<DurableServer> restarted = DurableServer::Start(options_);
  ASSERT_NE(restarted, nullptr);
  EXPECT_THAT(restarted->process().Output(),
              HasSubstr("the previous run's log " + failed_log + " failed"));
  EXPECT_EQ(Health(*restarted, ""), kHealthServing);
  const int restarted_metrics = MetricsPort(*restarted);
  ASSERT_NE(restarted_metrics, 0);
  ready = HttpGet(restarted_metrics, "/readyz");
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, 200) << ready->body;
  absl::StatusOr<uint64_t> checkpoint = ProbeCheckpoint(restarted->stub());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ(*checkpoint, kAcknowledged + 1);
  ExpectPlacementsAt(*restarted, stream, kAcknowledged + 1);
  files = ListDataDir(options_.data_dir);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT(files->checkpoints, ::testing::Contains(generation + 1));
  EXPECT_THAT(files->wals, ::testing::Contains(generation + 1));
  EXPECT_EQ(files->wals.back(), generation + 1);
  EXPECT_THAT(files->others,
              ::testing::Not(::testing::Contains(MarkerName(generation))));

  // The apply the failed log refused goes through now.
  ASSERT_TRUE(
      Send(restarted->stub(), stream.request(kAcknowledged + 2), &response)
          .ok());
  EXPECT_FALSE(response.duplicate());
  ASSERT_EQ(stream.sent(), kAcknowledged + 2);
  EXPECT_EQ(FileSize(failed_log), failed_size);
  EXPECT_GT(FileSize(WalPath(options_.data_dir, generation + 1)),
            kFileHeaderBytes);
  restarted->process().Kill();

  // A crash now loses nothing acknowledged since.
  std::unique_ptr<DurableServer> again = DurableServer::Start(options_);
  ASSERT_NE(again, nullptr);
  checkpoint = ProbeCheckpoint(again->stub());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ(*checkpoint, stream.sent());
  ExpectPlacementsAt(*again, stream, stream.sent());
  EXPECT_EQ(FileSize(failed_log), failed_size);
  again->Stop();
}

// A full disk (a file size limit on the server: EFBIG) refuses appends but
// does not fail the log: health stays SERVING, and each refusal is counted
// by reason and logged (throttled).
TEST_F(DurabilitySyncFailureTest, RefusedAppendsAreCountedAndLogged) {
  GatedWorkerStream stream(kSeed, kUniverse, kReportHashes, kRevokeHashes);
  DurableServerOptions limited = options_;
  limited.file_size_limit = 64 << 10;
  std::unique_ptr<DurableServer> server = DurableServer::Start(limited);
  ASSERT_NE(server, nullptr);
  const int metrics_port = MetricsPort(*server);
  ASSERT_NE(metrics_port, 0) << server->process().Output();
  ASSERT_TRUE(RegisterGatedWorker(server->stub()).ok());
  absl::Status refused;
  for (int n = 0; n < 2'000 && refused.ok(); ++n) {
    v1::ApplyExternalKvBatchResponse response;
    refused = Send(server->stub(), stream.Next(), &response);
  }
  ASSERT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  // Retried like a bridge would: refused the same way.
  v1::ApplyExternalKvBatchResponse response;
  EXPECT_EQ(
      Send(server->stub(), stream.request(stream.sent()), &response).code(),
      absl::StatusCode::kUnavailable);

  absl::StatusOr<HttpResponse> scrape = HttpGet(metrics_port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(ScrapedValue(scrape->body,
                         "kvindexer_wal_append_failures_total{reason="
                         "\"file_too_large\"}"),
            2.0)
      << scrape->body;
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_failed"), 0.0);
  EXPECT_EQ(Health(*server, ""), kHealthServing);
  absl::StatusOr<HttpResponse> ready = HttpGet(metrics_port, "/readyz");
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, 200) << ready->body;
  // The first refusal is logged at once; the retry, within the interval,
  // is not.
  const std::string output = server->process().Output();
  const std::string line = "state log append refused reason=file_too_large";
  const size_t first = output.find(line);
  ASSERT_NE(first, std::string::npos) << output;
  EXPECT_EQ(output.find(line, first + 1), std::string::npos) << output;
  server->process().Kill();
}

}  // namespace durability_sync_failure_test
}  // namespace kvindexer::e2e
