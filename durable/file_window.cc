#include "durable/file_window.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvindexer::durable {

absl::StatusOr<FileWindow> FileWindow::Open(const std::string& path,
                                            size_t piece_bytes, FileIo& io) {
  absl::StatusOr<FileForReading> file = OpenForReading(path);
  if (!file.ok()) return file.status();
  // Only a hint for the kernel's read-ahead; its failure changes nothing.
  (void)::posix_fadvise(file->fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return FileWindow(path, std::move(file->fd), file->size,
                    std::max<size_t>(piece_bytes, 1), &io);
}

void FileWindow::Reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  const size_t capacity = std::max(bytes, capacity_ + capacity_ / 2);
  // Not value-initialised: the bytes are read into before they are used.
  std::unique_ptr<char[]> grown(new char[capacity]);
  if (held_ > 0) memcpy(grown.get(), buffer_.get(), held_);
  buffer_ = std::move(grown);
  capacity_ = capacity;
}

absl::StatusOr<std::string_view> FileWindow::Hold(uint64_t offset,
                                                  size_t want) {
  if (offset < start_ || offset > size_) {
    return absl::InternalError(absl::StrCat("reading ", path_, ": offset ",
                                            offset, " is outside the window's ",
                                            start_, " to ", size_));
  }
  const uint64_t end = offset + std::min<uint64_t>(want, size_ - offset);
  if (end > start_ + held_) {
    // Drop what lies before `offset`, keep the rest, then read on.
    const uint64_t drop = std::min<uint64_t>(offset - start_, held_);
    if (drop > 0 && drop < held_) {
      memmove(buffer_.get(), buffer_.get() + drop, held_ - drop);
    }
    held_ -= static_cast<size_t>(drop);
    start_ = offset;
    const size_t target = static_cast<size_t>(std::min<uint64_t>(
        std::max<uint64_t>(end - start_, piece_bytes_), size_ - start_));
    Reserve(target);
    while (held_ < target) {
      const ssize_t n =
          io_->Pread(fd_.get(), buffer_.get() + held_, target - held_,
                     static_cast<off_t>(start_ + held_));
      if (n < 0) {
        if (errno == EINTR) continue;
        return absl::InternalError(
            absl::StrCat("cannot read ", path_, ": ", ErrnoText(errno)));
      }
      if (n == 0) {  // the file shrank since Open
        size_ = start_ + held_;
        break;
      }
      held_ += static_cast<size_t>(n);
    }
  }
  const size_t skip = static_cast<size_t>(offset - start_);
  return std::string_view(buffer_.get() + skip, held_ - skip);
}

absl::StatusOr<RecordRead> ReadRecordAt(FileWindow& window, uint64_t offset) {
  absl::StatusOr<std::string_view> held =
      window.Hold(offset, kRecordHeaderBytes);
  if (!held.ok()) return held.status();
  if (held->size() >= kRecordHeaderBytes) {
    const uint32_t length = RecordPayloadLength(*held);
    if (length != 0 && length <= kMaxRecordBytes) {
      held = window.Hold(offset, kRecordHeaderBytes + length);
      if (!held.ok()) return held.status();
    }
  }
  return ReadRecord(*held);
}

}  // namespace kvindexer::durable
