#include "bridge/live_buffer.h"

#include <utility>

namespace kvindexer::bridge {

LiveBuffer::LiveBuffer(size_t capacity) : capacity_(capacity) {}

void LiveBuffer::Push(LiveItem item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    if (item.kind == LiveItem::Kind::kBatch && batches_ >= capacity_) {
      // The kOverflow item takes the place of the first dropped batch, so
      // the consumer meets it exactly where the loss happened.
      ++dropped_total_;
      if (overflow_open_) {
        ++items_.back().dropped;
      } else {
        LiveItem overflow;
        overflow.kind = LiveItem::Kind::kOverflow;
        overflow.first_dropped_seq = item.batch.seq;
        overflow.dropped = 1;
        items_.push_back(std::move(overflow));
        overflow_open_ = true;
      }
      return;
    }
    if (item.kind == LiveItem::Kind::kMalformed) {
      item.malformed = 1;
      item.malformed_seq_length =
          item.frame_count == 2 || item.frame_count == 3 ? 1 : 0;
      if (!items_.empty() && items_.back().kind == LiveItem::Kind::kMalformed) {
        ++items_.back().malformed;
        items_.back().malformed_seq_length += item.malformed_seq_length;
        return;  // the consumer is already woken for the queued item
      }
    }
    if (item.kind == LiveItem::Kind::kBatch) ++batches_;
    overflow_open_ = false;
    items_.push_back(std::move(item));
  }
  cv_.notify_one();
}

std::optional<LiveItem> LiveBuffer::Pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout,
                    [this] { return closed_ || !items_.empty(); })) {
    return std::nullopt;
  }
  if (closed_) return std::nullopt;
  LiveItem item = std::move(items_.front());
  items_.pop_front();
  if (items_.empty()) overflow_open_ = false;
  if (item.kind == LiveItem::Kind::kBatch) --batches_;
  return item;
}

void LiveBuffer::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    items_.clear();
    batches_ = 0;
    overflow_open_ = false;
  }
  cv_.notify_all();
}

size_t LiveBuffer::batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

uint64_t LiveBuffer::dropped_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_total_;
}

}  // namespace kvindexer::bridge
