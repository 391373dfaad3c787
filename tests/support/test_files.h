// Whole-file reads and writes for tests.
#ifndef KVINDEXER_TESTS_SUPPORT_TEST_FILES_H_
#define KVINDEXER_TESTS_SUPPORT_TEST_FILES_H_

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace kvindexer::durable {

inline std::string ReadTestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Replaces the file rather than truncating it: ext4 flushes a file that is
// truncated and rewritten (auto_da_alloc), which makes tests that rewrite
// one file thousands of times slow.
inline void WriteTestFile(const std::string& path, std::string_view bytes) {
  ::unlink(path.c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline bool TestFileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace kvindexer::durable

#endif  // KVINDEXER_TESTS_SUPPORT_TEST_FILES_H_
