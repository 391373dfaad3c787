#include "durability_rig.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace kvindexer::bench {
namespace {

using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::StartListeningServer;

// The generation of <prefix><digits><suffix>.
bool Generation(absl::string_view name, absl::string_view prefix,
                absl::string_view suffix, uint64_t* generation) {
  return absl::ConsumePrefix(&name, prefix) &&
         absl::ConsumeSuffix(&name, suffix) &&
         absl::SimpleAtoi(name, generation);
}

}  // namespace

const char* ModeName(DurabilityMode mode) {
  switch (mode) {
    case DurabilityMode::kOff:
      return "no-data-dir";
    case DurabilityMode::kNone:
      return "wal-none";
    case DurabilityMode::kAlways:
      return "wal-always";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<DurabilityRig>> DurabilityRig::Start(
    const RigOptions& options, DurabilityMode mode,
    const std::string& data_dir) {
  auto rig = std::unique_ptr<DurabilityRig>(new DurabilityRig());
  rig->mode_ = mode;
  ProcessOptions process;
  process.binary = options.server_binary;
  process.output_path = options.server_log;
  process.unset_env = {"KV_INDEXER_DATA_DIR", "KV_INDEXER_WAL_SYNC",
                       "KV_INDEXER_CHECKPOINT_BYTES",
                       "KV_INDEXER_CHECKPOINT_BUILDER",
                       "KV_INDEXER_MAX_REPLAY_BYTES"};
  // The recovery line is INFO.
  process.env["KV_INDEXER_LOG_LEVEL"] = "info";
  if (!options.backend.empty()) {
    process.env["KV_INDEXER_BACKEND"] = options.backend;
  }
  if (mode != DurabilityMode::kOff) {
    process.env["KV_INDEXER_DATA_DIR"] = data_dir;
    process.env["KV_INDEXER_WAL_SYNC"] =
        mode == DurabilityMode::kAlways ? "always" : "none";
    if (options.checkpoint_bytes > 0) {
      process.env["KV_INDEXER_CHECKPOINT_BYTES"] =
          std::to_string(options.checkpoint_bytes);
    }
    if (!options.checkpoint_builder.empty()) {
      process.env["KV_INDEXER_CHECKPOINT_BUILDER"] = options.checkpoint_builder;
    }
    if (!options.max_replay_bytes.empty()) {
      process.env["KV_INDEXER_MAX_REPLAY_BYTES"] = options.max_replay_bytes;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<ListeningServer> server =
      StartListeningServer(std::move(process), /*port=*/0,
                           absl::ToChronoMilliseconds(options.connect_timeout));
  if (!server.ok()) return server.status();
  rig->seconds_to_listen_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  rig->process_ = std::move(server->process);
  if (mode != DurabilityMode::kOff) {
    rig->recovered_ = FindRecoveredLine(rig->process_->Output());
  }
  absl::StatusOr<std::unique_ptr<ChannelPool>> pool =
      ChannelPool::Connect(server->address, static_cast<int>(options.channels),
                           options.connect_timeout);
  if (!pool.ok()) return pool.status();
  rig->pool_ = *std::move(pool);
  absl::StatusOr<std::unique_ptr<ChannelPool>> side =
      ChannelPool::Connect(server->address, 1, options.connect_timeout);
  if (!side.ok()) return side.status();
  rig->side_pool_ = *std::move(side);
  return rig;
}

absl::Status DurabilityRig::Stop() {
  // Idle clients do not answer the server's graceful GOAWAY ping; closing
  // them spares the shutdown the ping's timeout.
  pool_.reset();
  side_pool_.reset();
  return process_->Stop(std::chrono::seconds(60));
}

DirUsage MeasureDir(const std::string& dir) {
  DirUsage usage;
  std::vector<std::pair<uint64_t, uint64_t>> wals;  // generation, bytes
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    std::error_code entry_error;
    if (!entry.is_regular_file(entry_error)) continue;
    const uint64_t size = entry.file_size(entry_error);
    if (entry_error) continue;  // removed meanwhile
    const std::string name = entry.path().filename().string();
    usage.bytes += size;
    uint64_t generation = 0;
    if (Generation(name, "checkpoint-", ".ckpt", &generation)) {
      usage.checkpoint_bytes += size;
      ++usage.checkpoints;
      usage.newest_checkpoint = std::max(usage.newest_checkpoint, generation);
    } else if (Generation(name, "wal-", ".log", &generation)) {
      usage.wal_bytes += size;
      ++usage.wals;
      wals.emplace_back(generation, size);
      if (generation >= usage.newest_wal) {
        usage.newest_wal = generation;
        usage.newest_wal_bytes = size;
      }
    } else if (absl::StartsWith(name, "checkpoint-") &&
               absl::EndsWith(name, ".tmp")) {
      usage.writing_checkpoint = true;
    }
  }
  for (const auto& [generation, size] : wals) {
    if (generation >= usage.newest_checkpoint) usage.tail_bytes += size;
  }
  return usage;
}

bool WaitForDir(const std::string& dir,
                const std::function<bool(const DirUsage&)>& condition,
                absl::Duration bound) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto limit = absl::ToChronoMilliseconds(bound);
  for (;;) {
    if (condition(MeasureDir(dir))) return true;
    if (std::chrono::steady_clock::now() - t0 > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

}  // namespace kvindexer::bench
