// Decodes one SGLang KV-event batch (a msgpack value, docs/bridge-events.md,
// "Event batches") into a DecodedBatch.
//
// Every event shape of "Event batches > Event shapes" is accepted: array
// events of any era (2, 3, 6, 7,
// 8 or more slots), E4 tagged maps, and the WithComponentType tag variants.
// A bad event is skipped alone with a reason; a bad envelope (not an array,
// fewer than 2 elements, index 1 not an array, malformed or truncated
// msgpack, nesting deeper than kMaxNestingDepth) fails the whole batch.
//
// The decoder streams the payload through msgpack-cxx's SAX parser, writing
// hashes straight into one flat vector: it never materialises a msgpack
// object tree, so an array header that claims 2^32 elements costs nothing
// and memory stays linear in the payload size. It never throws.
//
// Thread safety: an EventDecoder is not thread-safe; use one per thread.
#ifndef KVINDEXER_BRIDGE_EVENT_DECODER_H_
#define KVINDEXER_BRIDGE_EVENT_DECODER_H_

#include <string_view>

#include "absl/status/status.h"
#include "bridge/kv_events.h"

namespace kvindexer::bridge {

class EventDecoder {
 public:
  // Containers nested deeper than this fail the batch. Real payloads reach
  // depth 5 (batch, events, event, token_ids, bigram pair).
  static constexpr int kMaxNestingDepth = 32;

  // Decodes `payload` into `*out` (cleared first). On a batch-level error
  // returns InvalidArgument naming the problem and leaves `*out` empty.
  // Skipped events are listed in out->skipped; the batch still succeeds.
  [[nodiscard]] absl::Status Decode(std::string_view payload,
                                    DecodedBatch* out) const;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_EVENT_DECODER_H_
