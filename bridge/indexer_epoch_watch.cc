#include "bridge/indexer_epoch_watch.h"

#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

bool IndexerEpochWatch::Observe(const std::string& epoch) {
  if (epoch.empty()) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (epoch == epoch_) return false;
  const bool changed = !epoch_.empty();
  if (changed) {
    spdlog::warn(
        "the indexer epoch changed from {} to {}: every stream "
        "resynchronises",
        LogText(epoch_), LogText(epoch));
    changes_.fetch_add(1);
  } else {
    spdlog::info("indexer epoch {}", LogText(epoch));
  }
  epoch_ = epoch;
  return changed;
}

std::string IndexerEpochWatch::epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

}  // namespace kvindexer::bridge
