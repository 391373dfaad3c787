#include "fleet/memory_snapshot_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvindexer::fleet {
namespace {

bool ValidId(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace

class MemorySnapshotStore::MemoryWriter final : public SnapshotStore::Writer {
 public:
  MemoryWriter(MemorySnapshotStore* store, std::string id)
      : store_(store), id_(std::move(id)) {}

  ~MemoryWriter() override {
    if (committed_) return;
    std::lock_guard<std::mutex> lock(store_->mu_);
    store_->entries_.erase(id_);
  }

  absl::Status AddPart(std::string_view part) override {
    std::lock_guard<std::mutex> lock(store_->mu_);
    if (absl::Status s = store_->CheckAvailableLocked(); !s.ok()) return s;
    if (committed_) {
      return absl::FailedPreconditionError("snapshot already committed");
    }
    if (part.size() > store_->max_part_bytes_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a snapshot part of ", part.size(), " bytes exceeds the limit of ",
          store_->max_part_bytes_));
    }
    Entry& entry = store_->entries_[id_];
    entry.parts.emplace_back(part);
    entry.last_part_write = ++store_->writes_;
    return absl::OkStatus();
  }

  absl::Status Commit(
      const ::kvindexer::fleet::v1::SnapshotManifest& manifest) override {
    std::lock_guard<std::mutex> lock(store_->mu_);
    if (absl::Status s = store_->CheckAvailableLocked(); !s.ok()) return s;
    if (committed_) {
      return absl::FailedPreconditionError("snapshot already committed");
    }
    Entry& entry = store_->entries_[id_];
    if (manifest.id() != id_ || manifest.parts() != entry.parts.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("manifest of \"", manifest.id(), "\" with ",
                       manifest.parts(), " parts does not describe snapshot \"",
                       id_, "\" with ", entry.parts.size(), " parts"));
    }
    entry.manifest = manifest;
    entry.commit_order = ++store_->commits_;
    entry.manifest_write = ++store_->writes_;
    entry.writing = false;
    committed_ = true;
    return absl::OkStatus();
  }

 private:
  MemorySnapshotStore* const store_;
  const std::string id_;
  bool committed_ = false;
};

class MemorySnapshotStore::MemoryPayloadWriter final
    : public SnapshotStore::PayloadWriter {
 public:
  MemoryPayloadWriter(MemorySnapshotStore* store, std::string id)
      : store_(store), id_(std::move(id)) {}

  ~MemoryPayloadWriter() override {
    std::lock_guard<std::mutex> lock(store_->mu_);
    const auto it = store_->payloads_.find(id_);
    if (it == store_->payloads_.end()) return;
    if (it->second.parts.empty()) {
      store_->payloads_.erase(it);
    } else {
      it->second.writing = false;
    }
  }

  absl::Status AddPart(std::string_view part) override {
    std::lock_guard<std::mutex> lock(store_->mu_);
    if (absl::Status s = store_->CheckAvailableLocked(); !s.ok()) return s;
    if (part.size() > store_->max_part_bytes_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a payload part of ", part.size(), " bytes exceeds the limit of ",
          store_->max_part_bytes_));
    }
    Payload& payload = store_->payloads_[id_];
    payload.parts.emplace_back(part);
    payload.last_part_write = ++store_->writes_;
    return absl::OkStatus();
  }

 private:
  MemorySnapshotStore* const store_;
  const std::string id_;
};

MemorySnapshotStore::MemorySnapshotStore(size_t max_part_bytes)
    : max_part_bytes_(max_part_bytes) {}

MemorySnapshotStore::~MemorySnapshotStore() = default;

absl::Status MemorySnapshotStore::CheckAvailableLocked() const {
  if (unavailable_) {
    return absl::UnavailableError("snapshot store unavailable (test)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>>
MemorySnapshotStore::Begin(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
  if (!ValidId(id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "snapshot id \"", std::string(id), "\" is not [A-Za-z0-9_-]+"));
  }
  if (entries_.count(id) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("snapshot \"", std::string(id), "\" exists"));
  }
  Entry entry;
  entry.writing = true;
  entries_.emplace(std::string(id), std::move(entry));
  return std::unique_ptr<Writer>(
      std::make_unique<MemoryWriter>(this, std::string(id)));
}

absl::StatusOr<std::vector<::kvindexer::fleet::v1::SnapshotManifest>>
MemorySnapshotStore::List() {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
  std::vector<const Entry*> committed;
  for (const auto& [id, entry] : entries_) {
    if (entry.manifest.has_value()) committed.push_back(&entry);
  }
  std::sort(committed.begin(), committed.end(),
            [](const Entry* a, const Entry* b) {
              if (a->manifest->position() != b->manifest->position()) {
                return a->manifest->position() < b->manifest->position();
              }
              return a->commit_order < b->commit_order;
            });
  std::vector<::kvindexer::fleet::v1::SnapshotManifest> out;
  out.reserve(committed.size());
  for (const Entry* entry : committed) out.push_back(*entry->manifest);
  return out;
}

absl::Status MemorySnapshotStore::ReadParts(
    const ::kvindexer::fleet::v1::SnapshotManifest& manifest,
    absl::FunctionRef<absl::Status(std::string_view part)> on_part) {
  std::vector<std::string> parts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
    const auto it = entries_.find(manifest.id());
    if (it == entries_.end() || !it->second.manifest.has_value()) {
      return absl::NotFoundError(
          absl::StrCat("snapshot \"", manifest.id(), "\" is gone"));
    }
    if (it->second.parts.size() != manifest.parts()) {
      return absl::DataLossError(absl::StrCat(
          "snapshot \"", manifest.id(), "\" holds ", it->second.parts.size(),
          " parts, its manifest says ", manifest.parts()));
    }
    parts = it->second.parts;
  }
  for (const std::string& part : parts) {
    if (absl::Status s = on_part(part); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status MemorySnapshotStore::Delete(
    const ::kvindexer::fleet::v1::SnapshotManifest& manifest) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
  entries_.erase(manifest.id());
  return absl::OkStatus();
}

absl::StatusOr<size_t> MemorySnapshotStore::RemoveAbandoned(
    const ::kvindexer::fleet::v1::SnapshotManifest& oldest_kept) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
  const auto kept = entries_.find(oldest_kept.id());
  if (kept == entries_.end() || !kept->second.manifest.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("snapshot \"", oldest_kept.id(), "\" is gone"));
  }
  const uint64_t before = kept->second.manifest_write;
  size_t removed = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& entry = it->second;
    if (!entry.manifest.has_value() && !entry.writing &&
        entry.last_part_write < before) {
      it = entries_.erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

absl::StatusOr<std::unique_ptr<SnapshotStore::PayloadWriter>>
MemorySnapshotStore::BeginPayload(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
  if (!ValidId(id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "payload id \"", std::string(id), "\" is not [A-Za-z0-9_-]+"));
  }
  if (payloads_.count(id) != 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("payload \"", std::string(id), "\" exists"));
  }
  payloads_[std::string(id)].writing = true;
  return std::unique_ptr<PayloadWriter>(
      std::make_unique<MemoryPayloadWriter>(this, std::string(id)));
}

absl::Status MemorySnapshotStore::ReadPayload(
    std::string_view id, uint64_t parts,
    absl::FunctionRef<absl::Status(std::string_view part)> on_part) {
  std::vector<std::string> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
    const auto it = payloads_.find(id);
    if (it == payloads_.end() || it->second.parts.empty()) {
      return absl::NotFoundError(
          absl::StrCat("payload \"", std::string(id), "\" is gone"));
    }
    if (it->second.parts.size() != parts) {
      return absl::DataLossError(absl::StrCat(
          "payload \"", std::string(id), "\" holds ", it->second.parts.size(),
          " parts, its log record says ", parts));
    }
    held = it->second.parts;
  }
  for (const std::string& part : held) {
    if (absl::Status s = on_part(part); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>>
MemorySnapshotStore::PayloadsStoredBefore(
    const ::kvindexer::fleet::v1::SnapshotManifest& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
  const auto kept = entries_.find(snapshot.id());
  if (kept == entries_.end() || !kept->second.manifest.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("snapshot \"", snapshot.id(), "\" is gone"));
  }
  std::vector<std::string> out;
  for (const auto& [id, payload] : payloads_) {
    if (!payload.writing && !payload.parts.empty() &&
        payload.last_part_write < kept->second.manifest_write) {
      out.push_back(id);
    }
  }
  return out;
}

absl::Status MemorySnapshotStore::DeletePayload(std::string_view id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (absl::Status s = CheckAvailableLocked(); !s.ok()) return s;
  const auto it = payloads_.find(id);
  if (it != payloads_.end()) payloads_.erase(it);
  return absl::OkStatus();
}

std::vector<std::string> MemorySnapshotStore::payload_ids() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [id, payload] : payloads_) out.push_back(id);
  return out;
}

void MemorySnapshotStore::AddAbandonedParts(
    const std::string& id, const std::vector<std::string>& parts) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = entries_[id];
  for (const std::string& part : parts) entry.parts.push_back(part);
  entry.last_part_write = ++writes_;
}

void MemorySnapshotStore::SetUnavailable(bool unavailable) {
  std::lock_guard<std::mutex> lock(mu_);
  unavailable_ = unavailable;
}

size_t MemorySnapshotStore::part_count() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, entry] : entries_) n += entry.parts.size();
  return n;
}

}  // namespace kvindexer::fleet
