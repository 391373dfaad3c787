#include "bridge/chunker.h"

#include <algorithm>

namespace kvindexer::bridge {
namespace {

using kv_indexer::v1::ApplyExternalKvBatchRequest;

ApplyExternalKvBatchRequest NewRequest(const ApplyHeader& header,
                                       uint64_t seq) {
  ApplyExternalKvBatchRequest request;
  request.set_worker_id(header.worker_id);
  request.set_seq(seq);
  request.set_worker_address(header.worker_address);
  if (header.cache_spec.has_value()) {
    *request.mutable_cache_spec() = *header.cache_spec;
  }
  if (header.stream_id) *request.mutable_stream_id() = *header.stream_id;
  if (!header.worker_generation.empty()) {
    request.set_worker_generation(header.worker_generation);
  }
  return request;
}

}  // namespace

std::vector<ApplyExternalKvBatchRequest> ChunkActions(
    const ActionList& actions, const ApplyHeader& header, uint64_t seq,
    const ChunkLimits& limits) {
  std::vector<ApplyExternalKvBatchRequest> requests;
  if (actions.actions.empty()) return requests;

  requests.push_back(NewRequest(header, seq));
  size_t current_hashes = 0;
  for (const KvAction& action : actions.actions) {
    size_t offset = 0;
    do {
      const size_t slice =
          std::min(action.hash_count - offset, limits.max_hashes);
      ApplyExternalKvBatchRequest* current = &requests.back();
      const size_t current_actions =
          static_cast<size_t>(current->actions_size());
      if (current_actions >= limits.max_actions ||
          (current_actions > 0 && current_hashes + slice > limits.max_hashes)) {
        requests.push_back(NewRequest(header, seq));
        current = &requests.back();
        current_hashes = 0;
      }
      kv_indexer::v1::ExternalKvAction* out = current->add_actions();
      out->set_type(
          static_cast<kv_indexer::v1::ExternalKvActionType>(action.kind));
      out->set_tier(static_cast<kv_indexer::v1::TierType>(action.tier));
      if (slice > 0) {
        const size_t begin = action.hash_begin + offset;
        const auto* h = actions.hashes.data() + begin;
        out->mutable_hashes()->Add(h, h + slice);
        if (action.has_side_arrays) {
          const auto* m = actions.masks.data() + begin;
          const auto* s = actions.sizes.data() + begin;
          out->mutable_component_masks()->Add(m, m + slice);
          out->mutable_block_sizes()->Add(s, s + slice);
        }
      }
      current_hashes += slice;
      offset += slice;
    } while (offset < action.hash_count);
  }
  return requests;
}

}  // namespace kvindexer::bridge
