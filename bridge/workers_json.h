// KV_INDEXER_WORKERS_JSON (docs/bridge-events.md, "Many streams in one
// process"): the list of streams one bridge follows. Parsing and every
// validation rule of the variable live here; nothing is connected.
#ifndef KVINDEXER_BRIDGE_WORKERS_JSON_H_
#define KVINDEXER_BRIDGE_WORKERS_JSON_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kvindexer::bridge {

inline constexpr char kWorkersJsonVariable[] = "KV_INDEXER_WORKERS_JSON";
// Larger values are refused before parsing.
inline constexpr size_t kMaxWorkersJsonBytes = 1 << 20;

// One entry of the array, defaults applied.
struct WorkerEntry {
  std::string worker_id;
  std::string worker_address;     // router-facing URL, used byte for byte
  std::string event_endpoint;     // may be empty only with discover
  std::string snapshot_endpoint;  // empty: none
  uint32_t snapshot_protocol_version = 2;  // 1 or 2
  std::string replay_endpoint;             // empty (or null): none
  uint32_t replay_protocol = 2;            // 1 released, 2 replay-v2
  std::string stream_namespace;            // JSON key "namespace"
  std::string event_topic;
  std::string model = "unknown";
  uint32_t dp_rank = 0;
  uint32_t hash_schema_version = 0;
  uint32_t page_size = 1;
  bool page_size_set = false;  // whether the entry named page_size
  bool is_bigram = false;
  bool discover = false;
  bool all_dp_ranks = false;  // only with discover, without event_endpoint
};

struct WorkersList {
  std::vector<WorkerEntry> entries;
  // One line per unknown key, for the caller to log at WARN.
  std::vector<std::string> warnings;
};

// Parses and validates the variable's value. Errors are InvalidArgument
// with the message "invalid KV_INDEXER_WORKERS_JSON: <reason>".
[[nodiscard]] absl::StatusOr<WorkersList> ParseWorkersJson(
    std::string_view text);

// "namespace/worker_id/dp_rank", quoted where needed, for logs and errors.
std::string DescribeStreamKey(const WorkerEntry& entry);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_WORKERS_JSON_H_
