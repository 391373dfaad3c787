// Damage that is not a crash's, on the real server process
// (docs/durability.md, "Recovery"; docs/security.md, "The data
// directory"): a record damaged in the middle of the log of a stopped
// server, a torn tail for contrast, a data directory others may write, and
// a state file replaced by a symbolic link.
//
// After the damage the server starts (the log is cut at the bad record),
// says so at ERROR, keeps the cut bytes beside the log, and shows the loss
// in /metrics and GetStats until it restarts.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/e2e/durability_client.h"
#include "tests/e2e/durability_files.h"
#include "tests/e2e/durability_fixture.h"
#include "tests/e2e/durability_server.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/reference_model.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

namespace kvindexer::e2e {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace durability_damage_test {

using ::kvindexer::test_support::HttpGet;
using ::kvindexer::test_support::HttpResponse;
using ::kvindexer::test_support::ScrapedValue;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
namespace admin_v1 = ::kvindexer::admin::v1;

constexpr uint64_t kSeed = 23;
constexpr size_t kUniverse = 4'000;
constexpr uint32_t kReportHashes = 64;
constexpr uint32_t kRevokeHashes = 8;
// Applies before the stop; each is one log record, the last of the file.
constexpr uint64_t kApplies = 12;
// The apply whose record is damaged: the ones after it are intact and
// acknowledged, and lost.
constexpr uint64_t kDamagedApply = 6;
constexpr size_t kHeaderBytes = 28;
constexpr size_t kRecordHeaderBytes = 8;

// Where each record of a log file starts, by the lengths in their headers
// (the layout of docs/durability.md, "File format"; nothing is verified).
std::vector<uint64_t> RecordStarts(const std::string& bytes) {
  std::vector<uint64_t> starts;
  uint64_t at = kHeaderBytes;
  while (at + kRecordHeaderBytes <= bytes.size()) {
    uint32_t length = 0;
    for (int i = 3; i >= 0; --i) {
      length = (length << 8) | static_cast<unsigned char>(bytes[at + i]);
    }
    if (at + kRecordHeaderBytes + length > bytes.size()) break;
    starts.push_back(at);
    at += kRecordHeaderBytes + length;
  }
  return starts;
}

class DurabilityDamageTest : public DurabilityTest {
 protected:
  DurabilityDamageTest() : DurabilityTest("kvindexer-durability-damage-") {}

  void SetUp() override {
    DurabilityTest::SetUp();
    if (HasFatalFailure()) return;
    options_.extra_env["KV_INDEXER_METRICS_ADDR"] = "127.0.0.1:0";
  }

  // A server that acknowledged kApplies gated applies of `stream`, then
  // stopped; returns the path of its log file.
  std::string WriteLogAndStop(GatedWorkerStream& stream) {
    std::unique_ptr<DurableServer> server = DurableServer::Start(options_);
    EXPECT_NE(server, nullptr);
    if (server == nullptr) return "";
    EXPECT_TRUE(RegisterGatedWorker(server->stub()).ok());
    for (uint64_t n = 0; n < kApplies; ++n) {
      v1::ApplyExternalKvBatchResponse response;
      EXPECT_TRUE(Send(server->stub(), stream.Next(), &response).ok());
    }
    server->Stop();
    absl::StatusOr<DataDirFiles> files = ListDataDir(options_.data_dir);
    EXPECT_TRUE(files.ok()) << files.status();
    if (!files.ok() || files->wals.empty()) return "";
    return WalPath(options_.data_dir, files->wals.back());
  }
};

TEST_F(DurabilityDamageTest,
       ADamagedRecordInTheMiddleIsCutKeptAndReportedAtError) {
  GatedWorkerStream stream(kSeed, kUniverse, kReportHashes, kRevokeHashes);
  const std::string wal = WriteLogAndStop(stream);
  ASSERT_FALSE(wal.empty());
  absl::StatusOr<std::string> bytes = ReadWholeFile(wal);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const std::vector<uint64_t> starts = RecordStarts(*bytes);
  ASSERT_GE(starts.size(), kApplies);
  const uint64_t bad = starts[starts.size() - kApplies + kDamagedApply - 1];
  const uint64_t lost = kApplies - kDamagedApply;
  std::string damaged = *bytes;
  damaged[bad + kRecordHeaderBytes + 3] ^= 0x20;
  ASSERT_TRUE(WriteWholeFile(wal, damaged).ok());

  std::unique_ptr<DurableServer> server = DurableServer::Start(options_);
  ASSERT_NE(server, nullptr);
  const std::string output = server->process().Output();
  // One ERROR line names the file, the offset, what was lost and where the
  // bytes are.
  const std::string copy = absl::StrCat(wal, ".corrupt-", bad);
  const std::optional<std::string> line =
      server->process().WaitForLineContaining(
          "wal: damaged record in the middle of the log", kDurableStartBound);
  ASSERT_TRUE(line.has_value()) << output;
  EXPECT_THAT(
      *line,
      AllOf(HasSubstr("Z error "), HasSubstr("file=" + wal),
            HasSubstr(absl::StrCat("offset=", bad)),
            HasSubstr(absl::StrCat("dropped_bytes=", damaged.size() - bad)),
            HasSubstr(absl::StrCat("intact_records_after=", lost)),
            HasSubstr("kept in " + copy)));
  EXPECT_THAT(output, Not(HasSubstr("truncated corrupt tail")));

  // The log is cut at the bad record; the cut bytes are kept as they were.
  absl::StatusOr<std::string> kept = ReadWholeFile(copy);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(*kept == damaged.substr(bad));
  absl::StatusOr<std::string> now = ReadWholeFile(wal);
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(*now == damaged.substr(0, bad));

  // The server serves what came before the damage.
  ExpectStateAt(*server, stream, kDamagedApply - 1);

  // /metrics and GetStats show the loss.
  const int port = MetricsPort(*server);
  ASSERT_NE(port, 0) << output;
  absl::StatusOr<HttpResponse> scrape = HttpGet(port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_recovery_damaged"), 1.0)
      << scrape->body;
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_recovery_cut_records"),
            static_cast<double>(lost));
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_recovery_cut_bytes"),
            static_cast<double>(damaged.size() - bad));
  const admin_v1::DurabilityInfo durability = Durability(*server);
  EXPECT_TRUE(durability.recovery_damaged());
  EXPECT_EQ(durability.recovery_cut_records(), lost);
  EXPECT_EQ(durability.recovery_cut_bytes(), damaged.size() - bad);

  // The bridge resends what was lost: the next apply in sequence is the
  // damaged one.
  v1::ApplyExternalKvBatchResponse response;
  ASSERT_TRUE(
      Send(server->stub(), stream.request(kDamagedApply), &response).ok());
  EXPECT_FALSE(response.duplicate());
  server->Stop();

  // The next start finds a clean log: no ERROR, the gauges back at 0, the
  // copy still there.
  std::unique_ptr<DurableServer> again = DurableServer::Start(options_);
  ASSERT_NE(again, nullptr);
  EXPECT_THAT(again->process().Output(), Not(HasSubstr("wal: damaged record")));
  ExpectStateAt(*again, stream, kDamagedApply);
  const int again_port = MetricsPort(*again);
  scrape = HttpGet(again_port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_recovery_damaged"), 0.0);
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_recovery_cut_bytes"),
            0.0);
  absl::StatusOr<DataDirFiles> files = ListDataDir(options_.data_dir);
  ASSERT_TRUE(files.ok());
  EXPECT_THAT(files->others,
              Contains(std::filesystem::path(copy).filename().string()));
  again->Stop();
}

// The normal crash: the end of the last record. A WARN, no copy, and the
// damage gauge stays 0 (the bytes cut are counted).
TEST_F(DurabilityDamageTest, ATornTailIsAWarningAndKeepsNothing) {
  GatedWorkerStream stream(kSeed, kUniverse, kReportHashes, kRevokeHashes);
  const std::string wal = WriteLogAndStop(stream);
  ASSERT_FALSE(wal.empty());
  absl::StatusOr<std::string> bytes = ReadWholeFile(wal);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const uint64_t last = RecordStarts(*bytes).back();
  ASSERT_TRUE(WriteWholeFile(wal, bytes->substr(0, bytes->size() - 5)).ok());

  std::unique_ptr<DurableServer> server = DurableServer::Start(options_);
  ASSERT_NE(server, nullptr);
  const std::optional<std::string> line =
      server->process().WaitForLineContaining("wal: truncated corrupt tail",
                                              kDurableStartBound);
  ASSERT_TRUE(line.has_value()) << server->process().Output();
  EXPECT_THAT(*line, AllOf(HasSubstr("Z warning "), HasSubstr("file=" + wal),
                           HasSubstr(absl::StrCat("offset=", last))));
  EXPECT_THAT(server->process().Output(), Not(HasSubstr("Z error ")));
  ExpectStateAt(*server, stream, kApplies - 1);
  const int port = MetricsPort(*server);
  absl::StatusOr<HttpResponse> scrape = HttpGet(port, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_recovery_damaged"), 0.0);
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_wal_recovery_cut_bytes"),
            static_cast<double>(bytes->size() - 5 - last));
  // The checkpoint figures are there from the start.
  EXPECT_EQ(ScrapedValue(scrape->body, "kvindexer_checkpoint_in_progress"),
            0.0);
  for (const char* reason : {"rotate", "build", "timeout"}) {
    EXPECT_EQ(ScrapedValue(scrape->body,
                           absl::StrCat("kvindexer_checkpoint_failures_total{"
                                        "reason=\"",
                                        reason, "\"}")),
              0.0)
        << reason;
  }
  absl::StatusOr<DataDirFiles> files = ListDataDir(options_.data_dir);
  ASSERT_TRUE(files.ok());
  for (const std::string& name : files->others) {
    EXPECT_THAT(name, Not(HasSubstr(".corrupt"))) << name;
  }
  server->Stop();
}

// A data directory that others may write is refused (exit 1), with a
// message naming the variable, the mode and the fix; so is a state file
// that is a symbolic link.
TEST_F(DurabilityDamageTest, AnUnsafeDirectoryOrALinkedFileStopsTheServer) {
  GatedWorkerStream stream(kSeed, kUniverse, kReportHashes, kRevokeHashes);
  const std::string wal = WriteLogAndStop(stream);
  ASSERT_FALSE(wal.empty());

  ASSERT_EQ(::chmod(options_.data_dir.c_str(), 0777), 0);
  ServerExit exit = RunServerToExit(options_);
  ASSERT_TRUE(exit.status.has_value()) << "the server kept running";
  EXPECT_TRUE(exit.status->exited && exit.status->code == 1)
      << exit.status->ToString() << "\n"
      << exit.output;
  EXPECT_THAT(exit.output,
              AllOf(HasSubstr("KV_INDEXER_DATA_DIR=" + options_.data_dir),
                    HasSubstr("has mode 0777"),
                    HasSubstr("chmod go-w " + options_.data_dir)));
  ASSERT_EQ(::chmod(options_.data_dir.c_str(), 0700), 0);

  const std::string moved = scratch_->Sub("moved.log");
  std::filesystem::rename(wal, moved);
  std::filesystem::create_symlink(moved, wal);
  exit = RunServerToExit(options_);
  ASSERT_TRUE(exit.status.has_value()) << "the server kept running";
  EXPECT_TRUE(exit.status->exited && exit.status->code == 1)
      << exit.status->ToString() << "\n"
      << exit.output;
  EXPECT_THAT(exit.output, AllOf(HasSubstr("KV_INDEXER_DATA_DIR"),
                                 HasSubstr(wal), HasSubstr("symbolic link")));

  // Put back, the directory starts with everything.
  std::filesystem::remove(wal);
  std::filesystem::rename(moved, wal);
  std::unique_ptr<DurableServer> server = DurableServer::Start(options_);
  ASSERT_NE(server, nullptr);
  ExpectStateAt(*server, stream, kApplies);
  server->Stop();
}

}  // namespace durability_damage_test
}  // namespace kvindexer::e2e
