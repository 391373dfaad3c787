// The line a server with a data directory logs once it has loaded its
// state (docs/durability.md, "Recovery"): "recovered W workers, P
// placements from checkpoint G plus R log records (B bytes) in T ms
// (checkpoint C ms, log L ms: ...)". The durability end-to-end tests and
// the durability benchmark read it from the server's output.
#ifndef KVINDEXER_TESTS_SUPPORT_RECOVERED_LINE_H_
#define KVINDEXER_TESTS_SUPPORT_RECOVERED_LINE_H_

#include <cstdint>
#include <optional>
#include <string>

namespace kvindexer::test_support {

struct RecoveredLine {
  uint64_t workers = 0;
  uint64_t placements = 0;
  uint64_t checkpoint = 0;
  uint64_t log_records = 0;
  uint64_t log_bytes = 0;
  uint64_t ms = 0;
  // The parts of `ms`; 0 when the line does not give them.
  uint64_t checkpoint_ms = 0;
  uint64_t log_ms = 0;
  std::string text;  // the whole line, without its newline
};

// The first line of `output` that holds the sentence up to "in T ms";
// nullopt when none does.
std::optional<RecoveredLine> FindRecoveredLine(const std::string& output);

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_RECOVERED_LINE_H_
