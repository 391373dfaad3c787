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
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/indexer.h"
#include "core/sequence_gate_log.h"
#include "core/worker_lifecycle_log.h"
#include "fleet/memory_event_log.h"
#include "fleet/memory_snapshot_store.h"
#include "fleet/record_applier.h"
#include "fleet/snapshot_reader.h"
#include "fleet/snapshot_writer.h"
#include "gtest/gtest.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::fleet {
namespace snapshot_property_test {

using ::kvindexer::fleet::v1::LogRecord;
using test_support::Batch;
using test_support::ModelBackend;
using test_support::Snapshot;

struct Entry {
  std::string worker;
  std::string payload;
};

// A random log over three workers: seed-era applies, snapshot installs,
// gated applies in order with duplicates and gaps, heartbeats, fidelity
// headers, and records that are not decodable or are filed under another
// worker.
class LogGenerator {
 public:
  explicit LogGenerator(uint64_t seed) : rng_(seed) {}

  std::vector<Entry> Generate(size_t n) {
    std::vector<Entry> out;
    while (out.size() < n) out.push_back(Next());
    return out;
  }

 private:
  struct WorkerState {
    int epoch = 0;
    uint64_t seq = 0;
  };

  int Uniform(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  std::vector<int64_t> SomeHashes() {
    std::vector<int64_t> hashes;
    const int n = Uniform(1, 6);
    for (int i = 0; i < n; ++i) hashes.push_back(Uniform(1, 40));
    return hashes;
  }
  int SomeTier() { return Uniform(kTierHbm, kMaxTier); }

  Entry Record(const std::string& worker, LogRecord record) {
    record.set_producer("bridge-" + worker);
    if (Uniform(0, 5) == 0) record.set_fidelity("degraded; replay gap");
    return Entry{worker, record.SerializeAsString()};
  }

  Entry Next() {
    const std::string worker = absl::StrCat("w", Uniform(0, 2));
    const std::string address =
        absl::StrCat("10.0.0.", worker.substr(1), ":80");
    WorkerState& state = workers_[worker.back() - '0'];
    LogRecord record;
    switch (Uniform(0, 9)) {
      case 0: {  // seed-era apply
        Batch batch(worker, address);
        batch.Report(SomeTier(), SomeHashes());
        if (Uniform(0, 1) == 0) batch.Revoke(SomeTier(), SomeHashes());
        *record.mutable_apply() = batch;
        return Record(worker, record);
      }
      case 1: {  // snapshot install, a new epoch
        state.epoch += 1;
        state.seq = static_cast<uint64_t>(Uniform(0, 5));
        Snapshot snapshot(worker, address);
        snapshot.Epoch(absl::StrCat("e", state.epoch)).AppliedSeq(state.seq);
        snapshot.Tier(SomeTier(), SomeHashes());
        *record.mutable_replace() = snapshot;
        return Record(worker, record);
      }
      case 2: {  // heartbeat
        *record.mutable_apply() = Batch(worker, address);
        record.set_heartbeat_ttl_ms(600000);
        return Record(worker, record);
      }
      case 3: {  // not a record, or filed under another worker
        if (Uniform(0, 1) == 0) return Entry{worker, "\xff\x01junk"};
        *record.mutable_apply() = Batch(worker == "w0" ? "w1" : "w0", address)
                                      .Report(kTierHbm, SomeHashes());
        return Record(worker, record);
      }
      default: {  // gated apply: mostly next in order, some repeats and gaps
        uint64_t seq = state.seq + 1;
        const int shape = Uniform(0, 9);
        if (shape == 0 && state.seq > 0) seq = state.seq;  // duplicate
        if (shape == 1) seq = state.seq + 2;               // gap
        Batch batch(worker, address);
        batch.Gated(absl::StrCat("e", state.epoch), seq);
        batch.Report(SomeTier(), SomeHashes());
        if (Uniform(0, 2) == 0) batch.Revoke(SomeTier(), SomeHashes());
        if (Uniform(0, 7) == 0) batch.Clear(SomeTier());
        *record.mutable_apply() = batch;
        if (seq == state.seq + 1) state.seq = seq;
        return Record(worker, record);
      }
    }
  }

  std::mt19937_64 rng_;
  WorkerState workers_[3];
};

// A serving replica: an Indexer over the reference model.
void Quiet(spdlog::level::level_enum, std::string_view) {}

struct Replica {
  ModelBackend backend;
  SequenceGateLog gate_log{Quiet};
  WorkerLifecycleLog lifecycle_log{Quiet};
  Indexer indexer{&backend,         &gate_log, RequestLimits{},
                  kBackendAbiMinor, nullptr,   &lifecycle_log};
  uint64_t applied = 0;

  // Everything it holds, in one comparable text: the host's worker records
  // and markers (as a checkpoint would hold them), then every placement.
  std::string Contents() {
    std::ostringstream out;
    indexer.ExportHost([&](const state::v1::CheckpointChunk& chunk) {
      out << chunk.ShortDebugString() << "\n";
    });
    // A backend worker without placements answers no query: a snapshot
    // does not keep one.
    for (const auto& [id, worker] : backend.model().workers()) {
      bool holds = false;
      for (const auto& [tier, hashes] : worker.holdings) {
        holds = holds || !hashes.empty();
      }
      if (!holds) continue;
      out << "worker " << id << " at " << worker.address << "\n";
      for (const auto& [tier, hashes] : worker.holdings) {
        for (int64_t hash : hashes) out << " " << tier << ":" << hash;
        out << "\n";
      }
    }
    for (const auto& [hash, block] : backend.model().blocks()) {
      out << "block " << hash << " tokens " << block.token_count;
      for (const auto& [key, mask] : block.placements) {
        out << " " << key.first << "/" << key.second << "=" << mask;
      }
      out << "\n";
    }
    return out.str();
  }
};

LoggedRecord At(MemoryEventLog& log, uint64_t position) {
  absl::StatusOr<std::vector<LoggedRecord>> read =
      log.Read(position, 1, std::chrono::milliseconds(0));
  EXPECT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->empty());
  return read->front();
}

void Append(MemoryEventLog& log, const Entry& entry) {
  absl::StatusOr<AppendAck> ack =
      log.Append(entry.worker, entry.payload, "", std::nullopt);
  ASSERT_TRUE(ack.ok()) << ack.status();
}

// Loads the newest snapshot into a fresh replica.
void LoadNewest(MemorySnapshotStore& store, Replica& replica) {
  absl::StatusOr<std::optional<v1::SnapshotManifest>> newest =
      NewestSnapshot(store);
  ASSERT_TRUE(newest.ok()) << newest.status();
  ASSERT_TRUE(newest->has_value());
  ASSERT_TRUE(ReadSnapshotChunks(store, **newest,
                                 [&](const state::v1::CheckpointChunk& chunk) {
                                   return replica.indexer.Restore(chunk);
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
    MemoryEventLog log;
    for (const Entry& entry : entries) Append(log, entry);
    Replica direct;
    for (uint64_t p = 1; p <= n; ++p) {
      const std::optional<RecordResult> result =
          ApplyLogRecordAfter(direct.indexer, &direct.applied, At(log, p));
      ASSERT_TRUE(result.has_value());
      ++outcomes[result->outcome];
    }

    // The snapshot at k, written from a log that held only 1..k.
    MemoryEventLog prefix_log;
    for (uint64_t p = 0; p < k; ++p) Append(prefix_log, entries[p]);
    MemorySnapshotStore store(256 * 1024);
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
    MemorySnapshotStore fresh_store(256 * 1024);
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
}  // namespace kvindexer::fleet
