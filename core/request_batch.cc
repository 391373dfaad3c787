#include "core/request_batch.h"

#include <string>

#include "core/worker_batches.h"

namespace kvindexer {
namespace {

HashSpan ViewOf(const google::protobuf::RepeatedField<int64_t>& field) {
  return HashSpan{field.data(), static_cast<size_t>(field.size())};
}

U32Span ViewOf(const google::protobuf::RepeatedField<uint32_t>& field) {
  return U32Span{field.data(), static_cast<size_t>(field.size())};
}

StringView ViewOf(const std::string& s) {
  return StringView{s.data(), s.size()};
}

}  // namespace

RequestBatch::RequestBatch(
    const ::kv_indexer::v1::ApplyExternalKvBatchRequest& req,
    std::string_view backend_id) {
  view_.worker_id = StringView{backend_id.data(), backend_id.size()};
  view_.worker_address = ViewOf(req.worker_address());
  view_.has_cache_spec = req.has_cache_spec() ? 1 : 0;
  if (req.has_cache_spec()) view_.cache_spec = CacheSpecOf(req.cache_spec());

  actions_.reserve(static_cast<size_t>(req.actions_size()));
  for (const ::kv_indexer::v1::ExternalKvAction& action : req.actions()) {
    ActionView view{};
    view.type = static_cast<uint32_t>(action.type());
    view.tier = static_cast<uint32_t>(action.tier());
    switch (view.type) {
      case kActionReport: {
        // Reserved once, so the views into earlier buffers stay valid
        // while more are added.
        if (buffers_.capacity() == 0) {
          buffers_.reserve(static_cast<size_t>(req.actions_size()));
        }
        buffers_.emplace_back();
        const ReportArrays report =
            CollapseKeepLast(ReportArrays{ViewOf(action.hashes()),
                                          ViewOf(action.component_masks()),
                                          ViewOf(action.block_sizes())},
                             &buffers_.back());
        view.hashes = report.hashes;
        view.component_masks = report.masks;
        view.block_sizes = report.sizes;
        break;
      }
      case kActionRevoke:
        view.hashes = ViewOf(action.hashes());
        break;
      default:  // CLEAR_ALL_AT_TIER: no hashes, no side arrays
        break;
    }
    actions_.push_back(view);
  }
  view_.actions = actions_.data();
  view_.action_count = actions_.size();
}

}  // namespace kvindexer
