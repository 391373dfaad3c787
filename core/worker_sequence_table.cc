#include "core/worker_sequence_table.h"

#include <algorithm>

#include "absl/strings/string_view.h"
#include "common/absl_view.h"
#include "core/stream_key.h"

namespace kvindexer {
namespace {}  // namespace

const WorkerRecord* WorkerSequenceTable::Find(
    std::string_view worker_id) const {
  auto it = records_.find(AbslView(worker_id));
  return it == records_.end() ? nullptr : &it->second;
}

WorkerRecord* WorkerSequenceTable::FindToChange(std::string_view worker_id) {
  auto it = records_.find(AbslView(worker_id));
  if (it == records_.end()) return nullptr;
  Touch(worker_id);
  return &it->second;
}

WorkerClaims* WorkerSequenceTable::FindClaims(std::string_view worker_id) {
  auto it = records_.find(AbslView(worker_id));
  return it == records_.end() ? nullptr : &it->second.claims;
}

WorkerRecord& WorkerSequenceTable::FindOrAdd(std::string_view worker_id,
                                             bool* created) {
  Touch(worker_id);
  if (auto it = records_.find(AbslView(worker_id)); it != records_.end()) {
    if (created != nullptr) *created = false;
    return it->second;
  }
  if (created != nullptr) *created = true;
  WorkerRecord& record =
      records_.try_emplace(std::string(worker_id)).first->second;
  record.namespaced = !DecodeStreamKey(worker_id).ns.empty();
  record.incarnation = ++last_incarnation_;
  return record;
}

bool WorkerSequenceTable::Erase(std::string_view worker_id) {
  Touch(worker_id);
  auto it = records_.find(AbslView(worker_id));
  if (it == records_.end()) return false;
  records_.erase(it);
  return true;
}

void WorkerSequenceTable::Touch(std::string_view worker_id) {
  if (!changed_.empty() && changed_.back() == worker_id) return;
  changed_.emplace_back(worker_id);
}

std::vector<std::string> WorkerSequenceTable::TakeChanged() {
  std::vector<std::string> changed;
  changed.swap(changed_);
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  return changed;
}

size_t WorkerSequenceTable::ready_count() const {
  size_t ready = 0;
  for (const auto& [id, record] : records_) ready += record.ready ? 1 : 0;
  return ready;
}

size_t WorkerSequenceTable::covered_count() const {
  size_t covered = 0;
  for (const auto& [id, record] : records_) covered += record.covered() ? 1 : 0;
  return covered;
}

std::vector<std::string> WorkerSequenceTable::WorkerIds() const {
  std::vector<std::string> ids;
  ids.reserve(records_.size());
  for (const auto& [id, record] : records_) ids.push_back(id);
  return ids;
}

}  // namespace kvindexer
