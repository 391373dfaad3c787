#include "bridge/topic_labels.h"

namespace kvindexer::bridge {
namespace {

constexpr std::string_view kEpochKey = "sgl-kv-epoch";
constexpr std::string_view kSnapshotKey = "sgl-kv-snapshot";

}  // namespace

TopicLabels ParseTopicLabels(std::string_view topic) {
  TopicLabels labels;
  size_t pos = topic.find('\0');
  while (pos != std::string_view::npos) {
    const size_t begin = pos + 1;
    pos = topic.find('\0', begin);
    const std::string_view label = topic.substr(
        begin,
        pos == std::string_view::npos ? std::string_view::npos : pos - begin);
    const size_t eq = label.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = label.substr(0, eq);
    const std::string_view value = label.substr(eq + 1);
    if (key == kEpochKey) {
      labels.epoch = value;
    } else if (key == kSnapshotKey) {
      labels.barrier_id = value;
    }
  }
  return labels;
}

}  // namespace kvindexer::bridge
