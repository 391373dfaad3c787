#include "durable/recovery_loader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "durable/compactor.h"
#include "durable/file_window.h"
#include "durable/posix_file.h"
#include "durable/record_framing.h"
#include "durable/recovery_replay.h"
#include "durable/wal_damage.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {
namespace {

// The format version in the header of `path`, read through `io`;
// FAILED_PRECONDITION, naming `path`, when it is newer than this build's. 0
// for a short or damaged header, which is left to the reader that handles
// damage.
absl::StatusOr<uint32_t> FormatVersionOf(const std::string& path, FileKind kind,
                                         FileIo& io) {
  const int fd = OpenStateFile(path, O_RDONLY);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open ", path, ": ", OpenErrorText(errno)));
  }
  char header[kFileHeaderBytes];
  ssize_t n;
  do {
    n = io.Pread(fd, header, sizeof(header), 0);
  } while (n < 0 && errno == EINTR);
  const int read_errno = errno;
  ::close(fd);
  if (n < 0) {
    return absl::InternalError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(read_errno)));
  }
  const absl::StatusOr<FileHeader> decoded =
      DecodeFileHeader(std::string_view(header, static_cast<size_t>(n)), kind);
  if (decoded.status().code() == absl::StatusCode::kFailedPrecondition) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": ", decoded.status().message()));
  }
  return decoded.ok() ? decoded->version : 0;
}

// Renames the log file `path` (of generation `generation`) *.corrupt, after
// counting what it holds into `report`. A file with records is logged at
// ERROR (`why` says why it is set aside); an empty one at WARN.
absl::Status SetAsideLog(DataDir& dir, const std::string& path,
                         std::string_view why, RecoveryReport* report,
                         FileIo& io) {
  uint64_t records = 0;
  absl::Status read;
  {
    absl::StatusOr<FileWindow> window =
        FileWindow::Open(path, kFileWindowPieceBytes, io);
    absl::StatusOr<std::string_view> bytes =
        window.ok() ? window->Hold(0, window->size())
                    : absl::StatusOr<std::string_view>(window.status());
    read = bytes.status();
    if (bytes.ok() && bytes->size() > kFileHeaderBytes) {
      records = FindIntactRecords(bytes->substr(kFileHeaderBytes)).records;
      report->cut_bytes += bytes->size() - kFileHeaderBytes;
    }
  }
  report->cut_records += records;
  if (absl::Status s = dir.MarkCorrupt(path); !s.ok()) return s;
  if (!read.ok()) {
    // What it holds is not known: taken for the worst.
    report->log_damaged = true;
    spdlog::error(
        "wal: {} {}; it could not be read ({}), so it is renamed {}.corrupt "
        "and whatever mutations it holds are lost",
        path, why, std::string(read.message()), path);
  } else if (records > 0) {
    report->log_damaged = true;
    spdlog::error(
        "wal: {} {}; its {} records would apply after lost ones, so it is "
        "renamed {}.corrupt and the mutations in them are lost, acknowledged "
        "ones among them",
        path, why, records, path);
  } else {
    spdlog::warn("wal: {} {}; it holds no record and is renamed {}.corrupt",
                 path, why, path);
  }
  return absl::OkStatus();
}

// The directory holds nothing usable: every log file is set aside and the
// state starts over, empty, at a generation above every one seen.
absl::StatusOr<RecoveredDirectory> StartEmpty(
    DataDir& dir, const DataDir::Listing& listing,
    const std::vector<std::string>& damaged, FileIo* io) {
  uint64_t newest = 0;
  if (!listing.checkpoints.empty()) newest = listing.checkpoints.back();
  if (!listing.wals.empty()) newest = std::max(newest, listing.wals.back());
  RecoveredDirectory out;
  out.base = newest + 1;
  out.wal_generation = out.base;
  // The empty checkpoint first: a crash before the logs are set aside then
  // finds it, newer than every log, instead of a directory that looks
  // fresh (and would start at generation 1 without an ERROR).
  absl::Status s = WriteEmptyCheckpoint(dir.path(), out.base, io);
  if (!s.ok()) return s;
  std::vector<std::string> orphans;
  for (uint64_t w : listing.wals) {
    orphans.push_back(dir.WalPath(w));
    if (absl::Status m =
            SetAsideLog(dir, orphans.back(), "has no checkpoint to apply to",
                        &out.report, *io);
        !m.ok()) {
      return m;
    }
  }
  spdlog::error(
      "recovery: no usable checkpoint in {} ({}); the state is lost and "
      "starts empty at generation {}; log files without a checkpoint, "
      "renamed *.corrupt: {}",
      dir.path(),
      damaged.empty() ? std::string("there is none")
                      : absl::StrCat("damaged: ", absl::StrJoin(damaged, ", ")),
      out.base, orphans.empty() ? "none" : absl::StrJoin(orphans, ", "));
  out.checkpoints = {out.base};
  out.poison_markers = listing.poisoned;
  out.report.started_empty = true;
  out.report.checkpoint_fallback = !damaged.empty();
  return out;
}

// Milliseconds of the steady clock since `start`: what the report says of
// each part of a recovery, for operators (no decision depends on it).
uint64_t MillisecondsSince(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start)
          .count());
}

}  // namespace

absl::StatusOr<RecoveredDirectory> RecoverDirectory(DataDir& dir,
                                                    DurableState* indexer,
                                                    FileIo* io) {
  absl::StatusOr<DataDir::Listing> listing = dir.List();
  if (!listing.ok()) return listing.status();
  std::map<uint64_t, uint32_t> wal_versions;
  for (uint64_t c : listing->checkpoints) {
    absl::StatusOr<uint32_t> version =
        FormatVersionOf(dir.CheckpointPath(c), FileKind::kCheckpoint, *io);
    if (!version.ok()) return version.status();
  }
  for (uint64_t w : listing->wals) {
    absl::StatusOr<uint32_t> version =
        FormatVersionOf(dir.WalPath(w), FileKind::kWal, *io);
    if (!version.ok()) return version.status();
    wal_versions[w] = *version;
  }

  RecoveredDirectory out;
  if (listing->checkpoints.empty() && listing->wals.empty()) {
    absl::Status s = WriteEmptyCheckpoint(dir.path(), 1, io);
    if (!s.ok()) return s;
    out.base = 1;
    out.wal_generation = 1;
    out.checkpoints = {1};
    out.poison_markers = listing->poisoned;
    return out;
  }

  // The newest checkpoint that reads back whole. A damaged one restored
  // nothing (ReadCheckpoint checks the whole file first), so the next older
  // one can be tried on the same Indexer.
  std::vector<uint64_t> checkpoints = listing->checkpoints;
  std::vector<std::string> damaged;
  std::optional<uint64_t> base;
  const auto checkpoint_start = std::chrono::steady_clock::now();
  while (!checkpoints.empty()) {
    const std::string path = dir.CheckpointPath(checkpoints.back());
    absl::StatusOr<CheckpointLoad> load =
        LoadCheckpoint(path, indexer, /*stop=*/nullptr, *io);
    if (load.ok()) {
      base = checkpoints.back();
      out.report.placements = load->placements;
      break;
    }
    if (load.status().code() != absl::StatusCode::kDataLoss) {
      return load.status();
    }
    spdlog::error("recovery: checkpoint {} is damaged ({}); renamed {}.corrupt",
                  path, std::string(load.status().message()), path);
    absl::Status s = dir.MarkCorrupt(path);
    if (!s.ok()) return s;
    damaged.push_back(path);
    checkpoints.pop_back();
  }
  if (!base.has_value()) return StartEmpty(dir, *listing, damaged, io);
  out.report.checkpoint_ms = MillisecondsSince(checkpoint_start);
  out.base = *base;
  out.report.checkpoint_generation = *base;
  out.report.checkpoint_fallback = !damaged.empty();
  out.checkpoints = std::move(checkpoints);

  // The log from the checkpoint on, while it is contiguous and intact.
  uint64_t expected = out.base;
  bool ended = false;
  std::vector<std::string> after_hole;
  const auto log_start = std::chrono::steady_clock::now();
  for (uint64_t w : listing->wals) {
    if (w < out.base) {
      out.wals.push_back(w);  // older: the next compaction deletes it
      continue;
    }
    const std::string path = dir.WalPath(w);
    if (ended || w != expected) {
      ended = true;
      after_hole.push_back(path);
      continue;
    }
    absl::StatusOr<WalScan> scan = ReplayWal(path, w, /*repair=*/true, indexer,
                                             /*stop=*/nullptr, *io);
    if (!scan.ok()) return scan.status();
    out.report.log_records += scan->records;
    out.report.log_bytes +=
        scan->bytes > kFileHeaderBytes ? scan->bytes - kFileHeaderBytes : 0;
    out.wals.push_back(w);
    ++expected;
    if (scan->torn) {
      out.report.torn_tail = true;
      out.report.cut_bytes += scan->dropped_bytes;
      out.report.cut_records += scan->dropped_records;
      out.report.log_damaged = out.report.log_damaged || scan->damaged;
      ended = true;
    }
  }
  out.report.log_ms = MillisecondsSince(log_start);
  for (const std::string& path : after_hole) {
    absl::Status s = SetAsideLog(dir, path, "follows a cut or missing log file",
                                 &out.report, *io);
    if (!s.ok()) return s;
    out.report.torn_tail = true;
    out.report.logs_set_aside = true;
  }
  out.wal_generation = expected > out.base ? expected - 1 : out.base;
  out.poison_markers = listing->poisoned;
  const auto continued = wal_versions.find(out.wal_generation);
  out.continued_log_older_format = continued != wal_versions.end() &&
                                   continued->second != 0 &&
                                   continued->second < kFormatVersion;
  return out;
}

}  // namespace kvindexer::durable
