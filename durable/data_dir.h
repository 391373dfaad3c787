// DataDir: KV_INDEXER_DATA_DIR, owned by one server at a time
// (docs/durability.md, "The data directory").
#ifndef KVINDEXER_DURABLE_DATA_DIR_H_
#define KVINDEXER_DURABLE_DATA_DIR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvindexer::durable {

class DataDir {
 public:
  // Creates `path` (and missing parents; mode 0700) when absent, checks
  // that it is a writable directory that only this process's user can
  // write, and takes an exclusive lock on its LOCK file (flock), writing our
  // PID into it. Errors, all with messages that name the path:
  // FAILED_PRECONDITION "data directory <path> is in use by process <pid>"
  // when another process holds the lock, and when the directory belongs to
  // another user or is writable by its group or by others (docs/security.md,
  // "The data directory"); PERMISSION_DENIED or INTERNAL when it cannot be
  // created, opened or written, or LOCK is not a regular file.
  static absl::StatusOr<std::unique_ptr<DataDir>> Open(const std::string& path);
  // Releases the lock.
  ~DataDir();
  DataDir(const DataDir&) = delete;
  DataDir& operator=(const DataDir&) = delete;

  const std::string& path() const { return path_; }
  std::string WalPath(uint64_t generation) const;
  std::string CheckpointPath(uint64_t generation) const;

  struct Listing {
    std::vector<uint64_t> checkpoints;  // ascending generations
    std::vector<uint64_t> wals;         // ascending generations
    // Generations of wal-<g>.poisoned markers, ascending: logs whose
    // writer failed (durable/wal_writer.h).
    std::vector<uint64_t> poisoned;
  };
  // The generations present. Temporary files a crash left behind
  // (*.tmp) are deleted, with an INFO line each.
  absl::StatusOr<Listing> List();
  // Renames `file` to `file`.corrupt (`file`.corrupt.N when that exists:
  // earlier evidence is never overwritten) and syncs the directory.
  absl::Status MarkCorrupt(const std::string& file);
  // Deletes `file` (absent is fine); the directory is synced by SyncDir.
  absl::Status Remove(const std::string& file);
  absl::Status SyncDir();

 private:
  DataDir(std::string path, int lock_fd);
  std::string path_;
  int lock_fd_;
};

// File names: wal-<generation>.log, checkpoint-<generation>.ckpt and
// wal-<generation>.poisoned, the generation zero-padded to 16 decimal digits.
std::string WalFileName(uint64_t generation);
std::string CheckpointFileName(uint64_t generation);
std::string PoisonMarkerFileName(uint64_t generation);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_DATA_DIR_H_
