// The decoded form of one SGLang KV-event batch: what the event decoder
// produces and the action builder consumes. Plain data, no behaviour.
#ifndef KVINDEXER_BRIDGE_KV_EVENTS_H_
#define KVINDEXER_BRIDGE_KV_EVENTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/wire_vocabulary.h"

namespace kvindexer::bridge {

// Tiers and component bits are those of common/wire_vocabulary.h.

enum class EventKind : uint8_t { kStore, kRemove, kClear };

// One accepted event. Its hashes are batch.hashes[hash_begin, hash_begin +
// hash_count). A clear has no hashes and no tier.
struct KvEvent {
  EventKind kind = EventKind::kClear;
  Tier tier = Tier::kHbm;
  size_t hash_begin = 0;
  size_t hash_count = 0;
  // Store only: true when the event carried component information
  // (docs/bridge-events.md, "Event batches > Components and block size");
  // then component_mask and block_size apply to every hash.
  bool has_components = false;
  uint32_t component_mask = 0;
  uint32_t block_size = 0;
};

// Why an event was not turned into a KvEvent. kUnknownTag is "ignored"
// (DEBUG); every other reason is "skipped" (WARN).
enum class EventSkipReason : uint8_t {
  kUnknownTag,
  kNotAnEvent,
  kMissingTag,
  kMissingHashes,
  kBadHashes,
  kMissingMedium,
  kUnknownMedium,
  kBadComponents,
  kBadBlockSize,
};
inline constexpr size_t kEventSkipReasonCount = 9;

// Stable snake_case name used in logs and the stats line.
std::string_view EventSkipReasonName(EventSkipReason reason);

struct SkippedEvent {
  size_t index = 0;  // position of the event in the batch's events list
  EventSkipReason reason = EventSkipReason::kNotAnEvent;
  std::string detail;  // short human-readable explanation
};

// A decoded batch. Reusable: Clear() keeps the vectors' capacity so that a
// long-running decoder does not allocate per batch in steady state.
struct DecodedBatch {
  std::vector<int64_t> hashes;
  std::vector<KvEvent> events;
  std::vector<SkippedEvent> skipped;
  size_t event_count = 0;  // events seen in the batch, accepted or not

  void Clear() {
    hashes.clear();
    events.clear();
    skipped.clear();
    event_count = 0;
  }
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_KV_EVENTS_H_
