// TestTempDir: a fresh directory (mkdtemp) for one test, removed with
// everything in it when the test ends.
#ifndef KVINDEXER_TESTS_SUPPORT_TEST_TEMP_DIR_H_
#define KVINDEXER_TESTS_SUPPORT_TEST_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "gtest/gtest.h"

namespace kvindexer::durable {

class TestTempDir {
 public:
  TestTempDir() {
    std::string pattern = ::testing::TempDir();
    if (pattern.empty() || pattern.back() != '/') pattern.push_back('/');
    pattern += "kvindexer-durable-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
    EXPECT_FALSE(path_.empty()) << "mkdtemp failed under " << pattern;
  }
  ~TestTempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    // A test may have taken write permission away from a subdirectory.
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(path_, ignored)) {
      if (entry.is_directory(ignored)) {
        std::filesystem::permissions(
            entry.path(), std::filesystem::perms::owner_all,
            std::filesystem::perm_options::add, ignored);
      }
    }
    std::filesystem::remove_all(path_, ignored);
  }
  TestTempDir(const TestTempDir&) = delete;
  TestTempDir& operator=(const TestTempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_TESTS_SUPPORT_TEST_TEMP_DIR_H_
