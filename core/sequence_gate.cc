#include "core/sequence_gate.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kvindexer {

GateDecision DecideGate(const WorkerRecord* record,
                        std::string_view worker_epoch, uint64_t seq,
                        const std::string* line_a_generation) {
  const bool line_a = line_a_generation != nullptr;
  if (record == nullptr || (line_a && !record->configured)) {
    return GateDecision{GateStep::kUnconfigured};
  }
  if (!record->ready || !record->checkpoint.has_value() ||
      record->checkpoint->epoch != worker_epoch ||
      (line_a && record->meta.generation != *line_a_generation)) {
    return GateDecision{GateStep::kNotReady};
  }
  const uint64_t checkpoint = record->checkpoint->seq;
  const uint64_t expected = SaturatingNext(checkpoint);
  if (seq <= checkpoint) {
    return GateDecision{GateStep::kDuplicate, checkpoint, expected};
  }
  if (seq != expected)
    return GateDecision{GateStep::kGap, checkpoint, expected};
  return GateDecision{GateStep::kAccept, checkpoint, expected};
}

absl::Status GateRefusal(const GateDecision& decision, uint64_t seq) {
  switch (decision.step) {
    case GateStep::kUnconfigured:
      return absl::FailedPreconditionError(kUnconfiguredApplyMessage);
    case GateStep::kNotReady:
      return absl::FailedPreconditionError(kNotReadyMessage);
    case GateStep::kGap:
      return absl::FailedPreconditionError(absl::StrCat(
          "event sequence gap: expected ", decision.expected, ", got ", seq));
    case GateStep::kDuplicate:
    case GateStep::kAccept:
      break;
  }
  return absl::InternalError("the sequence gate accepted this apply");
}

}  // namespace kvindexer
