#include "durable/wal_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "durable/file_io.h"
#include "durable/file_window.h"
#include "durable/posix_file.h"
#include "durable/record_framing.h"
#include "durable/wal_damage.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {
namespace {

// Cuts `path` to `size` bytes, then appends `tail` (a fresh header when the
// old one was bad), and syncs the file, through `io`.
absl::Status CutFile(const std::string& path, uint64_t size,
                     std::string_view tail, FileIo& io) {
  const UniqueFd fd(OpenStateFile(path, O_WRONLY));
  auto failed = [&path](const char* what, int err) {
    return absl::InternalError(absl::StrCat("wal: cannot repair ", path, ": ",
                                            what, ": ", ErrnoText(err)));
  };
  if (!fd.valid()) {
    return absl::InternalError(absl::StrCat("wal: cannot repair ", path,
                                            ": open: ", OpenErrorText(errno)));
  }
  while (io.Ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    if (errno != EINTR) return failed("ftruncate", errno);
  }
  if (!tail.empty()) {
    if (::lseek(fd.get(), static_cast<off_t>(size), SEEK_SET) < 0) {
      return failed("lseek", errno);
    }
    if (const int err = WriteFully(io, fd.get(), tail); err != 0) {
      return failed("write", err);
    }
  }
  while (io.Fsync(fd.get()) != 0) {
    if (errno != EINTR) return failed("fsync", errno);
  }
  // The size lives in the inode; the directory entry is unchanged, but a
  // rewritten header should not be the one thing a crash takes back.
  if (!tail.empty()) {
    if (const int err = SyncDirectory(io, DirectoryOf(path)); err != 0) {
      return failed("directory sync", err);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WalScan> ScanWal(
    const std::string& path, uint64_t expected_generation, bool repair,
    absl::FunctionRef<absl::Status(std::string_view payload)> on_record,
    FileIo& io) {
  return ScanWalInPieces(path, expected_generation, repair, on_record,
                         kFileWindowPieceBytes, io);
}

absl::StatusOr<WalScan> ScanWalInPieces(
    const std::string& path, uint64_t expected_generation, bool repair,
    absl::FunctionRef<absl::Status(std::string_view payload)> on_record,
    size_t piece_bytes, FileIo& io) {
  absl::StatusOr<FileWindow> window = FileWindow::Open(path, piece_bytes, io);
  if (!window.ok()) return window.status();
  WalScan scan;
  absl::StatusOr<std::string_view> head = window->Hold(0, kFileHeaderBytes);
  if (!head.ok()) return head.status();
  absl::StatusOr<FileHeader> header = DecodeFileHeader(*head, FileKind::kWal);
  if (!header.ok()) {
    if (header.status().code() != absl::StatusCode::kDataLoss) {
      return absl::Status(
          header.status().code(),
          absl::StrCat("wal ", path, ": ", header.status().message()));
    }
    // None of it can be trusted. A file shorter than a header was being
    // created when the process died (the header is synced before any
    // record is written); a whole header that is bad was damaged later, or
    // the file is not ours.
    absl::StatusOr<std::string_view> whole = window->Hold(0, window->size());
    if (!whole.ok()) return whole.status();
    const std::string_view file = *whole;
    scan.generation = expected_generation;
    scan.torn = true;
    scan.torn_offset = 0;
    scan.dropped_bytes = file.size();
    if (!repair) return scan;
    const std::string reason(header.status().message());
    if (file.size() >= kFileHeaderBytes) {
      scan.damaged = true;
      scan.dropped_records =
          FindIntactRecords(file.substr(kFileHeaderBytes)).records;
      absl::StatusOr<std::string> kept = KeepCutBytes(path, 0, file, io);
      if (!kept.ok()) return kept.status();
      scan.kept_copy = *std::move(kept);
    }
    const std::string fresh =
        EncodeFileHeader(FileKind::kWal, expected_generation);
    if (absl::Status cut = CutFile(path, 0, fresh, io); !cut.ok()) return cut;
    if (scan.damaged) {
      spdlog::error(
          "wal: damaged file header file={} dropped_bytes={} "
          "intact_records_after={} ({}); the file is rewritten as an empty "
          "log, so the mutations it held are lost, acknowledged ones among "
          "them; its bytes are kept in {}",
          path, file.size(), scan.dropped_records, reason, scan.kept_copy);
    } else {
      spdlog::warn(
          "wal: truncated corrupt tail file={} offset=0 dropped_bytes={} "
          "({}; rewritten as an empty log)",
          path, file.size(), reason);
    }
    return scan;
  }
  if (header->generation != expected_generation) {
    // Intact but misnamed: not ours to cut or replay.
    return absl::DataLossError(absl::StrCat(
        "wal ", path, ": its header says generation ", header->generation,
        ", its name says ", expected_generation));
  }
  scan.generation = header->generation;
  uint64_t pos = kFileHeaderBytes;
  RecordRead read;
  while (true) {
    absl::StatusOr<RecordRead> next = ReadRecordAt(*window, pos);
    if (!next.ok()) return next.status();
    read = *next;
    if (read.outcome != RecordRead::Outcome::kOk) break;
    if (absl::Status handed = on_record(read.payload); !handed.ok()) {
      return handed;
    }
    ++scan.records;
    pos += read.size;
  }
  scan.bytes = pos;
  if (read.outcome == RecordRead::Outcome::kEnd) return scan;
  scan.torn = true;
  scan.torn_offset = pos;
  scan.dropped_bytes = window->size() - pos;
  if (!repair) return scan;
  absl::StatusOr<std::string_view> rest =
      window->Hold(pos, window->size() - pos);
  if (!rest.ok()) return rest.status();
  scan.dropped_bytes = rest->size();
  // The bad record itself starts at `pos`; records behind it start later.
  const IntactRecords after = FindIntactRecords(rest->substr(1));
  if (after.any()) {
    scan.damaged = true;
    scan.dropped_records = after.records;
    absl::StatusOr<std::string> kept = KeepCutBytes(path, pos, *rest, io);
    if (!kept.ok()) return kept.status();
    scan.kept_copy = *std::move(kept);
  }
  if (absl::Status cut = CutFile(path, pos, "", io); !cut.ok()) return cut;
  if (scan.damaged) {
    spdlog::error(
        "wal: damaged record in the middle of the log file={} offset={} "
        "dropped_bytes={} intact_records_after={}{} ({}); the log is cut "
        "there, so the mutations after it are lost, acknowledged ones among "
        "them; the cut bytes are kept in {}",
        path, pos, scan.dropped_bytes, after.records,
        after.incomplete ? " (the search for more stopped early)" : "",
        DescribeOutcome(read.outcome), scan.kept_copy);
  } else {
    spdlog::warn(
        "wal: truncated corrupt tail file={} offset={} dropped_bytes={} ({})",
        path, pos, scan.dropped_bytes, DescribeOutcome(read.outcome));
  }
  return scan;
}

}  // namespace kvindexer::durable
