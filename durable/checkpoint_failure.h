// Why a checkpoint was not written (docs/durability.md, "Checkpoints"), for
// the counts the store keeps and the metrics show.
#ifndef KVINDEXER_DURABLE_CHECKPOINT_FAILURE_H_
#define KVINDEXER_DURABLE_CHECKPOINT_FAILURE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvindexer::durable {

// The names are the `reason` label of kvindexer_checkpoint_failures_total
// (docs/metrics.md).
enum class CheckpointFailure {
  kRotate,   // "rotate": the log could not start its next file; no build
  kBuild,    // "build": the build or its publication failed
  kTimeout,  // "timeout": the build ran past its timeout and was abandoned
};
inline constexpr size_t kCheckpointFailureCount = 3;

constexpr std::string_view CheckpointFailureName(CheckpointFailure failure) {
  switch (failure) {
    case CheckpointFailure::kRotate:
      return "rotate";
    case CheckpointFailure::kBuild:
      return "build";
    case CheckpointFailure::kTimeout:
      return "timeout";
  }
  return "unknown";
}

// Failures so far, by reason.
struct CheckpointFailureCounts {
  std::array<uint64_t, kCheckpointFailureCount> by_reason{};
  uint64_t of(CheckpointFailure failure) const {
    return by_reason[static_cast<size_t>(failure)];
  }
  uint64_t total() const {
    uint64_t sum = 0;
    for (const uint64_t n : by_reason) sum += n;
    return sum;
  }
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_CHECKPOINT_FAILURE_H_
