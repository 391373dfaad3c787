#include "server/prefix_admission.h"

namespace kvindexer {

PrefixAdmission::Permit& PrefixAdmission::Permit::operator=(
    Permit&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = other.owner_;
    other.owner_ = nullptr;
  }
  return *this;
}

void PrefixAdmission::Permit::Release() {
  if (owner_ != nullptr) {
    owner_->in_flight_.fetch_sub(1, std::memory_order_release);
    owner_ = nullptr;
  }
}

PrefixAdmission::Permit PrefixAdmission::TryAcquire() {
  uint32_t current = in_flight_.load(std::memory_order_relaxed);
  // A compare-exchange loop (rather than add-then-undo) so the count never
  // exceeds the limit, even transiently.
  while (current < limit_) {
    if (in_flight_.compare_exchange_weak(current, current + 1,
                                         std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
      return Permit(this);
    }
  }
  return Permit();
}

}  // namespace kvindexer
