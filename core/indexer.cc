#include "core/indexer.h"

#include <vector>

#include "absl/container/inlined_vector.h"
#include "core/backend_status.h"
#include "core/hash_collapse.h"
#include "core/hit_count_query.h"
#include "core/match_assembler.h"
#include "core/prefix_query.h"
#include "core/request_validation.h"

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

Indexer::Indexer(IndexBackend* backend) : backend_(backend) {}

absl::Status Indexer::Apply(const v1::ApplyExternalKvBatchRequest& req) {
  if (absl::Status s = ValidateApply(req); !s.ok()) return s;

  ApplyBatchView batch{};
  batch.worker_id = ViewOf(req.worker_id());
  batch.worker_address = ViewOf(req.worker_address());
  batch.has_cache_spec = req.has_cache_spec() ? 1 : 0;
  if (req.has_cache_spec()) {
    const v1::WorkerCacheSpec& spec = req.cache_spec();
    batch.cache_spec = CacheSpec{
        spec.version(),        spec.components(),    spec.swa_window_tokens(),
        spec.full_tier_mask(), spec.swa_tier_mask(), spec.mamba_tier_mask()};
  }

  absl::InlinedVector<ActionView, 16> actions;
  actions.reserve(static_cast<size_t>(req.actions_size()));
  // Buffers for REPORTs with repeated hashes; reserved once, so the views
  // into them stay valid while more are added.
  std::vector<ReportBuffer> buffers;
  for (const v1::ExternalKvAction& action : req.actions()) {
    ActionView view{};
    view.type = static_cast<uint32_t>(action.type());
    view.tier = static_cast<uint32_t>(action.tier());
    switch (view.type) {
      case kActionReport: {
        if (buffers.capacity() == 0) {
          buffers.reserve(static_cast<size_t>(req.actions_size()));
        }
        buffers.emplace_back();
        const ReportArrays report =
            CollapseKeepLast(ReportArrays{ViewOf(action.hashes()),
                                          ViewOf(action.component_masks()),
                                          ViewOf(action.block_sizes())},
                             &buffers.back());
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
    actions.push_back(view);
  }
  batch.actions = actions.data();
  batch.action_count = actions.size();
  return ToAbslStatus(backend_->Apply(batch));
}

absl::Status Indexer::Match(const v1::MatchExternalKvRequest& req,
                            v1::MatchExternalKvResponse* resp) {
  if (absl::Status s = ValidateMatch(req); !s.ok()) return s;
  return RunMatch(backend_, req, resp);
}

absl::Status Indexer::MatchPrefix(
    const v1::MatchExternalKvPrefixRequest& req,
    absl::FunctionRef<void(const PrefixAnswer&)> deliver) {
  return RunPrefixQuery(backend_, req, deliver);
}

absl::Status Indexer::HitCounts(const v1::GetExternalKvHitCountsRequest& req,
                                v1::GetExternalKvHitCountsResponse* resp) {
  if (absl::Status s = ValidateHitCounts(req); !s.ok()) return s;
  return RunHitCounts(backend_, req, resp);
}

}  // namespace kvindexer
