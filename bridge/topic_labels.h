// The labels newer SGLang builds append to the live topic frame
// (docs/bridge-events.md, "Topics and epoch suffixes"): after the configured
// topic, NUL-separated `key=value` labels, of which the bridge reads
//   sgl-kv-epoch=<epoch>          the publisher incarnation (snapshot builds)
//   sgl-kv-snapshot=<barrier_id>  on the barrier batch of a snapshot capture
// e.g. "kv\0sgl-kv-epoch=e1\0sgl-kv-snapshot=b1".
//
// Thread safety: a pure function.
#ifndef KVINDEXER_BRIDGE_TOPIC_LABELS_H_
#define KVINDEXER_BRIDGE_TOPIC_LABELS_H_

#include <string_view>

namespace kvindexer::bridge {

struct TopicLabels {
  // Both point into the parsed topic; empty when the label is absent (a
  // released SGLang build publishes neither).
  std::string_view epoch;
  std::string_view barrier_id;
};

// Everything before the first NUL is the configured topic and is ignored.
// Labels with other keys, and labels without '=', are ignored; if a key
// repeats, the last one wins.
[[nodiscard]] TopicLabels ParseTopicLabels(std::string_view topic);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_TOPIC_LABELS_H_
