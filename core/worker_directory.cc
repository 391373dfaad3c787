#include "core/worker_directory.h"

#include <utility>

namespace kvindexer {

void WorkerDirectory::Count(const WorkerSnapshot& w, int64_t sign) {
  const auto add = [sign](uint64_t& counter, bool holds) {
    if (holds) counter += static_cast<uint64_t>(sign);
  };
  add(counts_.total, true);
  add(counts_.ready, w.ready);
  add(counts_.covered, w.covered);
  add(counts_.sequenced, w.sequence_state == SequenceState::kSequenced);
  add(counts_.configured, w.configured);
  add(counts_.heartbeating, w.heartbeat_deadline.has_value());
  add(counts_.evicted, w.evicted);
  const auto fidelity = static_cast<size_t>(w.fidelity);
  if (fidelity < counts_.by_fidelity.size()) {
    add(counts_.by_fidelity[fidelity], true);
  }
}

void WorkerDirectory::Publish(std::vector<WorkerSnapshot> changed,
                              const std::vector<std::string>& erased) {
  std::lock_guard<std::mutex> lock(mu_);
  for (WorkerSnapshot& w : changed) {
    auto it = entries_.find(w.worker_id);
    if (it == entries_.end()) {
      Count(w, +1);
      std::string id = w.worker_id;
      entries_.emplace(std::move(id), std::move(w));
      continue;
    }
    Count(it->second, -1);
    Count(w, +1);
    it->second = std::move(w);
  }
  for (const std::string& id : erased) {
    auto it = entries_.find(id);
    if (it == entries_.end()) continue;
    Count(it->second, -1);
    entries_.erase(it);
  }
}

std::optional<WorkerSnapshot> WorkerDirectory::Find(
    std::string_view worker_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(worker_id);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::vector<WorkerSnapshot> WorkerDirectory::Page(std::string_view after,
                                                  size_t limit) const {
  std::vector<WorkerSnapshot> page;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = after.empty() ? entries_.begin() : entries_.upper_bound(after);
  for (; it != entries_.end() && page.size() < limit; ++it) {
    page.push_back(it->second);
  }
  return page;
}

WorkerCounts WorkerDirectory::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

}  // namespace kvindexer
