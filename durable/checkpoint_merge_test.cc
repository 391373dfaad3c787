// Checkpoints built by merging (durable/checkpoint_merge.h) are the whole
// build's, byte for byte: a store under a random workload of every kind of
// mutation rotates every couple of kilobytes, and each checkpoint it writes
// is rebuilt from the same files both ways and compared. Blocks shared by
// many workers and touched again and again (a few hashes) and blocks mostly
// left alone between checkpoints (many) are both covered. And a base that
// is not in the build order is left to the whole build.
#include "durable/checkpoint_merge.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
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
