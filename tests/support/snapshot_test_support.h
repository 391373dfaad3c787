// Test support for snapshot tests (docs/fleet.md, "Snapshots"): a seeded
// generator of random event logs that exercise every path of the record
// applier, and a serving replica (an Indexer over the reference model)
// whose whole state dumps to one comparable text.
//
// Thread safety: none; one test thread uses each object.
#ifndef KVINDEXER_TESTS_SUPPORT_SNAPSHOT_TEST_SUPPORT_H_
#define KVINDEXER_TESTS_SUPPORT_SNAPSHOT_TEST_SUPPORT_H_

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/indexer.h"
#include "core/sequence_gate_log.h"
#include "core/worker_lifecycle_log.h"
#include "kvindexer_fleet.pb.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer::replica::snapshot_test_support {

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
inline void Quiet(spdlog::level::level_enum, std::string_view) {}

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
    indexer.durable_state().ExportHost(
        [&](const state::v1::CheckpointChunk& chunk) {
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

}  // namespace kvindexer::replica::snapshot_test_support

#endif  // KVINDEXER_TESTS_SUPPORT_SNAPSHOT_TEST_SUPPORT_H_
