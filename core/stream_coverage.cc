#include "core/stream_coverage.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <mutex>
#include <string_view>
#include <utility>

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

void StreamCoverageTable::Unindex(Entry* entry) {
  auto it = by_address_.find(entry->stream->address);
  if (it == by_address_.end()) return;
  it->second.erase(entry);
  if (it->second.empty()) by_address_.erase(it);
}

void StreamCoverageTable::Renumber() {
  const uint64_t spacing =
      std::numeric_limits<uint64_t>::max() / (by_key_.size() + 1);
  uint64_t order = 0;
  for (auto& [key, entry] : by_key_) entry->order = order += spacing;
}

void StreamCoverageTable::Order(KeyIndex::iterator at) {
  // Appending in key order, the common case, steps by a fixed amount, so
  // that space runs out only after billions of keys; a key between two
  // others takes the middle of their gap.
  constexpr uint64_t kStep = uint64_t{1} << 32;
  const uint64_t lower =
      at == by_key_.begin() ? 0 : std::prev(at)->second->order;
  const uint64_t upper = std::next(at) == by_key_.end()
                             ? std::numeric_limits<uint64_t>::max()
                             : std::next(at)->second->order;
  const uint64_t gap = upper - lower;
  if (gap < 2) {
    Renumber();
    return;
  }
  at->second->order = lower + std::min(gap / 2, kStep);
}

void StreamCoverageTable::Publish(std::vector<CoveredStream> changed,
                                  const std::vector<std::string>& erased) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  for (CoveredStream& stream : changed) {
    std::unique_ptr<Entry>& slot = by_id_[stream.backend_id];
    if (slot == nullptr) {
      slot = std::make_unique<Entry>();
      Order(by_key_.emplace(stream.key, slot.get()).first);
    } else {
      Unindex(slot.get());
    }
    by_address_[stream.address].insert(slot.get());
    slot->stream = std::make_shared<const CoveredStream>(std::move(stream));
  }
  for (const std::string& id : erased) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) continue;
    Unindex(it->second.get());
    by_key_.erase(it->second->stream->key);
    by_id_.erase(it);
  }
}

void StreamCoverageTable::Select(const v1::MatchExternalKvPrefixRequest& req,
                                 CoverageSelection* out) const {
  // Per thread, so that a scan thread's queries reuse their buffers.
  thread_local std::vector<const Entry*> picked;
  thread_local std::vector<std::shared_ptr<const CoveredStream>> named;
  thread_local absl::flat_hash_set<std::string> seen_ids;
  thread_local absl::flat_hash_set<std::string_view> seen_uncovered;
  picked.clear();
  named.clear();
  out->uncovered_addresses.clear();
  bool all_covered = true;
  {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (req.eligible_streams_size() > 0) {
      seen_ids.clear();
      for (const v1::StreamId& id : req.eligible_streams()) {
        StreamKey key = StreamKeyOf(id);
        std::string backend_id = EncodeStreamKey(key);
        auto it = by_id_.find(backend_id);
        if (!seen_ids.insert(std::move(backend_id)).second) continue;
        if (it != by_id_.end()) {
          picked.push_back(it->second.get());
          continue;
        }
        // Named, but no such stream: shown, never covered.
        auto stub = std::make_shared<CoveredStream>();
        stub->key = std::move(key);
        named.push_back(std::move(stub));
      }
    } else {
      // A found address may repeat: its entries are de-duplicated once
      // sorted. A missing one is reported once, in first-seen order.
      seen_uncovered.clear();
      for (const std::string& address : req.eligible_worker_addresses()) {
        auto it = by_address_.find(address);
        if (it == by_address_.end()) {
          if (seen_uncovered.insert(address).second) {
            out->uncovered_addresses.push_back(address);
          }
          continue;
        }
        picked.insert(picked.end(), it->second.begin(), it->second.end());
      }
    }
    std::sort(picked.begin(), picked.end(), [](const Entry* a, const Entry* b) {
      return a->order < b->order;
    });
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    out->streams.resize(picked.size());
    for (size_t i = 0; i < picked.size(); ++i) {
      out->streams[i] = picked[i]->stream;
      all_covered = all_covered && picked[i]->stream->covered;
    }
  }
  if (!named.empty()) {
    // Rare: streams that do not exist join the selection in key order.
    out->streams.insert(out->streams.end(), named.begin(), named.end());
    std::sort(out->streams.begin(), out->streams.end(),
              [](const auto& a, const auto& b) { return a->key < b->key; });
  }
  out->complete = !out->streams.empty() && named.empty() &&
                  out->uncovered_addresses.empty() && all_covered;
}

}  // namespace kvindexer
