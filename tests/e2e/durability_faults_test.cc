// Faults around the data directory (docs/durability.md), each on the real
// server process: a second server on the same directory, files of a newer
// format version, a corrupt newest checkpoint, a full disk, and bad values
// of the configuration variables.
//
// Checkpoints are produced the ordinary way: with the minimum
// KV_INDEXER_CHECKPOINT_BYTES (1 MiB) the test streams applies until the
// directory holds the checkpoint files it needs (polling the directory
// after each acknowledged apply, bounded).
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/durability_client.h"
#include "tests/e2e/durability_files.h"
#include "tests/e2e/durability_fixture.h"
#include "tests/e2e/durability_server.h"
#include "tests/support/requests.h"
#include "tests/support/scratch_dir.h"

namespace kvindexer::e2e {
namespace durability_faults_test {
namespace {

using ::kvindexer::test_support::PrefixRequest;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint64_t kCheckpointBytes = 1 << 20;
constexpr uint64_t kSeed = 7;
// About 32 KiB per logged apply: a checkpoint every ~32 applies.
constexpr size_t kUniverse = 30'000;
constexpr uint32_t kReportHashes = 4096;
constexpr uint32_t kRevokeHashes = 256;
// Applies streamed at most while waiting for checkpoint files.
constexpr uint64_t kMaxFillApplies = 2'000;

class DurabilityFaultsTest : public DurabilityTest {
 protected:
  DurabilityFaultsTest() : DurabilityTest("kvindexer-durability-faults-") {}

  void SetUp() override {
    DurabilityTest::SetUp();
    if (HasFatalFailure()) return;
    options_.checkpoint_bytes = kCheckpointBytes;
  }

  // Streams applies of `stream` (seq = stream.sent() + 1 on) to `server`
  // until `done` holds for the directory (checked after each acknowledged
  // apply); the last acknowledged seq is stream.sent().
  ::testing::AssertionResult FillUntil(
      DurableServer& server, GatedWorkerStream& stream,
      const std::function<bool(const DataDirFiles&)>& done) {
    for (uint64_t n = 0; n < kMaxFillApplies; ++n) {
      v1::ApplyExternalKvBatchResponse response;
      if (absl::Status s = Send(server.stub(), stream.Next(), &response);
          !s.ok()) {
        return ::testing::AssertionFailure() << s;
      }
      absl::StatusOr<DataDirFiles> files = ListDataDir(options_.data_dir);
      if (!files.ok()) return ::testing::AssertionFailure() << files.status();
      if (done(*files)) return ::testing::AssertionSuccess();
    }
    absl::StatusOr<DataDirFiles> files = ListDataDir(options_.data_dir);
    return ::testing::AssertionFailure()
           << kMaxFillApplies << " applies did not produce the files needed; "
           << "the directory holds "
           << (files.ok() ? files->checkpoints.size() : 0)
           << " checkpoints and " << (files.ok() ? files->wals.size() : 0)
           << " logs";
  }
};

TEST_F(DurabilityFaultsTest,
       SecondServerOnTheSameDirectoryExits1NamingTheHolder) {
  std::unique_ptr<DurableServer> first = DurableServer::Start(options_);
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(RegisterGatedWorker(first->stub()).ok());

  const ServerExit second = RunServerToExit(options_);
  ASSERT_TRUE(second.status.has_value()) << "the second server kept running";
  EXPECT_TRUE(second.status->exited && second.status->code == 1)
      << second.status->ToString() << "\n"
      << second.output;
  EXPECT_THAT(second.output, HasSubstr(std::to_string(first->process().pid())));

  // The holder is undisturbed.
  absl::StatusOr<uint64_t> checkpoint = ProbeCheckpoint(first->stub());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ(*checkpoint, 0u);
  first->Stop();
}

// A file of a newer format version stops the server (exit 1) and is left as
// it is; with the version put back, the same directory starts with its
// state intact.
class NewerVersionTest : public DurabilityFaultsTest,
                         public ::testing::WithParamInterface<const char*> {};

TEST_P(NewerVersionTest, RefusesToStartAndLeavesTheFileAlone) {
  const bool checkpoint_file = std::string(GetParam()) == "checkpoint";
  GatedWorkerStream stream(kSeed, kUniverse, kReportHashes, kRevokeHashes);
  std::unique_ptr<DurableServer> server = DurableServer::Start(options_);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(RegisterGatedWorker(server->stub()).ok());
  ASSERT_TRUE(FillUntil(*server, stream, [](const DataDirFiles& files) {
    return !files.checkpoints.empty() && !files.writing_checkpoint;
  }));
  server->Stop();

  absl::StatusOr<DataDirFiles> files = ListDataDir(options_.data_dir);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_FALSE(files->checkpoints.empty());
  ASSERT_FALSE(files->wals.empty());
  const std::string path =
      checkpoint_file
          ? CheckpointPath(options_.data_dir, files->checkpoints.back())
          : WalPath(options_.data_dir, files->wals.back());
  ASSERT_TRUE(SetHeaderVersion(path, durable::kFormatVersion + 1).ok());
  absl::StatusOr<std::string> bumped = ReadWholeFile(path);
  ASSERT_TRUE(bumped.ok()) << bumped.status();

  const ServerExit refused = RunServerToExit(options_);
  ASSERT_TRUE(refused.status.has_value()) << "the server kept running";
  EXPECT_TRUE(refused.status->exited && refused.status->code == 1)
      << refused.status->ToString() << "\n"
      << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("version")) << refused.output;
  absl::StatusOr<std::string> after = ReadWholeFile(path);
  ASSERT_TRUE(after.ok()) << path << " is gone: " << after.status();
  EXPECT_TRUE(*after == *bumped) << path << " was modified";
  absl::StatusOr<DataDirFiles> after_files = ListDataDir(options_.data_dir);
  ASSERT_TRUE(after_files.ok());
  EXPECT_EQ(after_files->checkpoints, files->checkpoints);
  EXPECT_EQ(after_files->wals, files->wals);

  ASSERT_TRUE(SetHeaderVersion(path, durable::kFormatVersion).ok());
  std::unique_ptr<DurableServer> again = DurableServer::Start(options_);
  ASSERT_NE(again, nullptr);
  ExpectStateAt(*again, stream, stream.sent());
  again->Stop();
}

INSTANTIATE_TEST_SUITE_P(Files, NewerVersionTest,
                         ::testing::Values("checkpoint", "wal"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

TEST_F(DurabilityFaultsTest, CorruptNewestCheckpointFallsBackToThePrevious) {
  GatedWorkerStream stream(kSeed, kUniverse, kReportHashes, kRevokeHashes);
  std::unique_ptr<DurableServer> server = DurableServer::Start(options_);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(RegisterGatedWorker(server->stub()).ok());
  ASSERT_TRUE(FillUntil(*server, stream, [](const DataDirFiles& files) {
    return files.checkpoints.size() >= 2 && !files.writing_checkpoint;
  })) << "the previous generation must be kept for the fallback";
  // A few more applies, so that the newest log is not empty either.
  for (int i = 0; i < 3; ++i) {
    v1::ApplyExternalKvBatchResponse response;
    ASSERT_TRUE(Send(server->stub(), stream.Next(), &response).ok());
  }
  server->process().Kill();  // a crash: nothing is tidied up

  absl::StatusOr<DataDirFiles> files = ListDataDir(options_.data_dir);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_GE(files->checkpoints.size(), 2u);
  const uint64_t newest = files->checkpoints.back();
  const uint64_t previous = files->checkpoints[files->checkpoints.size() - 2];
  const std::string path = CheckpointPath(options_.data_dir, newest);
  ASSERT_TRUE(FlipMiddleByte(path).ok());

  std::unique_ptr<DurableServer> restarted = DurableServer::Start(options_);
  ASSERT_NE(restarted, nullptr);
  const std::optional<RecoveredLine> recovered = restarted->Recovered();
  ASSERT_TRUE(recovered.has_value());
  EXPECT_EQ(recovered->checkpoint, previous) << recovered->text;
  ExpectStateAt(*restarted, stream, stream.sent());

  absl::StatusOr<DataDirFiles> after = ListDataDir(options_.data_dir);
  ASSERT_TRUE(after.ok()) << after.status();
  const std::string corrupt_name =
      absl::StrFormat("checkpoint-%016u.ckpt.corrupt", newest);
  EXPECT_THAT(after->others, ::testing::Contains(corrupt_name));
  EXPECT_THAT(after->checkpoints, ::testing::Not(::testing::Contains(newest)));
  EXPECT_THAT(restarted->process().Output(),
              HasSubstr(absl::StrFormat("checkpoint-%016u.ckpt", newest)));
  restarted->Stop();
}

// A full disk (RLIMIT_FSIZE on the server: a write past it fails with
// EFBIG): the apply that cannot be logged is refused with UNAVAILABLE and
// not applied, queries keep answering, and after a restart without the
// limit every acknowledged apply is there.
TEST_F(DurabilityFaultsTest,
       FullDiskRefusesAppliesAndKeepsWhatWasAcknowledged) {
  constexpr uint64_t kFileSizeLimit = 256 << 10;  // below a checkpoint's 1 MiB
  GatedWorkerStream stream(kSeed, kUniverse, /*report_hashes=*/512,
                           /*revoke_hashes=*/64);
  DurableServerOptions limited = options_;
  limited.file_size_limit = kFileSizeLimit;
  std::unique_ptr<DurableServer> server = DurableServer::Start(limited);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(RegisterGatedWorker(server->stub()).ok());

  absl::Status refused;
  uint64_t acked = 0;
  for (uint64_t n = 0; n < kMaxFillApplies && refused.ok(); ++n) {
    v1::ApplyExternalKvBatchResponse response;
    refused = Send(server->stub(), stream.Next(), &response);
    if (refused.ok()) acked = stream.sent();
  }
  ASSERT_FALSE(refused.ok())
      << kMaxFillApplies << " applies fitted under the file size limit";
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("state log write failed"));
  ASSERT_EQ(acked + 1, stream.sent());
  // Enough was acknowledged for the test to mean something.
  EXPECT_GT(acked, 10u);

  // Queries keep working, and the refused apply changed nothing.
  ExpectStateAt(*server, stream, acked);
  v1::MatchExternalKvPrefixResponse prefix;
  EXPECT_TRUE(server->stub()
                  .MatchExternalKvPrefix(Deadline().get(),
                                         PrefixRequest({stream.universe()[0],
                                                        stream.universe()[1]}),
                                         &prefix)
                  .ok());
  // The disk is still full: a retry is refused the same way.
  v1::ApplyExternalKvBatchResponse response;
  const absl::Status retry =
      Send(server->stub(), stream.request(acked + 1), &response);
  EXPECT_EQ(retry.code(), absl::StatusCode::kUnavailable) << retry;
  server->process().Kill();

  DurableServerOptions unlimited = options_;
  std::unique_ptr<DurableServer> restarted = DurableServer::Start(unlimited);
  ASSERT_NE(restarted, nullptr);
  ExpectStateAt(*restarted, stream, acked);
  // The bridge's retry now goes through.
  ASSERT_TRUE(
      Send(restarted->stub(), stream.request(acked + 1), &response).ok());
  EXPECT_FALSE(response.duplicate());
  ExpectStateAt(*restarted, stream, acked + 1);
  restarted->Stop();
}

// Bad values are start-up errors naming the variable and the value: exit 2
// for the tuning variables (checked with or without a data directory; the
// checkpoint timeout among them), exit 1 for a data directory that cannot
// be created.
TEST_F(DurabilityFaultsTest, ConfigurationErrorsStopTheServer) {
  DurableServerOptions bad_sync;
  bad_sync.wal_sync = "sometimes";
  ServerExit exit = RunServerToExit(bad_sync);
  ASSERT_TRUE(exit.status.has_value());
  EXPECT_TRUE(exit.status->exited && exit.status->code == 2)
      << exit.status->ToString() << "\n"
      << exit.output;
  EXPECT_THAT(exit.output,
              AllOf(HasSubstr("KV_INDEXER_WAL_SYNC"), HasSubstr("sometimes")));

  DurableServerOptions small = options_;
  small.checkpoint_bytes = (1 << 20) - 1;
  exit = RunServerToExit(small);
  ASSERT_TRUE(exit.status.has_value());
  EXPECT_TRUE(exit.status->exited && exit.status->code == 2)
      << exit.status->ToString() << "\n"
      << exit.output;
  EXPECT_THAT(exit.output, AllOf(HasSubstr("KV_INDEXER_CHECKPOINT_BYTES"),
                                 HasSubstr("1048575")));

  DurableServerOptions short_timeout = options_;
  short_timeout.extra_env["KV_INDEXER_CHECKPOINT_TIMEOUT_MS"] = "999";
  exit = RunServerToExit(short_timeout);
  ASSERT_TRUE(exit.status.has_value());
  EXPECT_TRUE(exit.status->exited && exit.status->code == 2)
      << exit.status->ToString() << "\n"
      << exit.output;
  EXPECT_THAT(exit.output, AllOf(HasSubstr("KV_INDEXER_CHECKPOINT_TIMEOUT_MS"),
                                 HasSubstr("\"999\""), HasSubstr("86400000")));

  // A data directory below a regular file cannot be created.
  const std::string file = scratch_->Sub("a-file");
  ASSERT_TRUE(WriteWholeFile(file, "x").ok());
  DurableServerOptions uncreatable = options_;
  uncreatable.data_dir = file + "/data";
  exit = RunServerToExit(uncreatable);
  ASSERT_TRUE(exit.status.has_value());
  EXPECT_TRUE(exit.status->exited && exit.status->code == 1)
      << exit.status->ToString() << "\n"
      << exit.output;
  EXPECT_THAT(exit.output, HasSubstr(uncreatable.data_dir));
}

}  // namespace
}  // namespace durability_faults_test
}  // namespace kvindexer::e2e
