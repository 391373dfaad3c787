// DurableStore in one process. A "crash" destroys the store, the Indexer
// and the backend, nothing else; a restart opens the same directory with a
// fresh backend and Indexer. What the store must bring back is compared as
// text: the host's records and markers (DurableState::ExportHost) and every
// placement the backend holds.
#include "durable/durable_store.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/heartbeat_header.h"
#include "common/wire_vocabulary.h"
#include "core/indexer.h"
#include "durable/crc32c.h"
#include "durable/data_dir.h"
#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/spdlog.h"
#include "tests/support/durable_store_fixture.h"
#include "tests/support/fake_clock.h"
#include "tests/support/forwarding_file_io.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/test_log_capture.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace {

using ::testing::HasSubstr;

// The real system calls, with writes to chosen files failing with ENOSPC.
class PathFailingIo final : public ForwardingFileIo {
 public:
  // Writes to files whose name ends with this fail ("" fails none).
  void FailWritesTo(std::string suffix) {
    std::lock_guard<std::mutex> lock(mu_);
    suffix_ = std::move(suffix);
  }

  ssize_t Write(int fd, const void* data, size_t size) override {
    if (ShouldFail(fd)) {
      errno = ENOSPC;
      return -1;
    }
    return ForwardingFileIo::Write(fd, data, size);
  }

 private:
  bool ShouldFail(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    return FdPathEndsWith(fd, suffix_);
  }
  std::mutex mu_;
  std::string suffix_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST_F(DurableStoreTest, FreshDirectoryGetsAnEmptyCheckpointAndALog) {
  StartOk(Options());
  EXPECT_EQ(store().recovery().log_records, 0u);
  EXPECT_FALSE(store().recovery().started_empty);
  EXPECT_EQ(Files(),
            (std::set<std::string>{CheckpointFileName(1), WalFileName(1)}));
  EXPECT_EQ(indexer().durable_state().worker_count(), 0u);
}

TEST_F(DurableStoreTest, RestartRestoresRecordsPlacementsAndGate) {
  StartOk(Options());
  Workload();
  const std::string before = State();
  ASSERT_THAT(before, HasSubstr("w1"));
  Crash();

  TestLogCapture log;
  StartOk(Options());
  EXPECT_EQ(State(), before);
  EXPECT_GT(store().recovery().log_records, 0u);
  EXPECT_GT(store().recovery().log_bytes, 0u);
  EXPECT_GT(store().recovery().workers, 0u);
  EXPECT_EQ(store().recovery().placements,
            node_->backend.model().placement_count());
  EXPECT_TRUE(
      Logged(log, spdlog::level::info,
             absl::StrCat("recovered ", store().recovery().workers,
                          " workers, ", store().recovery().placements,
                          " placements from checkpoint 1 plus ",
                          store().recovery().log_records, " log records")));
  // Where the time went, and the log's rate.
  EXPECT_TRUE(
      Logged(log, spdlog::level::info,
             absl::StrCat("(checkpoint ", store().recovery().checkpoint_ms,
                          " ms, log ", store().recovery().log_ms, " ms: ")));

  // Gate continuity: the checkpoint survives, the next seq is accepted, a
  // repeat is a duplicate and a gap still invalidates.
  EXPECT_EQ(Probe("w1", "e1"), 12u);
  ApplyOk(Batch("w1", "addr-1").Gated("e1", 13).Report(kTierHbm, {40}));
  v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(
      indexer()
          .operations()
          .Apply(Batch("w1", "addr-1").Gated("e1", 13).Report(kTierHbm, {41}),
                 &resp)
          .Wait()
          .ok());
  EXPECT_TRUE(resp.duplicate());
  EXPECT_EQ(Apply(Batch("w1", "addr-1").Gated("e1", 15)).code(),
            absl::StatusCode::kFailedPrecondition);
  // w2's gap before the crash still holds: it is not ready.
  const std::optional<WorkerRecord> w2 =
      indexer().operator_view().WorkerState("w2");
  ASSERT_TRUE(w2.has_value());
  EXPECT_FALSE(w2->ready);

  // A second restart brings back the post-restart mutations too.
  const std::string after = State();
  Crash();
  StartOk(Options());
  EXPECT_EQ(State(), after);
}

TEST_F(DurableStoreTest, SyncNoneSurvivesAProcessCrash) {
  DurableOptions options = Options();
  options.sync = WalSync::kNone;
  StartOk(options);
  Workload();
  const std::string before = State();
  Crash();
  StartOk(options);
  EXPECT_EQ(State(), before);
}

TEST_F(DurableStoreTest, CheckpointsBoundTheLogAndKeepOneFallback) {
  StartOk(Options(/*checkpoint_bytes=*/2048));
  Workload();
  const uint64_t next_seq = ApplyUntilCheckpoints(13, 3);
  const std::string before = State();
  const uint64_t written = store().checkpoints_written();

  // Two generations remain: the newest checkpoint with its log, and the
  // one before as a fallback.
  const std::set<std::string> files = Files();
  ASSERT_EQ(files.size(), 4u) << ::testing::PrintToString(files);
  const uint64_t newest = written + 1;  // generation 1 is the fresh one
  EXPECT_EQ(files,
            (std::set<std::string>{
                CheckpointFileName(newest - 1), CheckpointFileName(newest),
                WalFileName(newest - 1), WalFileName(newest)}));
  Crash();

  StartOk(Options(2048));
  EXPECT_EQ(State(), before);
  EXPECT_EQ(store().recovery().checkpoint_generation, newest);
  EXPECT_FALSE(store().recovery().checkpoint_fallback);
  EXPECT_EQ(Probe("w1", "e1"), next_seq - 1);
}

// A log replayed at start-up that is already past the threshold is
// checkpointed at once, so the next start-up replays little.
TEST_F(DurableStoreTest, LongLogIsCheckpointedRightAfterRecovery) {
  StartOk(Options());
  Workload();
  for (uint64_t seq = 13; seq < 60; ++seq) {
    ApplyOk(Batch("w1", "addr-1").Gated("e1", seq).Report(kTierHbm, {100}));
  }
  const std::string before = State();
  Crash();

  StartOk(Options(/*checkpoint_bytes=*/1024));
  ASSERT_GE(store().recovery().log_bytes, 1024u);
  store().WaitForCheckpoints();
  EXPECT_EQ(store().checkpoints_written(), 1u);
  EXPECT_TRUE(Files().count(CheckpointFileName(2)));
  Crash();
  StartOk(Options(1024));
  EXPECT_EQ(store().recovery().checkpoint_generation, 2u);
  EXPECT_EQ(store().recovery().log_records, 0u);
  EXPECT_EQ(State(), before);
}

// Recovery fills a backend of ABI 1.4 as a bulk load: the load begins
// before the first recovered mutation and ends, published, before Open
// returns; after it the store's own mutations come in service.
TEST_F(DurableStoreTest, RecoveryIsOneBulkLoadOfTheBackend) {
  StartOk(Options());
  EXPECT_EQ(node_->backend.mode_changes.size(), 2u) << "a fresh directory";
  Workload();
  const std::string before = State();
  Crash();

  StartOk(Options());
  const std::vector<ModelBackend::ModeChange>& changes =
      node_->backend.mode_changes;
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].mode, WriteMode::kBulkLoad);
  EXPECT_EQ(changes[0].applies_before, 0u);
  EXPECT_EQ(changes[1].mode, WriteMode::kServing);
  EXPECT_EQ(changes[1].applies_before, node_->backend.applies.size());
  EXPECT_GT(changes[1].applies_before, 0u) << "recovery applied nothing";
  EXPECT_EQ(State(), before);
  ApplyOk(Batch("w1", "addr-1").Gated("e1", 13).Report(kTierHbm, {40}));
  EXPECT_EQ(node_->backend.mode_changes.size(), 2u);
}

// A record the backend refuses at replay is skipped (it was being taken
// back when the process died), but a backend that fails (INTERNAL: it
// cannot continue) stops the start at the first such record instead of
// refusing every later one.
TEST_F(DurableStoreTest, ABackendThatFailsDuringReplayStopsTheStart) {
  StartOk(Options());
  Workload();
  Crash();

  node_ = std::make_unique<Node>();
  node_->backend.fail_with =
      BackendStatus{BackendCode::kInternal, "out of memory"};
  DurableOptions options = Options();
  options.backend = &node_->backend;
  absl::StatusOr<std::unique_ptr<DurableStore>> store =
      DurableStore::Open(options, &node_->indexer.durable_state());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(store.status().message(), HasSubstr(": the backend failed: "));
  EXPECT_THAT(store.status().message(), HasSubstr("out of memory"));
  EXPECT_EQ(node_->backend.applies.size(), 1u) << "one record tried";
  node_.reset();

  node_ = std::make_unique<Node>();
  node_->backend.fail_with = BackendStatus{BackendCode::kUnavailable, "busy"};
  options.backend = &node_->backend;
  TestLogCapture log;
  store = DurableStore::Open(options, &node_->indexer.durable_state());
  ASSERT_TRUE(store.ok()) << store.status();
  node_->store = *std::move(store);
  EXPECT_GT(node_->backend.applies.size(), 1u);
  EXPECT_TRUE(Logged(log, spdlog::level::warn,
                     "skipped: the backend refused it at replay"));
}

// A backend used at an older minor is never asked: it has no SetWriteMode.
TEST_F(DurableStoreTest, RecoveryWithoutABulkLoad) {
  StartOk(Options());
  Workload();
  const std::string before = State();
  Crash();

  DurableOptions older = Options();
  older.backend_abi_minor = 3;
  StartOk(older);
  EXPECT_TRUE(node_->backend.mode_changes.empty());
  EXPECT_EQ(State(), before);
}

// Closing the store abandons a checkpoint in progress and leaves no
// temporary file; whichever way the race went, the state comes back.
TEST_F(DurableStoreTest, ClosingDuringACheckpointLeavesNoTemporaryFile) {
  StartOk(Options());
  Workload();
  for (int i = 0; i < 40; ++i) {
    ApplyOk(Batch(absl::StrCat("bulk", i), "addr")
                .Report(kTierDram, Range(10000 + 1000 * i, 1000)));
  }
  const std::string before = State();
  Crash();
  StartOk(Options(/*checkpoint_bytes=*/1024));  // starts a checkpoint
  Crash();
  for (const std::string& name : Files()) {
    EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
  }
  StartOk(Options());
  EXPECT_EQ(State(), before);
}

TEST_F(DurableStoreTest, ConcurrentWritersAcrossRotations) {
  StartOk(Options(/*checkpoint_bytes=*/4096));
  constexpr int kThreads = 4;
  constexpr int kApplies = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      const std::string worker = absl::StrCat("t", t);
      for (int i = 0; i < kApplies; ++i) {
        v1::ApplyExternalKvBatchResponse resp;
        const absl::Status s =
            indexer()
                .operations()
                .Apply(Batch(worker, "addr").Report(kTierHbm, {t * 100000 + i}),
                       &resp)
                .Wait();
        EXPECT_TRUE(s.ok()) << s;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  store().WaitForCheckpoints();
  EXPECT_GT(store().checkpoints_written(), 0u);
  const std::string before = State();
  Crash();
  StartOk(Options(4096));
  EXPECT_EQ(State(), before);
}

TEST_F(DurableStoreTest, DamagedNewestCheckpointFallsBackAGeneration) {
  StartOk(Options(/*checkpoint_bytes=*/2048));
  Workload();
  ApplyUntilCheckpoints(13, 2);
  const std::string before = State();
  const uint64_t newest = store().checkpoints_written() + 1;
  Crash();

  FlipByte(Path(CheckpointFileName(newest)), kFileHeaderBytes + 12);
  TestLogCapture log;
  StartOk(Options(2048));
  EXPECT_EQ(State(), before);
  EXPECT_TRUE(store().recovery().checkpoint_fallback);
  EXPECT_FALSE(store().recovery().started_empty);
  EXPECT_EQ(store().recovery().checkpoint_generation, newest - 1);
  EXPECT_TRUE(Logged(log, spdlog::level::err, CheckpointFileName(newest)));
  EXPECT_TRUE(Files().count(CheckpointFileName(newest) + ".corrupt"));
  EXPECT_FALSE(Files().count(CheckpointFileName(newest)));
}

TEST_F(DurableStoreTest, OnlyCheckpointDamagedStartsEmpty) {
  StartOk(Options());
  Workload();
  Crash();

  FlipByte(Path(CheckpointFileName(1)), 3);  // the magic
  TestLogCapture log;
  StartOk(Options());
  EXPECT_TRUE(store().recovery().started_empty);
  EXPECT_EQ(indexer().durable_state().worker_count(), 0u);
  EXPECT_EQ(node_->backend.model().placement_count(), 0u);
  EXPECT_TRUE(Logged(log, spdlog::level::err, CheckpointFileName(1)));
  EXPECT_EQ(Files(),
            (std::set<std::string>{CheckpointFileName(1) + ".corrupt",
                                   WalFileName(1) + ".corrupt",
                                   CheckpointFileName(2), WalFileName(2)}));

  // The new generation works like any other.
  ApplyOk(Batch("s9", "addr").Report(kTierHbm, {7}));
  const std::string after = State();
  Crash();
  StartOk(Options());
  EXPECT_FALSE(store().recovery().started_empty);
  EXPECT_EQ(State(), after);
}

// Rewrites the format version in the header of `path`, with a valid
// header CRC.
void SetHeaderVersion(const std::string& path, uint32_t version) {
  std::string bytes = ReadAll(path);
  ASSERT_GE(bytes.size(), kFileHeaderBytes);
  for (int i = 0; i < 4; ++i) {
    bytes[8 + i] = static_cast<char>((version >> (8 * i)) & 0xFF);
  }
  const uint32_t crc = Crc32c(std::string_view(bytes.data(), 24));
  for (int i = 0; i < 4; ++i) {
    bytes[24 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

TEST_F(DurableStoreTest, NewerFormatVersionRefusesAndTouchesNothing) {
  StartOk(Options());
  Workload();
  Crash();

  // Rewrite checkpoint 1's header as version kFormatVersion + 1, with a
  // valid header CRC.
  const std::string path = Path(CheckpointFileName(1));
  SetHeaderVersion(path, kFormatVersion + 1);
  const std::string bytes = ReadAll(path);
  const std::set<std::string> files = Files();
  const std::string wal = ReadAll(Path(WalFileName(1)));

  const absl::Status s = Start(Options());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(CheckpointFileName(1)));
  EXPECT_EQ(Files(), files);
  EXPECT_EQ(ReadAll(path), bytes);
  EXPECT_EQ(ReadAll(Path(WalFileName(1))), wal);
}

// A directory written by a build of the older format: its log is not
// continued (a binary of that version would read this build's records in
// it), but closed behind a checkpoint of this version.
TEST_F(DurableStoreTest, AnOlderFormatLogIsClosedBehindACheckpoint) {
  StartOk(Options());
  Workload();
  const std::string before = State();
  Crash();
  SetHeaderVersion(Path(CheckpointFileName(1)), kFormatVersion - 1);
  SetHeaderVersion(Path(WalFileName(1)), kFormatVersion - 1);
  const std::string old_log = ReadAll(Path(WalFileName(1)));

  TestLogCapture log;
  StartOk(Options());
  EXPECT_EQ(State(), before);
  EXPECT_TRUE(Files().count(CheckpointFileName(2)));
  EXPECT_TRUE(Files().count(WalFileName(2)));
  EXPECT_EQ(ReadAll(Path(WalFileName(1))), old_log);
  EXPECT_TRUE(Logged(log, spdlog::level::warn,
                     WalFileName(1) + " is of an older format version"));
  ApplyOk(Batch("w1", "addr-1").Gated("e1", 13).Report(kTierHbm, {70}));
  EXPECT_EQ(ReadAll(Path(WalFileName(1))), old_log);
  const std::string after = State();
  Crash();
  TestLogCapture second;
  StartOk(Options());
  EXPECT_EQ(State(), after);
  EXPECT_FALSE(Logged(second, spdlog::level::warn, "older format version"));
}

TEST_F(DurableStoreTest, SecondOpenNamesTheHolder) {
  StartOk(Options());
  Node other;
  const absl::StatusOr<std::unique_ptr<DurableStore>> second =
      DurableStore::Open(Options(), &other.indexer.durable_state());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr(std::to_string(::getpid())));
}

TEST_F(DurableStoreTest, WriteFailureRefusesTheMutationAndLosesNothing) {
  PathFailingIo io;
  const auto close_store = CloseOnExit();
  DurableOptions options = Options();
  options.io = &io;
  StartOk(options);
  Workload();
  const std::string before = State();

  io.FailWritesTo(".log");
  const absl::Status s =
      Apply(Batch("w1", "addr-1").Gated("e1", 13).Report(kTierHbm, {50}));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("state log write failed"));
  v1::ConfigureExpectedWorkersResponse configure;
  EXPECT_EQ(indexer()
                .operations()
                .Configure(ExpectedWorkers().Worker("w1", "addr-1"), &configure)
                .Wait()
                .code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(State(), before);
  // Queries keep working.
  v1::MatchExternalKvResponse match;
  EXPECT_TRUE(indexer()
                  .operations()
                  .Match(test_support::MatchRequest({2, 3}), &match)
                  .ok());
  EXPECT_EQ(match.matches_size(), 1);

  // Once the disk has room again the same apply goes through.
  io.FailWritesTo("");
  ApplyOk(Batch("w1", "addr-1").Gated("e1", 13).Report(kTierHbm, {50}));
  const std::string after = State();
  EXPECT_NE(after, before);
  Crash();
  StartOk(Options());
  EXPECT_EQ(State(), after);
  EXPECT_EQ(Probe("w1", "e1"), 13u);
}

TEST_F(DurableStoreTest, CheckpointFailureIsRetriedAndNeverRefusesApplies) {
  PathFailingIo io;
  const auto close_store = CloseOnExit();
  DurableOptions options = Options(/*checkpoint_bytes=*/2048);
  options.io = &io;
  StartOk(options);
  Workload();
  TestLogCapture log;
  io.FailWritesTo(".ckpt.tmp");
  const uint64_t seq = ApplyW1Batches(13, 200);
  EXPECT_EQ(store().checkpoints_written(), 0u);
  EXPECT_TRUE(Logged(log, spdlog::level::err, "checkpoint"));

  EXPECT_GT(store().figures().checkpoint_failures.of(CheckpointFailure::kBuild),
            0u);
  EXPECT_EQ(
      store().figures().checkpoint_failures.of(CheckpointFailure::kTimeout),
      0u);

  io.FailWritesTo("");
  ApplyUntilCheckpoints(seq, 1);
  const std::string before = State();
  Crash();
  StartOk(Options(2048));
  EXPECT_EQ(State(), before);
}

// The real system calls, except that the first fsync of `dir` once
// `file` exists in it fails with EIO: a directory sync that fails right
// after a checkpoint was renamed into place.
class DirSyncFailingIo final : public ForwardingFileIo {
 public:
  DirSyncFailingIo(std::string dir, std::string file)
      : dir_(std::move(dir)), file_(std::move(file)) {}
  int Fsync(int fd) override {
    if (!failed_.load() && IsDir(fd) &&
        ::access((dir_ + "/" + file_).c_str(), F_OK) == 0) {
      failed_.store(true);
      errno = EIO;
      return -1;
    }
    return ForwardingFileIo::Fsync(fd);
  }
  bool failed() const { return failed_.load(); }

 private:
  bool IsDir(int fd) const {
    std::error_code ec;  // a deleted file's link does not resolve
    const std::string path = FdPath(fd);
    return !path.empty() && fs::equivalent(path, dir_, ec);
  }
  const std::string dir_;
  const std::string file_;
  std::atomic<bool> failed_{false};
};

// A checkpoint renamed into place whose directory sync failed is used and
// tracked like any other: later checkpoints delete it in turn.
TEST_F(DurableStoreTest, CheckpointInPlaceWithAFailedDirectorySyncIsKept) {
  DirSyncFailingIo io(dir_.path(), CheckpointFileName(2));
  const auto close_store = CloseOnExit();
  DurableOptions options = Options(/*checkpoint_bytes=*/2048);
  options.io = &io;
  TestLogCapture log;
  StartOk(options);
  Workload();
  ApplyUntilCheckpoints(13, 3);
  EXPECT_TRUE(io.failed());
  EXPECT_TRUE(Logged(log, spdlog::level::warn,
                     CheckpointFileName(2) + " is in place but"));
  // Generations 3 and 4 remain; 2 was deleted in its turn, not forgotten.
  EXPECT_EQ(Files(),
            (std::set<std::string>{CheckpointFileName(3), CheckpointFileName(4),
                                   WalFileName(3), WalFileName(4)}));
  const std::string before = State();
  Crash();
  StartOk(Options(2048));
  EXPECT_EQ(State(), before);
}

// The log cut inside its last record, or with a flipped bit in it, gives
// the state before that record.
TEST_F(DurableStoreTest, TornTailRecoversTheIntactPrefix) {
  StartOk(Options());
  Workload();
  const std::string wal = Path(WalFileName(1));
  const std::string before = State();
  const uint64_t size_before = fs::file_size(wal);
  ApplyOk(Batch("w1", "addr-1").Gated("e1", 13).Report(kTierHbm, {60, 61}));
  const uint64_t size_after = fs::file_size(wal);
  ASSERT_GT(size_after, size_before);
  Crash();

  TestTempDir copies;
  const std::vector<std::pair<std::string, uint64_t>> cases = {
      {"cut header", size_before + 3},
      {"cut payload", size_before + kRecordHeaderBytes + 1},
      {"one byte short", size_after - 1},
      {"flipped bit", size_after},
  };
  for (const auto& [name, keep] : cases) {
    SCOPED_TRACE(name);
    const fs::path copy = fs::path(copies.path()) / "dir";
    fs::remove_all(copy);
    fs::copy(dir_.path(), copy);
    fs::remove(copy / "LOCK");
    const std::string copied_wal = (copy / WalFileName(1)).string();
    fs::resize_file(copied_wal, keep);
    if (keep == size_after) FlipByte(copied_wal, size_after - 2);

    TestLogCapture log;
    DurableOptions options = Options();
    options.dir = copy.string();
    StartOk(options);
    EXPECT_EQ(State(), before);
    EXPECT_TRUE(store().recovery().torn_tail);
    EXPECT_FALSE(store().recovery().log_damaged);
    EXPECT_EQ(store().recovery().cut_bytes, keep - size_before);
    EXPECT_TRUE(Logged(log, spdlog::level::warn, WalFileName(1)));
    EXPECT_THAT(log.Lines(spdlog::level::err), ::testing::IsEmpty());
    EXPECT_EQ(fs::file_size(copied_wal), size_before);
    EXPECT_EQ(Probe("w1", "e1"), 12u);
    Crash();
  }
}

// A later log file after a cut one holds records that would apply after
// lost ones: it is set aside, at ERROR since its records are lost.
TEST_F(DurableStoreTest, LogAfterATornLogIsSetAside) {
  StartOk(Options(/*checkpoint_bytes=*/2048));
  Workload();
  ApplyUntilCheckpoints(13, 1);
  const uint64_t newest = store().checkpoints_written() + 1;
  Crash();
  // Damage the newest checkpoint, so that the one before is loaded and its
  // log replayed, and cut that log: the newest log comes after the hole.
  FlipByte(Path(CheckpointFileName(newest)), kFileHeaderBytes + 12);
  const std::string cut = Path(WalFileName(newest - 1));
  fs::resize_file(cut, fs::file_size(cut) - 1);
  TestLogCapture log;
  StartOk(Options(2048));
  EXPECT_TRUE(store().recovery().torn_tail);
  EXPECT_TRUE(store().recovery().checkpoint_fallback);
  EXPECT_TRUE(Files().count(WalFileName(newest) + ".corrupt"));
  EXPECT_TRUE(Logged(log, spdlog::level::err,
                     WalFileName(newest) + " follows a cut or missing log"));
  EXPECT_TRUE(store().recovery().log_damaged);
  const std::string after = State();
  Crash();
  StartOk(Options(2048));
  EXPECT_EQ(State(), after);
}

}  // namespace
}  // namespace kvindexer::durable
