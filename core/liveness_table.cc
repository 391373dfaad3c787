#include "core/liveness_table.h"

#include <algorithm>

#include "absl/strings/string_view.h"
#include "common/absl_view.h"

namespace kvindexer {
namespace {}  // namespace

void LivenessTable::Heartbeat(std::string_view worker_id, TimePoint now,
                              std::chrono::milliseconds ttl) {
  Rearm(worker_id, now, ttl);
  Bump(heartbeats_);
}

void LivenessTable::Rearm(std::string_view worker_id, TimePoint now,
                          std::chrono::milliseconds ttl) {
  Marker& marker = markers_[AbslView(worker_id)];
  marker.deadline = now + ttl;
  marker.last_heartbeat = now;
  marker.ttl = ttl;
  PublishMarked();
}

bool LivenessTable::NoteMalformed(std::string_view worker_id) {
  Bump(malformed_);
  if (warned_.contains(AbslView(worker_id))) return false;
  if (warned_.size() >= kMaxWarnedWorkers) warned_.clear();
  warned_.emplace(worker_id);
  return true;
}

void LivenessTable::Unmark(std::string_view worker_id) {
  markers_.erase(AbslView(worker_id));
  PublishMarked();
}

std::optional<LivenessTable::TimePoint> LivenessTable::Deadline(
    std::string_view worker_id) const {
  const auto it = markers_.find(AbslView(worker_id));
  if (it == markers_.end()) return std::nullopt;
  return it->second.deadline;
}

std::optional<LivenessTable::TimePoint> LivenessTable::LastHeartbeat(
    std::string_view worker_id) const {
  const auto it = markers_.find(AbslView(worker_id));
  if (it == markers_.end()) return std::nullopt;
  return it->second.last_heartbeat;
}

std::optional<std::chrono::milliseconds> LivenessTable::Ttl(
    std::string_view worker_id) const {
  const auto it = markers_.find(AbslView(worker_id));
  if (it == markers_.end()) return std::nullopt;
  return it->second.ttl;
}

std::vector<LivenessTable::MarkerTtl> LivenessTable::MarkerTtls() const {
  std::vector<MarkerTtl> out;
  out.reserve(markers_.size());
  for (const auto& [id, marker] : markers_) out.push_back({id, marker.ttl});
  std::sort(out.begin(), out.end(), [](const MarkerTtl& a, const MarkerTtl& b) {
    return a.worker_id < b.worker_id;
  });
  return out;
}

LivenessTable::SweepPlan LivenessTable::PlanSweep(
    TimePoint now, absl::FunctionRef<bool(std::string_view)> has_record) {
  return PlanSweep(now, has_record, [](std::string_view) { return true; });
}

LivenessTable::SweepPlan LivenessTable::PlanSweep(
    TimePoint now, absl::FunctionRef<bool(std::string_view)> has_record,
    absl::FunctionRef<bool(std::string_view)> before_drop) {
  Bump(sweeps_);
  SweepPlan plan;
  size_t alive = 0;
  std::vector<Expired> expired;
  for (auto it = markers_.begin(); it != markers_.end();) {
    const bool past = now > it->second.deadline;
    if (!has_record(it->first)) {
      // Not in the census. An expired one is forgotten, so that ids that
      // only ever heartbeat cannot grow the table.
      if (past && before_drop(it->first)) {
        markers_.erase(it++);
      } else {
        ++it;
      }
      continue;
    }
    ++plan.census;
    if (past) {
      expired.push_back({it->first, now - it->second.last_heartbeat});
    } else {
      ++alive;
    }
    ++it;
  }
  PublishMarked();
  if (expired.empty()) return plan;
  if (alive == 0 && plan.census >= 2) {
    plan.refused = true;
    Bump(refused_);
    return plan;
  }
  std::sort(expired.begin(), expired.end(),
            [](const Expired& a, const Expired& b) {
              return a.worker_id < b.worker_id;
            });
  plan.to_clear = std::move(expired);
  return plan;
}

LivenessStats LivenessTable::stats() const {
  LivenessStats s;
  s.heartbeats = heartbeats_.load(std::memory_order_relaxed);
  s.malformed_heartbeats = malformed_.load(std::memory_order_relaxed);
  s.sweeps = sweeps_.load(std::memory_order_relaxed);
  s.sweeps_refused = refused_.load(std::memory_order_relaxed);
  s.workers_cleared = cleared_.load(std::memory_order_relaxed);
  s.clear_failures = clear_failures_.load(std::memory_order_relaxed);
  s.marked_workers = marked_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace kvindexer
