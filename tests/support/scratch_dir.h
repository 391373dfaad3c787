// ScratchDir: a fresh directory for one test (or one benchmark run), made
// with mkdtemp under $TMPDIR (or /tmp, or a given parent) and removed with
// everything in it when the object goes.
//
// Thread safety: none needed; the object only owns the path.
#ifndef KVINDEXER_TESTS_SUPPORT_SCRATCH_DIR_H_
#define KVINDEXER_TESTS_SUPPORT_SCRATCH_DIR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace kvindexer::test_support {

class ScratchDir {
 public:
  // Creates <parent>/<prefix>XXXXXX (mode 0700). An empty `parent` means
  // $TMPDIR, or /tmp when that is unset.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ScratchDir>> Create(
      const std::string& prefix, const std::string& parent = "");
  // Removes the directory and its contents; errors are ignored.
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string Sub(const std::string& name) const;

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_SCRATCH_DIR_H_
