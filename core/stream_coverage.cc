#include "core/stream_coverage.h"

#include <algorithm>
#include <mutex>
#include <string_view>
#include <utility>

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

void StreamCoverageTable::Unindex(const CoveredStream& stream) {
  auto it = by_address_.find(stream.address);
  if (it == by_address_.end()) return;
  it->second.erase(stream.backend_id);
  if (it->second.empty()) by_address_.erase(it);
}

void StreamCoverageTable::Publish(std::vector<CoveredStream> changed,
                                  const std::vector<std::string>& erased) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (CoveredStream& stream : changed) {
    auto it = streams_.find(stream.backend_id);
    if (it != streams_.end()) Unindex(it->second);
    by_address_[stream.address].insert(stream.backend_id);
    std::string id = stream.backend_id;
    streams_.insert_or_assign(std::move(id), std::move(stream));
  }
  for (const std::string& id : erased) {
    auto it = streams_.find(id);
    if (it == streams_.end()) continue;
    Unindex(it->second);
    streams_.erase(it);
  }
}

void StreamCoverageTable::Select(const v1::MatchExternalKvPrefixRequest& req,
                                 CoverageSelection* out) const {
  // Per thread, so that a scan thread's queries reuse their buffers: the
  // selection is gathered as pointers, sorted, and copied into `out`'s
  // existing elements (whose strings keep their capacity).
  thread_local std::vector<const CoveredStream*> picked;
  thread_local std::vector<CoveredStream> named;  // streams that do not exist
  thread_local absl::flat_hash_set<std::string> seen_ids;
  thread_local absl::flat_hash_set<std::string_view> seen_addresses;
  picked.clear();
  named.clear();
  out->uncovered_addresses.clear();
  bool missing = false;
  std::shared_lock<std::shared_mutex> lock(mu_);
  if (req.eligible_streams_size() > 0) {
    seen_ids.clear();
    named.reserve(static_cast<size_t>(req.eligible_streams_size()));
    for (const v1::StreamId& id : req.eligible_streams()) {
      StreamKey key = StreamKeyOf(id);
      std::string backend_id = EncodeStreamKey(key);
      auto it = streams_.find(backend_id);
      if (!seen_ids.insert(std::move(backend_id)).second) continue;
      if (it != streams_.end()) {
        picked.push_back(&it->second);
        continue;
      }
      // Named, but no such stream: shown, never covered.
      missing = true;
      CoveredStream& stub = named.emplace_back();
      stub.key = std::move(key);
    }
    // `named` no longer grows: pointers into it stay valid.
    for (const CoveredStream& stub : named) picked.push_back(&stub);
  } else {
    seen_addresses.clear();
    for (const std::string& address : req.eligible_worker_addresses()) {
      if (!seen_addresses.insert(address).second) continue;
      auto it = by_address_.find(address);
      if (it == by_address_.end()) {
        out->uncovered_addresses.push_back(address);
        continue;
      }
      for (const std::string& backend_id : it->second) {
        picked.push_back(&streams_.at(backend_id));
      }
    }
  }
  std::sort(picked.begin(), picked.end(),
            [](const CoveredStream* a, const CoveredStream* b) {
              return a->key < b->key;
            });
  out->streams.resize(picked.size());
  bool all_covered = true;
  for (size_t i = 0; i < picked.size(); ++i) {
    out->streams[i] = *picked[i];
    all_covered = all_covered && picked[i]->covered;
  }
  out->complete = !out->streams.empty() && !missing &&
                  out->uncovered_addresses.empty() && all_covered;
}

}  // namespace kvindexer
