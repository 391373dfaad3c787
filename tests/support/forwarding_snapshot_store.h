// A SnapshotStore (fleet/snapshot_store.h) that hands every call to another
// one, for tests that change one call (a race, a failure) and keep the rest.
//
// Header-only: the including test links kvindexer_fleet.
// Thread safety: as the store it forwards to.
#ifndef KVINDEXER_TESTS_SUPPORT_FORWARDING_SNAPSHOT_STORE_H_
#define KVINDEXER_TESTS_SUPPORT_FORWARDING_SNAPSHOT_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/snapshot_store.h"

namespace kvindexer::test_support {

class ForwardingSnapshotStore : public fleet::SnapshotStore {
 public:
  // REQUIRES: `store` outlives this object. OWNERSHIP: not taken.
  explicit ForwardingSnapshotStore(fleet::SnapshotStore& store)
      : store_(store) {}

  absl::StatusOr<std::unique_ptr<Writer>> Begin(std::string_view id) override {
    return store_.Begin(id);
  }
  absl::StatusOr<std::vector<::kvindexer::fleet::v1::SnapshotManifest>> List()
      override {
    return store_.List();
  }
  absl::Status ReadParts(
      const ::kvindexer::fleet::v1::SnapshotManifest& manifest,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) override {
    return store_.ReadParts(manifest, on_part);
  }
  absl::Status Delete(
      const ::kvindexer::fleet::v1::SnapshotManifest& manifest) override {
    return store_.Delete(manifest);
  }
  absl::StatusOr<size_t> RemoveAbandoned(
      const ::kvindexer::fleet::v1::SnapshotManifest& oldest_kept) override {
    return store_.RemoveAbandoned(oldest_kept);
  }
  absl::StatusOr<std::unique_ptr<PayloadWriter>> BeginPayload(
      std::string_view id) override {
    return store_.BeginPayload(id);
  }
  absl::Status ReadPayload(
      std::string_view id, uint64_t parts,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) override {
    return store_.ReadPayload(id, parts, on_part);
  }
  absl::StatusOr<std::vector<std::string>> PayloadsStoredBefore(
      const ::kvindexer::fleet::v1::SnapshotManifest& snapshot) override {
    return store_.PayloadsStoredBefore(snapshot);
  }
  absl::Status DeletePayload(std::string_view id) override {
    return store_.DeletePayload(id);
  }
  size_t max_part_bytes() const override { return store_.max_part_bytes(); }

 protected:
  fleet::SnapshotStore& store_;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_FORWARDING_SNAPSHOT_STORE_H_
