#include "core/pending_ack.h"

namespace kvindexer {

absl::Status PendingAck::Wait() const {
  if (log_ == nullptr) return status_;
  if (absl::Status durable = log_->WaitDurable(end_); !durable.ok()) {
    return durable;
  }
  return status_;
}

}  // namespace kvindexer
