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
  out->streams.clear();
  out->uncovered_addresses.clear();
  bool missing = false;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (req.eligible_streams_size() > 0) {
      absl::flat_hash_set<std::string> seen;
      for (const v1::StreamId& id : req.eligible_streams()) {
        StreamKey key = StreamKeyOf(id);
        std::string backend_id = EncodeStreamKey(key);
        if (!seen.insert(backend_id).second) continue;
        auto it = streams_.find(backend_id);
        if (it != streams_.end()) {
          out->streams.push_back(it->second);
          continue;
        }
        // Named, but no such stream: shown, never covered.
        missing = true;
        CoveredStream named;
        named.key = std::move(key);
        out->streams.push_back(std::move(named));
      }
    } else {
      absl::flat_hash_set<std::string_view> seen;
      for (const std::string& address : req.eligible_worker_addresses()) {
        if (!seen.insert(address).second) continue;
        auto it = by_address_.find(address);
        if (it == by_address_.end()) {
          out->uncovered_addresses.push_back(address);
          continue;
        }
        for (const std::string& backend_id : it->second) {
          out->streams.push_back(streams_.at(backend_id));
        }
      }
    }
  }
  std::sort(out->streams.begin(), out->streams.end(),
            [](const CoveredStream& a, const CoveredStream& b) {
              return a.key < b.key;
            });
  bool all_covered = true;
  for (const CoveredStream& stream : out->streams) {
    all_covered = all_covered && stream.covered;
  }
  out->complete = !out->streams.empty() && !missing &&
                  out->uncovered_addresses.empty() && all_covered;
}

}  // namespace kvindexer
