#include "durable/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "durable/data_dir.h"
#include "durable/file_window.h"
#include "durable/posix_file.h"
#include "durable/record_framing.h"

namespace kvindexer::durable {
namespace {

// Records are gathered into blocks of about this size before a write: few
// system calls for millions of small placements parts.
constexpr size_t kBlockBytes = size_t{1} << 20;

constexpr char kTmpSuffix[] = ".tmp";

}  // namespace

struct CheckpointWriter::State {
  FileIo* io = nullptr;
  std::string dir;
  std::string path;      // checkpoint-<generation>.ckpt
  std::string tmp_path;  // path + ".tmp"
  uint64_t generation = 0;
  UniqueFd fd;
  std::string buffer;  // framed bytes not yet written
  uint64_t records = 0;
  uint64_t bytes = 0;  // written plus buffered
  // Sealed (or never ours): the destructor leaves the file alone.
  bool committed = false;
  absl::Status failure;  // the first error; the writer is dead after it

  absl::Status Fail(const std::string& what, int err) {
    failure = absl::UnavailableError(
        absl::StrCat("checkpoint write failed: ", tmp_path, ": ", what, ": ",
                     ErrnoText(err)));
    return failure;
  }

  absl::Status Flush() {
    if (const int err = WriteFully(*io, fd.get(), buffer); err != 0) {
      return Fail("write", err);
    }
    buffer.clear();
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Begin(
    const std::string& dir, uint64_t generation, FileIo* io) {
  std::unique_ptr<CheckpointWriter> writer(new CheckpointWriter());
  writer->state_ = std::make_unique<State>();
  State& s = *writer->state_;
  s.io = io != nullptr ? io : &FileIo::Real();
  s.dir = dir;
  s.generation = generation;
  s.path = JoinPath(dir, CheckpointFileName(generation));
  s.tmp_path = CheckpointTmpPath(dir, generation);
  s.fd.Reset(OpenStateFile(s.tmp_path, O_WRONLY | O_CREAT | O_TRUNC));
  if (!s.fd.valid()) {
    const int err = errno;
    // Nothing of ours to delete: the destructor must leave a file that
    // another process may have created alone.
    s.committed = true;
    s.failure = absl::UnavailableError(
        absl::StrCat("checkpoint write failed: cannot open ", s.tmp_path, ": ",
                     OpenErrorText(err)));
    return s.failure;
  }
  s.buffer.reserve(kBlockBytes + kBlockBytes / 8);
  s.buffer.append(EncodeFileHeader(FileKind::kCheckpoint, generation));
  s.bytes = s.buffer.size();
  return writer;
}

CheckpointWriter::~CheckpointWriter() {
  if (state_ == nullptr || state_->committed) return;
  state_->fd.Reset();
  ::unlink(state_->tmp_path.c_str());
}

absl::Status CheckpointWriter::Add(std::string_view payload) {
  State& s = *state_;
  if (!s.failure.ok()) return s.failure;
  if (s.committed) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", s.path, " is already committed"));
  }
  if (payload.empty() || payload.size() > kMaxRecordBytes ||
      DecodeCheckpointTrailer(payload).has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint record of ", payload.size(),
                     " bytes is empty, too long or shaped like the trailer"));
  }
  AppendRecord(payload, &s.buffer);
  s.bytes += kRecordHeaderBytes + payload.size();
  ++s.records;
  if (s.buffer.size() >= kBlockBytes) return s.Flush();
  return absl::OkStatus();
}

absl::Status CheckpointWriter::Commit() {
  if (absl::Status sealed = Seal(); !sealed.ok()) return sealed;
  absl::Status published =
      PublishCheckpoint(state_->dir, state_->generation, state_->io);
  // A rename that failed leaves the temporary file, which nobody would
  // publish now; after a failed directory sync it is already gone.
  if (!published.ok()) ::unlink(state_->tmp_path.c_str());
  return published;
}

absl::Status CheckpointWriter::Seal() {
  State& s = *state_;
  if (!s.failure.ok()) return s.failure;
  if (s.committed) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", s.path, " is already committed"));
  }
  const std::string trailer = EncodeCheckpointTrailer(s.records);
  AppendRecord(trailer, &s.buffer);
  s.bytes += kRecordHeaderBytes + trailer.size();
  if (absl::Status flushed = s.Flush(); !flushed.ok()) return flushed;
  while (s.io->Fsync(s.fd.get()) != 0) {
    if (errno != EINTR) return s.Fail("fsync", errno);
  }
  s.fd.Reset();
  // Complete: the destructor must not delete it.
  s.committed = true;
  return absl::OkStatus();
}

uint64_t CheckpointWriter::bytes() const { return state_->bytes; }

std::string CheckpointTmpPath(const std::string& dir, uint64_t generation) {
  return absl::StrCat(JoinPath(dir, CheckpointFileName(generation)),
                      kTmpSuffix);
}

absl::Status PublishCheckpoint(const std::string& dir, uint64_t generation,
                               FileIo* io) {
  FileIo& files = io != nullptr ? *io : FileIo::Real();
  const std::string path = JoinPath(dir, CheckpointFileName(generation));
  const std::string tmp_path = CheckpointTmpPath(dir, generation);
  if (::rename(tmp_path.c_str(), path.c_str()) != 0) {
    const int err = errno;
    return absl::UnavailableError(
        absl::StrCat("checkpoint write failed: ", tmp_path, ": rename to ",
                     path, ": ", ErrnoText(err)));
  }
  if (const int err = SyncDirectory(files, dir); err != 0) {
    return absl::UnavailableError(
        absl::StrCat("checkpoint write failed: ", path, ": sync of directory ",
                     dir, ": ", ErrnoText(err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckpointRead> ReadCheckpoint(
    const std::string& path,
    absl::FunctionRef<absl::Status(std::string_view payload)> on_record,
    FileIo& io) {
  return ReadCheckpointInPieces(path, on_record, kFileWindowPieceBytes, io);
}

absl::StatusOr<CheckpointRead> ReadCheckpointInPieces(
    const std::string& path,
    absl::FunctionRef<absl::Status(std::string_view payload)> on_record,
    size_t piece_bytes, FileIo& io) {
  absl::StatusOr<FileWindow> window = FileWindow::Open(path, piece_bytes, io);
  if (!window.ok()) return window.status();
  absl::StatusOr<std::string_view> head = window->Hold(0, kFileHeaderBytes);
  if (!head.ok()) return head.status();
  absl::StatusOr<FileHeader> header =
      DecodeFileHeader(*head, FileKind::kCheckpoint);
  if (!header.ok()) {
    return absl::Status(
        header.status().code(),
        absl::StrCat("checkpoint ", path, ": ", header.status().message()));
  }
  // Check everything before handing anything over: a checkpoint is applied
  // whole or not at all. The first pass checks, the second hands over; only
  // a piece of the file is in memory at a time.
  uint64_t records = 0;
  uint64_t pos = kFileHeaderBytes;
  uint64_t trailer_at = 0;
  while (true) {
    absl::StatusOr<RecordRead> read = ReadRecordAt(*window, pos);
    if (!read.ok()) return read.status();
    if (read->outcome == RecordRead::Outcome::kEnd) {
      return absl::DataLossError(
          absl::StrCat("checkpoint ", path, ": no trailer after ", records,
                       " records (file ends at byte ", pos, "): incomplete"));
    }
    if (read->outcome != RecordRead::Outcome::kOk) {
      return absl::DataLossError(
          absl::StrCat("checkpoint ", path, ": ",
                       std::string(DescribeOutcome(read->outcome)), " at byte ",
                       pos, " after ", records, " records"));
    }
    if (const auto count = DecodeCheckpointTrailer(read->payload)) {
      trailer_at = pos;
      pos += read->size;
      if (*count != records) {
        return absl::DataLossError(
            absl::StrCat("checkpoint ", path, ": trailer counts ", *count,
                         " records, the file holds ", records));
      }
      if (pos != window->size()) {
        return absl::DataLossError(absl::StrCat("checkpoint ", path, ": ",
                                                window->size() - pos,
                                                " bytes after the trailer"));
      }
      break;
    }
    pos += read->size;
    ++records;
  }
  const uint64_t file_bytes = pos;
  window->Rewind();
  pos = kFileHeaderBytes;
  for (uint64_t i = 0; i < records; ++i) {
    absl::StatusOr<RecordRead> read = ReadRecordAt(*window, pos);
    if (!read.ok()) return read.status();
    if (read->outcome != RecordRead::Outcome::kOk) {
      // Nothing writes a checkpoint in place: this is a disk returning
      // other bytes than a moment ago. Part of it was handed over, so this
      // is no DATA_LOSS that an older checkpoint could stand in for.
      return absl::InternalError(
          absl::StrCat("checkpoint ", path, ": record ", i, " at byte ", pos,
                       " read intact and then ",
                       std::string(DescribeOutcome(read->outcome))));
    }
    if (absl::Status handed = on_record(read->payload); !handed.ok()) {
      return handed;
    }
    pos += read->size;
  }
  if (pos != trailer_at) {
    return absl::InternalError(absl::StrCat(
        "checkpoint ", path, ": its records read intact twice but end at byte ",
        pos, " the second time, not at the trailer's byte ", trailer_at));
  }
  CheckpointRead result;
  result.generation = header->generation;
  result.records = records;
  result.bytes = file_bytes;
  return result;
}

}  // namespace kvindexer::durable
