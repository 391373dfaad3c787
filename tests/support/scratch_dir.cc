#include "tests/support/scratch_dir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::test_support {

absl::StatusOr<std::unique_ptr<ScratchDir>> ScratchDir::Create(
    const std::string& prefix, const std::string& parent) {
  std::string base = parent;
  if (base.empty()) {
    const char* tmpdir = getenv("TMPDIR");
    base = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  }
  std::string pattern = absl::StrCat(base, "/", prefix, "XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("mkdtemp ", pattern, ": ", strerror(errno)));
  }
  return std::unique_ptr<ScratchDir>(new ScratchDir(std::move(pattern)));
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDir::Sub(const std::string& name) const {
  return absl::StrCat(path_, "/", name);
}

}  // namespace kvindexer::test_support
