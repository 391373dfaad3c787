// Checkpoints built by merging (durable/checkpoint_merge.h) are the whole
// build's, byte for byte: a store under a random workload of every kind of
// mutation rotates every couple of kilobytes, and each checkpoint it writes
// is rebuilt from the same files both ways and compared. Blocks shared by
// many workers and touched again and again (a few hashes) and blocks mostly
// left alone between checkpoints (many) are both covered. And a base that
// is not in the build order is left to the whole build.
#include "durable/checkpoint_merge.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/build_deadline.h"
#include "durable/checkpoint_file.h"
#include "durable/compactor.h"
#include "durable/data_dir.h"
#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv_indexer_state.pb.h"
#include "tests/support/durable_store_fixture.h"
#include "tests/support/random_workload.h"
#include "tests/support/requests.h"
#include "tests/support/test_files.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::durable {
namespace checkpoint_merge_test {

using test_support::RandomWorkload;

// The generations of the directory's files of one kind, ascending.
std::vector<uint64_t> Generations(const std::string& dir,
                                  std::string_view prefix,
                                  std::string_view suffix) {
  std::vector<uint64_t> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !name.ends_with(suffix)) continue;
    const std::string digits =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), ::isdigit)) {
      continue;
    }
    out.push_back(std::stoull(digits));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Builds checkpoint <job.target()> in `dir` (which holds the job's files)
// the whole way and by merging; returns both sealed files' bytes. The merge
// must not have fallen back.
std::pair<std::string, std::string> BuildBothWays(const std::string& dir,
                                                  const CompactionJob& job) {
  const BuildDeadline never;
  const std::string tmp = CheckpointTmpPath(dir, job.target());
  const absl::Status whole =
      BuildCheckpoint(dir, job, &FileIo::Real(), never,
                      CheckpointFinish::kSealOnly, BuildMethod::kWhole);
  EXPECT_TRUE(whole.ok()) << whole;
  const std::string whole_bytes = ReadTestFile(tmp);
  std::filesystem::remove(tmp);

  std::unique_ptr<CheckpointWriter> writer;
  const absl::StatusOr<MergeOutcome> merged =
      WriteMergedCheckpoint(dir, job, &FileIo::Real(), never,
                            /*max_blocks=*/0, &writer);
  EXPECT_TRUE(merged.ok()) << merged.status();
  if (!merged.ok()) return {whole_bytes, ""};
  EXPECT_EQ(*merged, MergeOutcome::kWritten);
  if (writer == nullptr) return {whole_bytes, ""};
  EXPECT_TRUE(writer->Seal().ok());
  const std::string merged_bytes = ReadTestFile(tmp);
  std::filesystem::remove(tmp);
  return {whole_bytes, merged_bytes};
}

// (seed, hash range of the workload).
class CheckpointMergeTest
    : public DurableStoreTest,
      public ::testing::WithParamInterface<std::tuple<uint32_t, int>> {
 protected:
  // When the store holds a checkpoint built since the last call, rebuilds
  // it both ways from the files it was built from and compares.
  void CheckNewestCheckpoint() {
    store().WaitForCheckpoints();
    const std::vector<uint64_t> checkpoints =
        Generations(dir_.path(), "checkpoint-", ".ckpt");
    if (checkpoints.size() < 2 || checkpoints.back() == checked_) return;
    const uint64_t target = checkpoints.back();
    const uint64_t base = checkpoints[checkpoints.size() - 2];
    TestTempDir scratch;
    std::filesystem::copy_file(Path(CheckpointFileName(base)),
                               scratch.Sub(CheckpointFileName(base)));
    for (uint64_t g = base; g < target; ++g) {
      std::filesystem::copy_file(Path(WalFileName(g)),
                                 scratch.Sub(WalFileName(g)));
    }
    CompactionJob job;
    job.base = base;
    job.last_wal = target - 1;
    const auto [whole, merged] = BuildBothWays(scratch.path(), job);
    SCOPED_TRACE(absl::StrCat("checkpoint ", target, " from ", base));
    EXPECT_EQ(merged, whole);
    EXPECT_EQ(ReadTestFile(Path(CheckpointFileName(target))), whole);
    checked_ = target;
    ++compared_;
  }

  uint64_t checked_ = 0;
  int compared_ = 0;
};

TEST_P(CheckpointMergeTest, MergedCheckpointsAreTheWholeBuildsByteForByte) {
  const auto [seed, hash_range] = GetParam();
  StartOk(Options(/*checkpoint_bytes=*/2048));
  RandomWorkload::Tally tally;
  RandomWorkload workload(seed, &indexer(), &node_->clock, &tally, hash_range);
  for (int step = 0; step < 800; ++step) {
    workload.Step();
    // Namespaced streams too, whose backend ids sort after legacy ones.
    if (step % 8 == 0) {
      const uint32_t n = static_cast<uint32_t>(step / 8);
      test_support::Batch batch("w" + std::to_string(n % 3), "10.0.0.9:9");
      *batch.mutable_request()->mutable_stream_id() = test_support::StreamIdOf(
          n % 2 == 0 ? "ns-a" : "ns-b", "w" + std::to_string(n % 3), n % 2);
      const int64_t hash = static_cast<int64_t>(n * 7919 % hash_range);
      if (n % 5 == 4) {
        batch.Revoke(kTierHbm, {hash, hash + 1});
      } else {
        batch.Report(kTierHbm, {hash, hash + 1}, {}, {16, 0});
      }
      ApplyOk(batch.request());
    }
    if (step % 40 == 39) CheckNewestCheckpoint();
  }
  CheckNewestCheckpoint();
  EXPECT_GE(compared_, 5);
  EXPECT_GT(tally.replaced, 0);
  EXPECT_GT(tally.gaps + tally.scale_ins + tally.removed, 0);

  // And what the merged checkpoints hold restores the state.
  const std::string before = State();
  Crash();
  StartOk(Options(/*checkpoint_bytes=*/2048));
  EXPECT_EQ(State(), before);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CheckpointMergeTest,
                         ::testing::Combine(::testing::Values(1u, 2u, 3u),
                                            ::testing::Values(16, 4096)));

// The whole build writes a worker's parts in backend id order; a base in
// another order (one written by hand here) cannot be merged, and the build
// falls back to the whole one, which reads any order.
TEST(CheckpointMergeOrderTest, ABaseOutOfOrderIsLeftToTheWholeBuild) {
  TestTempDir dir;
  auto writer = CheckpointWriter::Begin(dir.path(), 1, &FileIo::Real());
  ASSERT_TRUE(writer.ok()) << writer.status();
  const auto add = [&](const state::v1::CheckpointChunk& chunk) {
    ASSERT_TRUE((*writer)->Add(chunk.SerializeAsString()).ok());
  };
  for (const char* id : {"b", "a"}) {
    state::v1::CheckpointChunk worker;
    worker.mutable_worker()->set_worker_id(id);
    add(worker);
  }
  for (const char* id : {"b", "a"}) {
    state::v1::CheckpointChunk part;
    part.mutable_placements()->set_worker_id(id);
    part.mutable_placements()->set_tier(kTierHbm);
    part.mutable_placements()->add_hashes(7);
    part.mutable_placements()->add_component_masks(0);
    part.mutable_placements()->add_block_sizes(16);
    add(part);
  }
  ASSERT_TRUE((*writer)->Commit().ok());
  WriteTestFile(dir.Sub(WalFileName(1)), EncodeFileHeader(FileKind::kWal, 1));

  CompactionJob job;
  job.base = 1;
  job.last_wal = 1;
  const BuildDeadline never;
  std::unique_ptr<CheckpointWriter> merged;
  const absl::StatusOr<MergeOutcome> outcome =
      WriteMergedCheckpoint(dir.path(), job, &FileIo::Real(), never,
                            /*max_blocks=*/0, &merged);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, MergeOutcome::kNotMergeable);
  EXPECT_EQ(merged, nullptr);
  EXPECT_FALSE(std::filesystem::exists(CheckpointTmpPath(dir.path(), 2)));

  ASSERT_TRUE(BuildCheckpoint(dir.path(), job, &FileIo::Real(), never,
                              CheckpointFinish::kPublish)
                  .ok());
  const std::string built = ReadTestFile(dir.Sub(CheckpointFileName(2)));
  std::filesystem::remove(dir.Sub(CheckpointFileName(2)));
  ASSERT_TRUE(BuildCheckpoint(dir.path(), job, &FileIo::Real(), never,
                              CheckpointFinish::kPublish, BuildMethod::kWhole)
                  .ok());
  EXPECT_EQ(built, ReadTestFile(dir.Sub(CheckpointFileName(2))));
}

// A log file of generation `g` in `dir` holding `batches` as applies.
void WriteLog(const TestTempDir& dir, uint64_t g,
              const std::vector<test_support::Batch>& batches) {
  std::string log = EncodeFileHeader(FileKind::kWal, g);
  state::v1::WalRecord record;
  for (const test_support::Batch& batch : batches) {
    *record.mutable_apply() = batch.request();
    AppendRecord(record.SerializeAsString(), &log);
  }
  WriteTestFile(dir.Sub(WalFileName(g)), log);
}

// Hashes first, first + step, ... (count of them).
std::vector<int64_t> Hashes(int64_t first, int64_t count, int64_t step = 1) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(first + i * step);
  return out;
}

// Applies of `worker` reporting (or revoking) `hashes` at `tier`, at most
// a request's 16,384 hashes each.
std::vector<test_support::Batch> Applies(const std::string& worker,
                                         uint32_t tier,
                                         const std::vector<int64_t>& hashes,
                                         bool revoke = false) {
  std::vector<test_support::Batch> out;
  for (size_t at = 0; at < hashes.size(); at += 16'384) {
    const std::vector<int64_t> piece(
        hashes.begin() + static_cast<std::ptrdiff_t>(at),
        hashes.begin() +
            static_cast<std::ptrdiff_t>(std::min(hashes.size(), at + 16'384)));
    test_support::Batch batch(worker, "addr");
    if (revoke) {
      batch.Revoke(tier, piece);
    } else {
      batch.Report(tier, piece);
    }
    out.push_back(std::move(batch));
  }
  return out;
}

std::vector<test_support::Batch> Concat(
    std::initializer_list<std::vector<test_support::Batch>> lists) {
  std::vector<test_support::Batch> out;
  for (const auto& list : lists)
    out.insert(out.end(), list.begin(), list.end());
  return out;
}

// Checkpoint 2 (the whole build of `batches` over an empty checkpoint 1),
// ready to be the base of checkpoint 3 over wal-2.
void WriteBase(const TestTempDir& dir,
               const std::vector<test_support::Batch>& batches) {
  ASSERT_TRUE(WriteEmptyCheckpoint(dir.path(), 1, &FileIo::Real()).ok());
  WriteLog(dir, 1, batches);
  CompactionJob job;
  job.base = 1;
  job.last_wal = 1;
  const BuildDeadline never;
  const absl::Status built =
      BuildCheckpoint(dir.path(), job, &FileIo::Real(), never,
                      CheckpointFinish::kPublish, BuildMethod::kWhole);
  ASSERT_TRUE(built.ok()) << built;
}

// A holding of three parts (65,536 placements each but the last), edited
// at and around the parts' edges, merged into, and joined by a worker
// before it and one after it.
TEST(CheckpointMergeLargeTest, AHoldingOfSeveralPartsMergesAtTheirEdges) {
  TestTempDir dir;
  WriteBase(
      dir,
      Concat({Applies("w1", kTierHbm, Hashes(0, 150'000, 2)),
              {test_support::Batch("w2", "a2").Report(kTierDram, {1, 3})}}));
  const int64_t edge = 2 * 65'536;  // the second part's first hash
  WriteLog(
      dir, 2,
      {test_support::Batch("w1", "a1")
           .Revoke(kTierHbm, {edge - 2, edge, 2 * edge - 2, 2 * edge, 0}),
       test_support::Batch("w1", "a1")
           .Report(kTierHbm, {edge - 1, edge + 1, 2 * edge + 1, -5, 300'001},
                   {}, {16, 16, 16, 16, 16}),
       test_support::Batch("w0", "a0").Report(kTierHbm, {edge + 1, 7}),
       test_support::Batch("w9", "a9").Report(kTierSsd, {edge})});
  CompactionJob job;
  job.base = 2;
  job.last_wal = 2;
  const auto [whole, merged] = BuildBothWays(dir.path(), job);
  EXPECT_EQ(merged, whole);
}

// Copied parts are checked as the whole build's restore checks them, so
// both refuse the same base.
TEST(CheckpointMergeOrderTest, APartTheWholeBuildRefusesIsRefused) {
  for (const bool misaligned : {false, true}) {
    SCOPED_TRACE(misaligned ? "misaligned masks" : "no worker record");
    TestTempDir dir;
    auto writer = CheckpointWriter::Begin(dir.path(), 1, &FileIo::Real());
    ASSERT_TRUE(writer.ok()) << writer.status();
    state::v1::CheckpointChunk chunk;
    chunk.mutable_worker()->set_worker_id("a");
    ASSERT_TRUE((*writer)->Add(chunk.SerializeAsString()).ok());
    chunk.mutable_placements()->set_worker_id(misaligned ? "a" : "z");
    chunk.mutable_placements()->set_tier(kTierHbm);
    chunk.mutable_placements()->add_hashes(7);
    chunk.mutable_placements()->add_hashes(8);
    chunk.mutable_placements()->add_component_masks(misaligned ? 1 : 0);
    if (!misaligned) chunk.mutable_placements()->add_component_masks(0);
    ASSERT_TRUE((*writer)->Add(chunk.SerializeAsString()).ok());
    ASSERT_TRUE((*writer)->Commit().ok());
    WriteLog(dir, 1, {});
    CompactionJob job;
    job.base = 1;
    job.last_wal = 1;
    const BuildDeadline never;
    std::unique_ptr<CheckpointWriter> merged;
    const absl::StatusOr<MergeOutcome> outcome = WriteMergedCheckpoint(
        dir.path(), job, &FileIo::Real(), never, /*max_blocks=*/0, &merged);
    EXPECT_EQ(outcome.status().code(), absl::StatusCode::kInternal);
    EXPECT_EQ(BuildCheckpoint(dir.path(), job, &FileIo::Real(), never,
                              CheckpointFinish::kSealOnly, BuildMethod::kWhole)
                  .code(),
              absl::StatusCode::kInternal);
  }
}

// A few blocks that most placements share: naming them names most of the
// index, and the whole build is the one to run.
TEST(CheckpointMergeLargeTest, BlocksHoldingMostPlacementsAreNotMerged) {
  TestTempDir dir;
  const std::vector<int64_t> shared = Hashes(0, 40'000);
  WriteBase(dir, Concat({Applies("w1", kTierHbm, shared),
                         Applies("w2", kTierHbm, shared),
                         Applies("w3", kTierHbm, shared),
                         Applies("w4", kTierHbm, Hashes(100'000, 40'000))}));
  WriteLog(dir, 2, Applies("w1", kTierHbm, shared, /*revoke=*/true));
  CompactionJob job;
  job.base = 2;
  job.last_wal = 2;
  const BuildDeadline never;
  std::unique_ptr<CheckpointWriter> merged;
  const absl::StatusOr<MergeOutcome> outcome = WriteMergedCheckpoint(
      dir.path(), job, &FileIo::Real(), never, /*max_blocks=*/0, &merged);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, MergeOutcome::kNotMergeable);
  EXPECT_EQ(merged, nullptr);
}

// Past the limit (about half the index) the whole build is the cheaper.
TEST(CheckpointMergeOrderTest, LogsNamingMoreBlocksThanTheLimitAreNotMerged) {
  TestTempDir dir;
  ASSERT_TRUE(WriteEmptyCheckpoint(dir.path(), 1, &FileIo::Real()).ok());
  std::string log = EncodeFileHeader(FileKind::kWal, 1);
  state::v1::WalRecord record;
  *record.mutable_apply() =
      test_support::Batch("w1", "addr").Report(kTierHbm, {1, 2, 3}).request();
  AppendRecord(record.SerializeAsString(), &log);
  WriteTestFile(dir.Sub(WalFileName(1)), log);

  CompactionJob job;
  job.base = 1;
  job.last_wal = 1;
  const BuildDeadline never;
  for (const uint64_t limit : {uint64_t{2}, uint64_t{3}}) {
    std::unique_ptr<CheckpointWriter> writer;
    const absl::StatusOr<MergeOutcome> outcome = WriteMergedCheckpoint(
        dir.path(), job, &FileIo::Real(), never, limit, &writer);
    ASSERT_TRUE(outcome.ok()) << outcome.status();
    EXPECT_EQ(*outcome,
              limit < 3 ? MergeOutcome::kNotMergeable : MergeOutcome::kWritten);
    EXPECT_EQ(writer == nullptr, limit < 3);
  }
}

}  // namespace checkpoint_merge_test
}  // namespace kvindexer::durable
