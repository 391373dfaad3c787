// SnapshotStore in one process's memory, with the semantics of
// fleet/snapshot_store.h, for tests of the snapshot writer and of replicas
// that load snapshots. SetUnavailable() makes every call fail as an
// unreachable broker would.
#ifndef KVINDEXER_FLEET_MEMORY_SNAPSHOT_STORE_H_
#define KVINDEXER_FLEET_MEMORY_SNAPSHOT_STORE_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fleet/snapshot_store.h"

namespace kvindexer::fleet {

class MemorySnapshotStore final : public SnapshotStore {
 public:
  explicit MemorySnapshotStore(size_t max_part_bytes = 1 << 20);
  ~MemorySnapshotStore() override;

  absl::StatusOr<std::unique_ptr<Writer>> Begin(std::string_view id) override;
  absl::StatusOr<std::vector<::kvindexer::fleet::v1::SnapshotManifest>> List()
      override;
  absl::Status ReadParts(
      const ::kvindexer::fleet::v1::SnapshotManifest& manifest,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) override;
  absl::Status Delete(
      const ::kvindexer::fleet::v1::SnapshotManifest& manifest) override;
  absl::StatusOr<size_t> RemoveAbandoned(
      const ::kvindexer::fleet::v1::SnapshotManifest& oldest_kept) override;
  absl::StatusOr<std::unique_ptr<PayloadWriter>> BeginPayload(
      std::string_view id) override;
  absl::Status ReadPayload(
      std::string_view id, uint64_t parts,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) override;
  absl::StatusOr<std::vector<std::string>> PayloadsStoredBefore(
      const ::kvindexer::fleet::v1::SnapshotManifest& snapshot) override;
  absl::Status DeletePayload(std::string_view id) override;
  size_t max_part_bytes() const override { return max_part_bytes_; }

  // While true, every call (a writer's included) answers UNAVAILABLE.
  void SetUnavailable(bool unavailable);
  // Parts held, committed or not (abandoned writers' parts are removed);
  // payloads' parts not counted.
  size_t part_count();
  // The ids of the payloads held, in id order.
  std::vector<std::string> payload_ids();
  // Stores `parts` under `id` with no manifest and no writer, as a writer
  // that died half way would leave them. For tests of RemoveAbandoned.
  void AddAbandonedParts(const std::string& id,
                         const std::vector<std::string>& parts);

 private:
  class MemoryWriter;
  class MemoryPayloadWriter;
  struct Payload {
    std::vector<std::string> parts;
    uint64_t last_part_write = 0;  // on the store's counter of writes
    bool writing = false;          // a writer of this store holds the id
  };
  struct Entry {
    std::vector<std::string> parts;
    std::optional<::kvindexer::fleet::v1::SnapshotManifest> manifest;
    uint64_t commit_order = 0;
    // When the last part and the manifest were stored, on the store's own
    // counter of writes.
    uint64_t last_part_write = 0;
    uint64_t manifest_write = 0;
    bool writing = false;  // a writer of this store holds the id
  };

  absl::Status CheckAvailableLocked() const;

  const size_t max_part_bytes_;
  std::mutex mu_;
  bool unavailable_ = false;
  uint64_t commits_ = 0;
  uint64_t writes_ = 0;
  std::map<std::string, Entry, std::less<>> entries_;
  std::map<std::string, Payload, std::less<>> payloads_;
};

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_MEMORY_SNAPSHOT_STORE_H_
