// INDEXER_EPOCH: the indexer epoch a data directory's server answers with,
// and the boot it was last written in (docs/durability.md, "The indexer
// epoch"). The file is two lines of text:
//
//   epoch <36-character lowercase UUID>
//   boot_id <the kernel's boot id, or empty when it could not be read>
//
// Thread safety: none needed; read and written once, at start-up.
#ifndef KVINDEXER_DURABLE_INDEXER_EPOCH_FILE_H_
#define KVINDEXER_DURABLE_INDEXER_EPOCH_FILE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "durable/file_io.h"

namespace kvindexer::durable {

inline constexpr char kEpochFileName[] = "INDEXER_EPOCH";
inline constexpr char kBootIdPath[] = "/proc/sys/kernel/random/boot_id";

struct EpochFile {
  std::string epoch;
  std::string boot_id;
};

// The file in `dir`; nullopt when it is absent or not in the form above
// (the latter logged at WARN, naming the path): either way the previous
// epoch is unknown.
std::optional<EpochFile> ReadEpochFile(const std::string& dir);

// Replaces the file in `dir`: written under a temporary name, synced,
// renamed into place, and the directory synced, so that a crash leaves the
// old file or the new one. INTERNAL naming the path on any failure.
absl::Status WriteEpochFile(const std::string& dir, const EpochFile& file,
                            FileIo& io);

// The first line of `path` without surrounding blanks; empty when it cannot
// be read (a kernel without the file).
std::string ReadBootId(const std::string& path = kBootIdPath);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_INDEXER_EPOCH_FILE_H_
