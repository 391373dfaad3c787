#include "durability_ingest.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"
#include "ingest_plan.h"
#include "tests/support/scratch_dir.h"

namespace kvindexer::bench {
namespace {

using ::kvindexer::test_support::ScratchDir;

constexpr std::array<DurabilityMode, 3> kModes = {
    DurabilityMode::kOff, DurabilityMode::kNone, DurabilityMode::kAlways};
// Fleet traffic generated per chunk of the preload.
constexpr uint64_t kPreloadChunkHashes = 2'000'000;

}  // namespace

absl::StatusOr<std::vector<IngestModeFigures>> CompareIngest(
    const RigOptions& rig_options, const IngestComparisonOptions& options,
    const IngestPlan& plan, Report* report) {
  std::vector<IngestModeFigures> figures(kModes.size());
  for (size_t m = 0; m < kModes.size(); ++m) figures[m].mode = kModes[m];
  for (uint32_t round = 0; round < options.rounds; ++round) {
    for (size_t k = 0; k < kModes.size(); ++k) {
      const size_t m = (k + round) % kModes.size();
      const DurabilityMode mode = kModes[m];
      absl::StatusOr<std::unique_ptr<ScratchDir>> dir =
          ScratchDir::Create("kvindexer-durability-bench-", options.data_root);
      if (!dir.ok()) return dir.status();
      const std::string data_dir = (*dir)->Sub("data");
      absl::StatusOr<std::unique_ptr<DurabilityRig>> rig =
          DurabilityRig::Start(rig_options, mode, data_dir);
      if (!rig.ok()) {
        return absl::Status(
            rig.status().code(),
            absl::StrCat(ModeName(mode), " server: ", rig.status().message()));
      }
      std::fprintf(stderr, "== ingest round %u: %s\n", round + 1,
                   ModeName(mode));
      IngestLoad load = options.load;
      load.label = absl::StrCat("ingest ", ModeName(mode));
      load.cycle = false;
      load.stop = nullptr;
      const IngestResult x = RunIngest((*rig)->pool(), plan, load);
      WriteIngest(*report, ModeName(mode),
                  absl::StrCat("ingest/", kMaxHashesPerRequest), x);
      const DirUsage usage =
          mode == DurabilityMode::kOff ? DirUsage() : MeasureDir(data_dir);
      figures[m].hashes_per_s.push_back(x.hashes_per_s);
      figures[m].p99_us.push_back(x.latency.p99_us);
      figures[m].dir_bytes.push_back(usage.bytes);
      figures[m].checkpoints.push_back(usage.checkpoints);
      if (absl::Status s = (*rig)->Stop(); !s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat(ModeName(mode), " server: ", s.message()));
      }
      // The next run must not pay for this one's writeback: delete its
      // files and flush what is still dirty before it starts.
      dir->reset();
      sync();
    }
  }
  return figures;
}

IngestResult PreloadFleet(SyntheticFleet* fleet, ChannelPool* pool,
                          uint64_t placements, const IngestLoad& load) {
  PlanSink sink(fleet->config().workers);
  fleet->EmitAnchors(&sink);
  IngestResult total;
  total.label = load.label;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t steps = 0;
  const uint64_t max_steps = placements * 4 + 1000;
  for (bool last = false; !last;) {
    while (fleet->placements() < placements && steps < max_steps &&
           sink.hashes() < kPreloadChunkHashes) {
      fleet->Step(kMaxHashesPerRequest, &sink);
      ++steps;
    }
    last = fleet->placements() >= placements || steps >= max_steps;
    if (last) fleet->Flush(&sink);
    const IngestPlan chunk = sink.Take();
    const IngestResult x = RunIngest(pool, chunk, load);
    total.hashes_ok += x.hashes_ok;
    total.batches_ok += x.batches_ok;
    total.batches_total += x.batches_total;
    for (size_t c = 0; c < x.status.by_code.size(); ++c) {
      total.status.by_code[c] += x.status.by_code[c];
    }
    total.truncated |= x.truncated;
    total.latency = x.latency;  // of the last chunk
    std::fprintf(stderr, "[%s] placements=%llu hashes_ok=%llu\n",
                 load.label.c_str(),
                 static_cast<unsigned long long>(fleet->placements()),
                 static_cast<unsigned long long>(total.hashes_ok));
  }
  total.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  total.hashes_per_s =
      static_cast<double>(total.hashes_ok) / std::max(total.seconds, 1e-9);
  total.mean_batch_hashes = total.batches_ok > 0
                                ? static_cast<double>(total.hashes_ok) /
                                      static_cast<double>(total.batches_ok)
                                : 0;
  return total;
}

}  // namespace kvindexer::bench
