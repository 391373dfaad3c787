#include "durable/compaction_indexer.h"

#include <limits>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/request_limits.h"
#include "durable/data_dir.h"
#include "durable/posix_file.h"
#include "durable/recovery_replay.h"

namespace kvindexer::durable {
namespace {

void Discard(spdlog::level::level_enum, std::string_view) {}

// Replay and Restore ignore the limits; they are set wide all the same.
RequestLimits WideLimits() {
  RequestLimits limits;
  limits.max_worker_id_bytes = std::numeric_limits<uint32_t>::max();
  limits.max_worker_address_bytes = std::numeric_limits<uint32_t>::max();
  limits.max_worker_epoch_bytes = std::numeric_limits<uint32_t>::max();
  limits.max_workers = std::numeric_limits<uint32_t>::max();
  return limits;
}

}  // namespace

CompactionIndexer::CompactionIndexer(IndexBackend* image)
    : gate_log_(Discard),
      lifecycle_log_(Discard),
      indexer_(image, &gate_log_, WideLimits(), kBackendAbiMinor,
               /*clock=*/nullptr, &lifecycle_log_) {}

absl::Status CompactionIndexer::ReplayClosedLogs(const std::string& dir,
                                                 uint64_t first, uint64_t last,
                                                 const BuildDeadline& stop,
                                                 FileIo& io) {
  for (uint64_t g = first; g <= last; ++g) {
    if (stop.Expired()) return BuildCancelled(stop);
    const std::string wal = JoinPath(dir, WalFileName(g));
    absl::StatusOr<WalScan> scan =
        ReplayWal(wal, g, /*repair=*/false, &state(), &stop, io);
    if (!scan.ok()) return scan.status();
    if (scan->torn) {
      return absl::DataLossError(absl::StrCat("closed log ", wal,
                                              " has a bad record at offset ",
                                              scan->torn_offset));
    }
  }
  return absl::OkStatus();
}

absl::Status BuildCancelled(const BuildDeadline& stop) {
  return absl::CancelledError(
      absl::StrCat("checkpoint abandoned: ", stop.Why()));
}

void ChunkWriter::Add(const state::v1::CheckpointChunk& chunk) {
  if (!status_.ok()) return;
  if (stop_.Expired()) {
    status_ = BuildCancelled(stop_);
    return;
  }
  if (!chunk.SerializeToString(&payload_)) {
    status_ = absl::InternalError("a checkpoint part does not serialise");
    return;
  }
  status_ = writer_->Add(payload_);
}

}  // namespace kvindexer::durable
