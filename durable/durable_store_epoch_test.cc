// DurableStore and the indexer epoch: kept across an exact recovery, new
// after any loss (durable/epoch_choice.h), and written before serving.
#include <filesystem>
#include <string>

#include "common/uuid.h"
#include "durable/data_dir.h"
#include "durable/indexer_epoch_file.h"
#include "durable/record_framing.h"
#include "tests/support/durable_store_fixture.h"

namespace kvindexer::durable {
namespace epoch_test {
namespace {

class DurableStoreEpochTest : public DurableStoreTest {
 protected:
  DurableOptions BootOptions(const std::string& boot,
                             WalSync sync = WalSync::kAlways,
                             uint64_t checkpoint_bytes = 64ull << 20) {
    DurableOptions options = Options(checkpoint_bytes);
    options.boot_id = boot;
    options.sync = sync;
    return options;
  }
  std::string Epoch() { return indexer().operations().IndexerEpoch(); }
  // The epoch the file holds now.
  std::string FileEpoch() {
    const std::optional<EpochFile> file = ReadEpochFile(dir_.path());
    return file.has_value() ? file->epoch : "";
  }
};

TEST_F(DurableStoreEpochTest, AFreshDirectoryGetsANewEpochAndRecordsIt) {
  StartOk(BootOptions("boot-a"));
  EXPECT_TRUE(IsUuidText(Epoch())) << Epoch();
  EXPECT_FALSE(store().recovery().epoch_kept);
  EXPECT_EQ(FileEpoch(), Epoch());
  EXPECT_EQ(ReadEpochFile(dir_.path())->boot_id, "boot-a");
}

TEST_F(DurableStoreEpochTest, ACrashKeepsTheEpochWithEitherSyncMode) {
  for (WalSync sync : {WalSync::kAlways, WalSync::kNone}) {
    SCOPED_TRACE(sync == WalSync::kAlways ? "always" : "none");
    fs::remove_all(dir_.path());
    StartOk(BootOptions("boot-a", sync));
    Workload();
    const std::string first = Epoch();
    Crash();
    StartOk(BootOptions("boot-a", sync));
    EXPECT_EQ(Epoch(), first);
    EXPECT_TRUE(store().recovery().epoch_kept);
    Crash();
  }
}

TEST_F(DurableStoreEpochTest, ARebootWithoutSyncsChangesTheEpoch) {
  StartOk(BootOptions("boot-a", WalSync::kNone));
  Workload();
  const std::string first = Epoch();
  Crash();
  StartOk(BootOptions("boot-b", WalSync::kNone));
  EXPECT_NE(Epoch(), first);
  EXPECT_FALSE(store().recovery().epoch_kept);
  EXPECT_EQ(FileEpoch(), Epoch());
  // The same boot again keeps the new one.
  const std::string second = Epoch();
  Crash();
  StartOk(BootOptions("boot-b", WalSync::kNone));
  EXPECT_EQ(Epoch(), second);
}

TEST_F(DurableStoreEpochTest, DeletedCheckpointsChangeTheEpoch) {
  StartOk(BootOptions("boot-a"));
  Workload();
  const std::string first = Epoch();
  Crash();
  for (const std::string& name : Files()) {
    if (name.starts_with("checkpoint-")) fs::remove(Path(name));
  }
  StartOk(BootOptions("boot-a"));
  EXPECT_TRUE(store().recovery().started_empty);
  EXPECT_NE(Epoch(), first);
  EXPECT_FALSE(store().recovery().epoch_kept);
}

TEST_F(DurableStoreEpochTest, AnEmptiedDirectoryWithTheEpochFileChangesIt) {
  StartOk(BootOptions("boot-a"));
  Workload();
  const std::string first = Epoch();
  Crash();
  for (const std::string& name : Files()) fs::remove(Path(name));
  ASSERT_TRUE(fs::exists(Path(kEpochFileName)));
  StartOk(BootOptions("boot-a"));
  EXPECT_NE(Epoch(), first);
}

TEST_F(DurableStoreEpochTest, ATornTailKeepsItAndASetAsideLogDoesNot) {
  StartOk(BootOptions("boot-a"));
  Workload();
  const std::string first = Epoch();
  Crash();
  const std::string wal = Path(WalFileName(1));
  fs::resize_file(wal, fs::file_size(wal) - 1);
  StartOk(BootOptions("boot-a"));
  EXPECT_TRUE(store().recovery().torn_tail);
  EXPECT_EQ(Epoch(), first);
}

TEST_F(DurableStoreEpochTest, ALogSetAsideAfterAHoleChangesIt) {
  StartOk(BootOptions("boot-a", WalSync::kAlways, /*checkpoint_bytes=*/2048));
  Workload();
  ApplyUntilCheckpoints(13, 1);
  const uint64_t newest = store().checkpoints_written() + 1;
  const std::string before = Epoch();
  Crash();
  // The newest checkpoint damaged, the log after the fallback one cut: the
  // newest log follows a hole.
  FlipByte(Path(CheckpointFileName(newest)), kFileHeaderBytes + 12);
  const std::string cut = Path(WalFileName(newest - 1));
  fs::resize_file(cut, fs::file_size(cut) - 1);
  StartOk(BootOptions("boot-a", WalSync::kAlways, 2048));
  EXPECT_TRUE(store().recovery().logs_set_aside);
  EXPECT_NE(Epoch(), before);
}

TEST_F(DurableStoreEpochTest, AnUnwritableEpochFileStopsTheStart) {
  StartOk(BootOptions("boot-a"));
  Crash();
  // A directory in the file's place: the new file cannot be renamed there.
  fs::remove(Path(kEpochFileName));
  fs::create_directory(Path(kEpochFileName));
  const absl::Status s = Start(BootOptions("boot-a"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find(kEpochFileName), std::string::npos) << s;
}

}  // namespace
}  // namespace epoch_test
}  // namespace kvindexer::durable
