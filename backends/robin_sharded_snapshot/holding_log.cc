#include "holding_log.h"

#include <algorithm>

#include "vector_growth.h"

namespace kvindexer::robin {

void HoldingLog::Append(int64_t hash) {
  if (size_ == chunks_.size() * kChunkEntries) {
    ReserveOneMore(chunks_);
    chunks_.push_back(std::make_unique_for_overwrite<int64_t[]>(kChunkEntries));
  }
  chunks_[size_ / kChunkEntries][size_ % kChunkEntries] = hash;
  ++size_;
}

void HoldingLog::Clear() noexcept {
  chunks_.clear();
  chunks_.shrink_to_fit();
  size_ = 0;
}

void HoldingLog::Rebuild(std::vector<int64_t>* entries) {
  std::sort(entries->begin(), entries->end());
  entries->erase(std::unique(entries->begin(), entries->end()), entries->end());
  const size_t chunks = (entries->size() + kChunkEntries - 1) / kChunkEntries;
  std::vector<std::unique_ptr<int64_t[]>> rebuilt;
  rebuilt.reserve(chunks);
  for (size_t c = 0; c < chunks; ++c) {
    rebuilt.push_back(std::make_unique_for_overwrite<int64_t[]>(kChunkEntries));
  }
  for (size_t i = 0; i < entries->size(); ++i) {
    rebuilt[i / kChunkEntries][i % kChunkEntries] = (*entries)[i];
  }
  chunks_ = std::move(rebuilt);
  size_ = entries->size();
}

}  // namespace kvindexer::robin
