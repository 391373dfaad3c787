#include "fleet/lease_register.h"

#include "absl/strings/str_cat.h"

namespace kvindexer::fleet {

absl::StatusOr<std::optional<LeaseRegister::Entry>> MemoryLeaseRegister::Get() {
  std::lock_guard<std::mutex> lock(mu_);
  if (unavailable_) return absl::UnavailableError("lease register (test)");
  return entry_;
}

absl::StatusOr<uint64_t> MemoryLeaseRegister::Create(std::string_view value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (unavailable_) return absl::UnavailableError("lease register (test)");
  if (entry_.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the lease was already written (revision ", entry_->revision, ")"));
  }
  entry_ = Entry{std::string(value), ++revisions_};
  return entry_->revision;
}

absl::StatusOr<uint64_t> MemoryLeaseRegister::Update(std::string_view value,
                                                     uint64_t expected) {
  std::lock_guard<std::mutex> lock(mu_);
  if (unavailable_) return absl::UnavailableError("lease register (test)");
  const uint64_t current = entry_.has_value() ? entry_->revision : 0;
  if (current != expected) {
    return absl::FailedPreconditionError(
        absl::StrCat("the lease is at revision ", current, ", not ", expected));
  }
  entry_ = Entry{std::string(value), ++revisions_};
  return entry_->revision;
}

void MemoryLeaseRegister::SetUnavailable(bool unavailable) {
  std::lock_guard<std::mutex> lock(mu_);
  unavailable_ = unavailable;
}

}  // namespace kvindexer::fleet
