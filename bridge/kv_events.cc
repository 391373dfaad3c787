#include "bridge/kv_events.h"

namespace kvindexer::bridge {

std::string_view EventSkipReasonName(EventSkipReason reason) {
  switch (reason) {
    case EventSkipReason::kUnknownTag:
      return "unknown_tag";
    case EventSkipReason::kNotAnEvent:
      return "not_an_event";
    case EventSkipReason::kMissingTag:
      return "missing_tag";
    case EventSkipReason::kMissingHashes:
      return "missing_hashes";
    case EventSkipReason::kBadHashes:
      return "bad_hashes";
    case EventSkipReason::kMissingMedium:
      return "missing_medium";
    case EventSkipReason::kUnknownMedium:
      return "unknown_medium";
    case EventSkipReason::kBadComponents:
      return "bad_components";
    case EventSkipReason::kBadBlockSize:
      return "bad_block_size";
  }
  return "unknown";
}

}  // namespace kvindexer::bridge
