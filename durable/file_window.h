// FileWindow: reads a file front to back while holding only a window of it
// in memory, for the log scan at start-up and in checkpoint builds.
//
// A log file can be hundreds of megabytes. Reading it whole cost a buffer of
// its size (zero-filled first) on top of the index being rebuilt; the window
// holds one piece of the file, or one record when a record is larger.
#ifndef KVINDEXER_DURABLE_FILE_WINDOW_H_
#define KVINDEXER_DURABLE_FILE_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "durable/file_io.h"
#include "durable/posix_file.h"
#include "durable/record_framing.h"

namespace kvindexer::durable {

// Bytes read per piece by default.
inline constexpr size_t kFileWindowPieceBytes = size_t{4} << 20;

// Not thread-safe: one reader at a time.
class FileWindow {
 public:
  // Opens the state file `path` (OpenStateFile), to be read through `io`.
  // NOT_FOUND when it does not exist, INTERNAL for other errors (a symbolic
  // link among them); both name the path. REQUIRES: piece_bytes > 0; `io`
  // outlives the window.
  static absl::StatusOr<FileWindow> Open(
      const std::string& path, size_t piece_bytes = kFileWindowPieceBytes,
      FileIo& io = FileIo::Real());

  FileWindow(FileWindow&&) = default;
  FileWindow& operator=(FileWindow&&) = default;

  // The file's size: as fstat gave it at Open, or where it was found to end
  // when it has shrunk since. Bytes it gained after Open are not read.
  uint64_t size() const { return size_; }

  // Holds bytes [offset, offset + want) of the file, or as many of them as
  // it has, and returns everything held from `offset` on: at least
  // min(want, size() - offset) bytes. Reads a piece at a time. INTERNAL
  // naming the path when a read fails, and when `offset` is below an
  // earlier call's (the window only moves forward) or above size().
  // A call invalidates the views earlier calls returned.
  absl::StatusOr<std::string_view> Hold(uint64_t offset, size_t want);

  // Starts over at the beginning of the file, keeping the buffer.
  void Rewind() {
    start_ = 0;
    held_ = 0;
  }

  // The memory the window holds for bytes: at most the larger of a piece
  // and the largest `want`, with room to grow by half.
  size_t buffer_bytes() const { return capacity_; }

 private:
  FileWindow(std::string path, UniqueFd fd, uint64_t size, size_t piece_bytes,
             FileIo* io)
      : path_(std::move(path)),
        fd_(std::move(fd)),
        size_(size),
        piece_bytes_(piece_bytes),
        io_(io) {}

  // Makes room for `bytes` in the buffer, keeping what it holds.
  void Reserve(size_t bytes);

  std::string path_;
  UniqueFd fd_;
  uint64_t size_ = 0;
  size_t piece_bytes_ = 0;
  FileIo* io_ = nullptr;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  uint64_t start_ = 0;  // file offset of buffer_[0]
  size_t held_ = 0;     // bytes of the file in buffer_
};

// Reads the framed record (record_framing.h) at `offset` through `window`:
// its header, then as many bytes as its length gives (a length ReadRecord
// refuses needs none). The outcome is ReadRecord's on the rest of the file
// from `offset`; the payload is valid until the window's next call.
absl::StatusOr<RecordRead> ReadRecordAt(FileWindow& window, uint64_t offset);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_FILE_WINDOW_H_
