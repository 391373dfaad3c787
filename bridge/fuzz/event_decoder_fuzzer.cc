// libFuzzer target: arbitrary bytes as a batch payload through the decoder,
// the action builder and the chunker. Besides sanitizer findings, it aborts
// when an output invariant breaks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bridge/action_builder.h"
#include "bridge/chunker.h"
#include "bridge/event_decoder.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kvindexer::Tier kClearTiers[] = {
      kvindexer::Tier::kHbm, kvindexer::Tier::kDram, kvindexer::Tier::kSsd};
  kvindexer::bridge::DecodedBatch batch;
  const absl::Status status = kvindexer::bridge::EventDecoder().Decode(
      std::string_view(reinterpret_cast<const char*>(data), size), &batch);
  if (!status.ok()) {
    Check(batch.events.empty() && batch.hashes.empty());
    return 0;
  }
  Check(batch.events.size() + batch.skipped.size() == batch.event_count);
  size_t expected_begin = 0;
  for (const kvindexer::bridge::KvEvent& ev : batch.events) {
    if (ev.kind == kvindexer::bridge::EventKind::kClear) continue;
    Check(ev.hash_begin == expected_begin);  // ranges are contiguous
    expected_begin += ev.hash_count;
  }
  Check(expected_begin == batch.hashes.size());

  kvindexer::bridge::ActionList actions;
  kvindexer::bridge::BuildActions(batch, kClearTiers, &actions);
  Check(actions.hashes.size() == batch.hashes.size());
  Check(actions.masks.size() == actions.hashes.size());
  Check(actions.sizes.size() == actions.hashes.size());

  const auto requests = kvindexer::bridge::ChunkActions(
      actions,
      kvindexer::bridge::ApplyHeader{"w", "a", std::nullopt, std::nullopt, ""},
      1,
      kvindexer::bridge::ChunkLimits{64,
                                     4});  // small limits exercise splitting
  size_t total = 0;
  for (const auto& r : requests) {
    Check(r.actions_size() <= 4);
    size_t in_request = 0;
    for (const auto& a : r.actions()) {
      in_request += static_cast<size_t>(a.hashes_size());
      Check(a.component_masks_size() == 0 ||
            a.component_masks_size() == a.hashes_size());
      Check(a.block_sizes_size() == a.component_masks_size());
    }
    Check(in_request <= 64);
    total += in_request;
  }
  Check(total == actions.hashes.size());
  return 0;
}
