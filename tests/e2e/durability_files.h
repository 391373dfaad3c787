// The files of a server's data directory as the durability e2e tests see
// them from outside (docs/durability.md, "File format"): which generations
// are present, and the damage the tests do to them. The header layout is the
// one of durable/record_framing.h; the tests compute its CRC32C themselves
// so that they do not trust the code they test.
#ifndef KVINDEXER_TESTS_E2E_DURABILITY_FILES_H_
#define KVINDEXER_TESTS_E2E_DURABILITY_FILES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvindexer::e2e {

struct DataDirFiles {
  std::vector<uint64_t> checkpoints;  // generations, ascending
  std::vector<uint64_t> wals;         // generations, ascending
  std::vector<std::string> others;    // every other name (LOCK, *.tmp, ...)
  uint64_t bytes = 0;                 // all regular files
  bool writing_checkpoint = false;    // a checkpoint-*.tmp exists
};
// An empty listing (not an error) when `dir` does not exist yet.
absl::StatusOr<DataDirFiles> ListDataDir(const std::string& dir);

// checkpoint-<16 digits>.ckpt, wal-<16 digits>.log.
std::string CheckpointPath(const std::string& dir, uint64_t generation);
std::string WalPath(const std::string& dir, uint64_t generation);

// Bitwise CRC32C (Castagnoli, reflected 0x82F63B78).
uint32_t ReferenceCrc32c(std::string_view data);

// Rewrites the format version of the file header (bytes 8..11) and fixes
// the header CRC (bytes 24..27), so that only the version is wrong.
absl::Status SetHeaderVersion(const std::string& path, uint32_t version);
// Flips every bit of the byte in the middle of the file.
absl::Status FlipMiddleByte(const std::string& path);

absl::StatusOr<std::string> ReadWholeFile(const std::string& path);
absl::Status WriteWholeFile(const std::string& path, std::string_view bytes);

}  // namespace kvindexer::e2e

#endif  // KVINDEXER_TESTS_E2E_DURABILITY_FILES_H_
