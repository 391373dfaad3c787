// The property snapshots rest on (docs/fleet.md, "Snapshots"): for a seeded
// random log, a replica that loads the snapshot written at position k and
// then reads the log from any j <= k holds exactly what a replica that
// applied the whole log directly holds, worker records and placements
// alike; and a snapshot built on an earlier snapshot equals one built from
// the whole log. No NATS: the log and the store are the in-memory ones.
#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fleet/memory_event_log.h"
#include "fleet/memory_snapshot_store.h"
#include "gtest/gtest.h"
#include "replica/record_applier.h"
#include "replica/snapshot_reader.h"
#include "replica/snapshot_writer.h"
#include "tests/support/snapshot_test_support.h"

namespace kvindexer::replica {
namespace snapshot_property_test {

using snapshot_test_support::Entry;
using snapshot_test_support::LogGenerator;
using snapshot_test_support::Replica;

fleet::LoggedRecord At(fleet::MemoryEventLog& log, uint64_t position) {
  absl::StatusOr<std::vector<fleet::LoggedRecord>> read =
      log.Read(position, 1, std::chrono::milliseconds(0));
  EXPECT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->empty());
  return read->front();
}

void Append(fleet::MemoryEventLog& log, const Entry& entry) {
  absl::StatusOr<fleet::AppendAck> ack =
      log.Append(entry.worker, entry.payload, "", std::nullopt);
  ASSERT_TRUE(ack.ok()) << ack.status();
}

// Loads the newest snapshot into a fresh replica.
void LoadNewest(fleet::MemorySnapshotStore& store, Replica& replica) {
  absl::StatusOr<std::optional<fleet::v1::SnapshotManifest>> newest =
      NewestSnapshot(store);
  ASSERT_TRUE(newest.ok()) << newest.status();
  ASSERT_TRUE(newest->has_value());
  ASSERT_TRUE(ReadSnapshotChunks(
                  store, **newest,
                  [&](const state::v1::CheckpointChunk& chunk) {
                    return replica.indexer.durable_state().Restore(chunk);
                  })
                  .ok());
  replica.applied = (*newest)->position();
}

int Seeds() {
  const char* value = std::getenv("KV_INDEXER_SNAPSHOT_PROPERTY_SEEDS");
  return value == nullptr ? 300 : std::atoi(value);
}

TEST(SnapshotProperty, SnapshotPlusLogEqualsTheWholeLog) {
  const std::atomic<bool> stop{false};
  // Outcomes of the direct replica's records over all seeds, so that the
  // generator is seen to exercise every path.
  std::map<RecordOutcome, uint64_t> outcomes;
  for (int seed = 1; seed <= Seeds(); ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed, " (reproduce with this seed)"));
    std::mt19937_64 pick(seed * 7919);
    const std::vector<Entry> entries = LogGenerator(seed).Generate(
        std::uniform_int_distribution<size_t>(1, 80)(pick));
    const uint64_t n = entries.size();
    const uint64_t k = std::uniform_int_distribution<uint64_t>(0, n)(pick);
    const uint64_t j = std::uniform_int_distribution<uint64_t>(0, k)(pick);

    // Every record applied directly, in order.
    fleet::MemoryEventLog log;
    for (const Entry& entry : entries) Append(log, entry);
    Replica direct;
    for (uint64_t p = 1; p <= n; ++p) {
      const std::optional<RecordResult> result =
          ApplyLogRecordAfter(direct.indexer, &direct.applied, At(log, p));
      ASSERT_TRUE(result.has_value());
      ++outcomes[result->outcome];
    }

    // The snapshot at k, written from a log that held only 1..k.
    fleet::MemoryEventLog prefix_log;
    for (uint64_t p = 0; p < k; ++p) Append(prefix_log, entries[p]);
    fleet::MemorySnapshotStore store(256 * 1024);
    SnapshotRoundOptions options;
    options.writer = "replica-a";
    options.trim_log = false;
    absl::StatusOr<SnapshotRound> round =
        WriteSnapshotRound(prefix_log, store, options, stop);
    ASSERT_TRUE(round.ok()) << round.status();
    ASSERT_EQ(round->written, k > 0);

    // The snapshot, then the log from j + 1 on.
    Replica restored;
    if (k > 0) LoadNewest(store, restored);
    ASSERT_EQ(restored.applied, k);
    uint64_t skipped = 0;
    for (uint64_t p = j + 1; p <= n; ++p) {
      if (!ApplyLogRecordAfter(restored.indexer, &restored.applied, At(log, p))
               .has_value()) {
        ++skipped;
      }
    }
    EXPECT_EQ(skipped, k - j);
    ASSERT_EQ(restored.Contents(), direct.Contents());

    // A snapshot built on the one at k equals one built from nothing.
    for (uint64_t p = k; p < n; ++p) Append(prefix_log, entries[p]);
    round = WriteSnapshotRound(prefix_log, store, options, stop);
    ASSERT_TRUE(round.ok()) << round.status();
    Replica chained;
    LoadNewest(store, chained);
    fleet::MemorySnapshotStore fresh_store(256 * 1024);
    round = WriteSnapshotRound(log, fresh_store, options, stop);
    ASSERT_TRUE(round.ok()) << round.status();
    Replica from_nothing;
    LoadNewest(fresh_store, from_nothing);
    ASSERT_EQ(chained.Contents(), direct.Contents());
    ASSERT_EQ(from_nothing.Contents(), direct.Contents());
  }
  const uint64_t total = outcomes[RecordOutcome::kApplied] +
                         outcomes[RecordOutcome::kRefused] +
                         outcomes[RecordOutcome::kUndecodable];
  EXPECT_GT(outcomes[RecordOutcome::kApplied] * 3, total);
  EXPECT_GT(outcomes[RecordOutcome::kRefused] * 20, total);
  EXPECT_GT(outcomes[RecordOutcome::kUndecodable] * 20, total);
}

}  // namespace snapshot_property_test
}  // namespace kvindexer::replica
