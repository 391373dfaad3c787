#include "core/hit_count_query.h"

#include <vector>

#include "core/backend_status.h"
#include "core/hash_collapse.h"

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

absl::Status RunHitCounts(IndexBackend* backend,
                          const v1::GetExternalKvHitCountsRequest& req,
                          v1::GetExternalKvHitCountsResponse* resp) {
  resp->Clear();
  std::vector<int64_t> buffer;
  const HashSpan hashes = CollapseKeepFirst(
      HashSpan{req.hashes().data(), static_cast<size_t>(req.hashes_size())},
      &buffer);
  std::vector<uint64_t> counts(hashes.size, 0);
  const BackendStatus status = backend->HitCounts(hashes, counts.data());
  if (absl::Status s = ToAbslStatus(status); !s.ok()) return s;
  for (size_t i = 0; i < hashes.size; ++i) {
    if (counts[i] == 0) continue;
    v1::HitCountEntry* entry = resp->add_entries();
    entry->set_hash(hashes.data[i]);
    entry->set_hit_count_total(counts[i]);
  }
  return absl::OkStatus();
}

}  // namespace kvindexer
