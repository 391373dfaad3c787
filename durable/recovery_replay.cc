#include "durable/recovery_replay.h"

#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/log_text.h"
#include "durable/checkpoint_file.h"
#include "kv_indexer_state.pb.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {

namespace {

bool Stopped(const BuildDeadline* stop) {
  return stop != nullptr && stop->Expired();
}

absl::Status Cancelled(const std::string& path, const BuildDeadline* stop) {
  return absl::CancelledError(
      absl::StrCat("reading ", path, " was stopped: ", stop->Why()));
}

}  // namespace

absl::StatusOr<CheckpointLoad> LoadCheckpoint(const std::string& path,
                                              DurableState* indexer,
                                              const BuildDeadline* stop,
                                              FileIo& io) {
  CheckpointLoad load;
  state::v1::CheckpointChunk chunk;
  absl::StatusOr<CheckpointRead> read = ReadCheckpoint(
      path,
      [&](std::string_view payload) -> absl::Status {
        if (Stopped(stop)) return Cancelled(path, stop);
        if (!chunk.ParseFromArray(payload.data(),
                                  static_cast<int>(payload.size()))) {
          return absl::InternalError(
              absl::StrCat("checkpoint ", path, ": part ", load.records,
                           " passed its checksum but does not parse"));
        }
        if (chunk.has_placements()) {
          load.placements +=
              static_cast<uint64_t>(chunk.placements().hashes_size());
        }
        absl::Status s = indexer->Restore(chunk);
        if (!s.ok()) {
          return absl::InternalError(
              absl::StrCat("checkpoint ", path, ": part ", load.records,
                           " was refused: ", s.ToString()));
        }
        ++load.records;
        return absl::OkStatus();
      },
      io);
  if (!read.ok()) return read.status();
  return load;
}

absl::StatusOr<WalScan> ReplayWal(const std::string& path, uint64_t generation,
                                  bool repair, DurableState* indexer,
                                  const BuildDeadline* stop, FileIo& io) {
  state::v1::WalRecord record;
  uint64_t index = 0;
  return ScanWal(
      path, generation, repair,
      [&](std::string_view payload) -> absl::Status {
        if (Stopped(stop)) return Cancelled(path, stop);
        if (!record.ParseFromArray(payload.data(),
                                   static_cast<int>(payload.size()))) {
          return absl::InternalError(
              absl::StrCat("wal ", path, ": record ", index,
                           " passed its checksum but does not parse"));
        }
        absl::Status s = indexer->Replay(record);
        if (absl::IsInvalidArgument(s)) {
          // Escaped here: the message ends in the start-up error line, and
          // may quote a worker id from the log.
          return absl::InternalError(absl::StrCat(
              "wal ", path, ": record ", index,
              " was refused: ", LogText(s.ToString(), kLogMessageBytes)));
        }
        if (!s.ok()) {
          if (std::optional<std::string> failed = indexer->BackendFailure()) {
            // The backend itself failed (backend.h: it cannot continue, as
            // robin_sharded_snapshot does when it runs out of memory in a
            // bulk load): every later record would fail the same way.
            return absl::InternalError(absl::StrCat(
                "wal ", path, ": record ", index,
                ": the backend failed: ", LogText(*failed, kLogMessageBytes)));
          }
        }
        if (!s.ok()) {
          // The backend refused the mutation. Live, such a refusal takes its
          // record back; a record that is still here was being taken back
          // when the process died (or the truncation did not reach the
          // disk). It never took effect and was never acknowledged: skip it
          // rather than refuse to start.
          spdlog::warn(
              "wal: record {} of {} skipped: the backend refused it at "
              "replay ({})",
              index, path, LogText(s.ToString(), kLogMessageBytes));
        }
        ++index;
        return absl::OkStatus();
      },
      io);
}

}  // namespace kvindexer::durable
