// LeaseRegister: one value with a revision that changes on every write, and
// writes conditional on the revision (compare-and-set). The snapshot lease
// (replica/snapshot_lease.h) is kept in one; the JetStream driver is a key of
// a JetStream key-value bucket, MemoryLeaseRegister the same in one process.
//
// Thread safety: implementations are thread-safe.
#ifndef KVINDEXER_FLEET_LEASE_REGISTER_H_
#define KVINDEXER_FLEET_LEASE_REGISTER_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvindexer::fleet {

class LeaseRegister {
 public:
  struct Entry {
    std::string value;
    uint64_t revision = 0;
  };

  virtual ~LeaseRegister() = default;

  // The current value; nullopt when none was ever written.
  [[nodiscard]] virtual absl::StatusOr<std::optional<Entry>> Get() = 0;
  // Writes `value` when nothing was written yet (else FAILED_PRECONDITION)
  // and returns the new revision.
  [[nodiscard]] virtual absl::StatusOr<uint64_t> Create(
      std::string_view value) = 0;
  // Writes `value` when the revision is still `expected` (else
  // FAILED_PRECONDITION) and returns the new revision.
  [[nodiscard]] virtual absl::StatusOr<uint64_t> Update(std::string_view value,
                                                        uint64_t expected) = 0;
};

class MemoryLeaseRegister final : public LeaseRegister {
 public:
  absl::StatusOr<std::optional<Entry>> Get() override;
  absl::StatusOr<uint64_t> Create(std::string_view value) override;
  absl::StatusOr<uint64_t> Update(std::string_view value,
                                  uint64_t expected) override;

  // While true, every call answers UNAVAILABLE.
  void SetUnavailable(bool unavailable);

 private:
  std::mutex mu_;
  bool unavailable_ = false;
  std::optional<Entry> entry_;
  uint64_t revisions_ = 0;
};

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_LEASE_REGISTER_H_
