// The sequence gate of gated applies (docs/contract.md, "Recovery > The
// sequence gate"): which of steps G1 to G5 a request with
// enforce_sequence = true takes, given the worker's record, and the statuses
// of the steps that refuse it. Deciding reads only its arguments; the Indexer
// carries the decision out under its mutation mutex.
//
// Thread safety: the functions are pure.
#ifndef KVINDEXER_CORE_SEQUENCE_GATE_H_
#define KVINDEXER_CORE_SEQUENCE_GATE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/worker_sequence_table.h"

namespace kvindexer {

inline constexpr char kUnconfiguredApplyMessage[] =
    "stream must be configured before recovery-aware apply";
inline constexpr char kNotReadyMessage[] =
    "stream has no READY snapshot for this generation and epoch";

enum class GateStep {
  kUnconfigured,  // G1: no record
  kNotReady,      // G2: not ready, or another epoch (or none)
  kDuplicate,     // G3: seq <= checkpoint; acknowledged, nothing applied
  kGap,           // G4: seq != checkpoint + 1; the worker is invalidated
  kAccept,        // G5: seq == checkpoint + 1
};

struct GateDecision {
  GateStep step;
  // The checkpoint (kDuplicate, kGap, kAccept); 0 otherwise.
  uint64_t checkpoint = 0;
  // SaturatingNext(checkpoint) (kGap, kAccept); 0 otherwise.
  uint64_t expected = 0;
};

// n + 1, or n when n is the largest uint64.
constexpr uint64_t SaturatingNext(uint64_t n) {
  return n == std::numeric_limits<uint64_t>::max() ? n : n + 1;
}

// `record` is null when the worker has none. The epoch comparison is byte
// for byte; a record without a checkpoint matches no epoch, not even "".
// A line-A apply passes its worker_generation (docs/contract.md, "Streams >
// Where line A differs"): G1 then also refuses a record no Configure listed,
// and G2 a stored generation that differs byte for byte (empty equals only
// empty). Null: the seed-era gate.
[[nodiscard]] GateDecision DecideGate(
    const WorkerRecord* record, std::string_view worker_epoch, uint64_t seq,
    const std::string* line_a_generation = nullptr);

// The FAILED_PRECONDITION status of a refusing step (kUnconfigured,
// kNotReady, kGap). REQUIRES: decision.step is one of them.
[[nodiscard]] absl::Status GateRefusal(const GateDecision& decision,
                                       uint64_t seq);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_SEQUENCE_GATE_H_
