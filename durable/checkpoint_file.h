// Checkpoint files: checkpoint-<generation>.ckpt, written to a temporary
// file, synced, renamed into place and the directory synced
// (docs/durability.md, "Checkpoints").
#ifndef KVINDEXER_DURABLE_CHECKPOINT_FILE_H_
#define KVINDEXER_DURABLE_CHECKPOINT_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "durable/file_io.h"

namespace kvindexer::durable {

class CheckpointWriter {
 public:
  // Starts checkpoint-<generation>.ckpt.tmp in `dir` (replacing a stale
  // one). REQUIRES: io (when given) outlives the writer.
  static absl::StatusOr<std::unique_ptr<CheckpointWriter>> Begin(
      const std::string& dir, uint64_t generation, FileIo* io = nullptr);
  // Deletes the temporary file unless Commit succeeded.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Appends one framed record; buffered, written in large blocks.
  absl::Status Add(std::string_view payload);
  // Writes the trailer, syncs the file, renames it to
  // checkpoint-<generation>.ckpt and syncs the directory: Seal, then
  // PublishCheckpoint.
  absl::Status Commit();
  // Writes the trailer and syncs the file, which stays
  // checkpoint-<generation>.ckpt.tmp: complete, but not yet one that
  // recovery reads (start-up deletes it). The destructor leaves it; another
  // process may publish it. For builds in a process of their own.
  absl::Status Seal();
  // File bytes written so far.
  uint64_t bytes() const;

 private:
  CheckpointWriter() = default;
  struct State;
  std::unique_ptr<State> state_;
};

// Renames the sealed checkpoint-<generation>.ckpt.tmp in `dir` to
// checkpoint-<generation>.ckpt and syncs the directory. UNAVAILABLE naming
// the file when either fails.
absl::Status PublishCheckpoint(const std::string& dir, uint64_t generation,
                               FileIo* io = nullptr);

// checkpoint-<generation>.ckpt.tmp in `dir`.
std::string CheckpointTmpPath(const std::string& dir, uint64_t generation);

struct CheckpointRead {
  uint64_t generation = 0;
  uint64_t records = 0;
  uint64_t bytes = 0;
};

// Hands every record of the checkpoint file `path` to `on_record`, in
// order, after checking the whole file (header, every CRC, the trailer):
// nothing is handed over from a corrupt file. The file is read twice, a
// piece at a time (durable/file_window.h): once to check it, once to hand
// it over, so that only a piece of it is in memory. Errors: DATA_LOSS for
// a bad magic, a bad CRC, a cut or a missing trailer; FAILED_PRECONDITION
// for a newer format version; the first non-OK status of `on_record`;
// INTERNAL for I/O errors, and when a record that passed the first read
// fails the second (some records were handed over by then). Reads go
// through `io`.
absl::StatusOr<CheckpointRead> ReadCheckpoint(
    const std::string& path,
    absl::FunctionRef<absl::Status(std::string_view payload)> on_record,
    FileIo& io = FileIo::Real());

// ReadCheckpoint, reading `piece_bytes` at a time (tests read in tiny
// pieces).
absl::StatusOr<CheckpointRead> ReadCheckpointInPieces(
    const std::string& path,
    absl::FunctionRef<absl::Status(std::string_view payload)> on_record,
    size_t piece_bytes, FileIo& io = FileIo::Real());

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_CHECKPOINT_FILE_H_
