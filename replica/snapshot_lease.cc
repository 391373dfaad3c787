#include "replica/snapshot_lease.h"

#include <utility>

namespace kvindexer::replica {

SnapshotLease::SnapshotLease(fleet::LeaseRegister* reg, std::string name,
                             std::chrono::milliseconds ttl,
                             const MonotonicClock* clock)
    : reg_(reg), name_(std::move(name)), ttl_(ttl), clock_(clock) {}

bool SnapshotLease::TryTake(const fleet::LeaseRegister::Entry* seen) {
  absl::StatusOr<uint64_t> revision = seen == nullptr
                                          ? reg_->Create(name_)
                                          : reg_->Update(name_, seen->revision);
  if (!revision.ok()) {
    // Lost the race (FAILED_PRECONDITION) or could not reach the register:
    // watch again from the next Tick.
    if (revision.status().code() != absl::StatusCode::kFailedPrecondition) {
      last_error_ = revision.status();
    }
    seen_revision_.reset();
    return false;
  }
  held_ = true;
  revision_ = *revision;
  renewed_at_ = clock_->Now();
  seen_revision_.reset();
  return true;
}

bool SnapshotLease::Tick() {
  const MonotonicClock::TimePoint now = clock_->Now();
  last_error_ = absl::OkStatus();
  if (held_) {
    if (now - renewed_at_ < ttl_ / 3) return true;
    absl::StatusOr<uint64_t> revision = reg_->Update(name_, revision_);
    if (revision.ok()) {
      revision_ = *revision;
      renewed_at_ = now;
      return true;
    }
    if (revision.status().code() == absl::StatusCode::kFailedPrecondition) {
      held_ = false;  // another replica took it over
      return false;
    }
    last_error_ = revision.status();
    if (now - renewed_at_ >= ttl_ * 2 / 3) held_ = false;
    return held_;
  }

  absl::StatusOr<std::optional<fleet::LeaseRegister::Entry>> entry =
      reg_->Get();
  if (!entry.ok()) {
    last_error_ = entry.status();
    return false;
  }
  if (!entry->has_value()) return TryTake(nullptr);
  const fleet::LeaseRegister::Entry& seen = **entry;
  // An empty value is a released lease; our own name is a lease this
  // process holds but forgot (it cannot happen, names are unique).
  if (seen.value.empty() || seen.value == name_) return TryTake(&seen);
  if (!seen_revision_.has_value() || *seen_revision_ != seen.revision) {
    seen_revision_ = seen.revision;
    seen_since_ = now;
    return false;
  }
  if (now - seen_since_ >= ttl_) return TryTake(&seen);
  return false;
}

void SnapshotLease::Release() {
  if (!held_) return;
  held_ = false;
  (void)reg_->Update("", revision_);
}

}  // namespace kvindexer::replica
