// Whether a snapshot-v2 header describes the stream a multi-stream entry
// follows (docs/bridge-events.md, "Many streams in one process >
// Snapshot-v2 installs"). The identity (namespace, worker_id, dp_rank) and
// the schema (model, hash_schema_version, page_size, is_bigram) are
// compared field by field, each only when the header carries it; a header
// key of the wrong type is refused as well.
//
// Thread safety: pure functions.
#ifndef KVINDEXER_BRIDGE_SNAPSHOT_HEADER_CHECK_H_
#define KVINDEXER_BRIDGE_SNAPSHOT_HEADER_CHECK_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "bridge/snapshot_source.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

// What an entry says about its stream.
struct StreamExpectation {
  std::string stream_namespace;
  std::string worker_id;
  uint32_t dp_rank = 0;
  std::string model;
  uint32_t hash_schema_version = 0;
  uint32_t page_size = 1;
  bool is_bigram = false;
};

// OK when every field the header carries equals the entry's; otherwise
// FAILED_PRECONDITION naming the first field that differs (identity before
// schema) with the header's and the entry's values.
[[nodiscard]] absl::Status CheckSnapshotHeader(
    const SnapshotHeaderFields& header, const StreamExpectation& expected);

// The metadata a staged install's Begin carries: the entry's schema (which
// every field the header carries equals once CheckSnapshotHeader passed)
// and `worker_generation`.
kv_indexer::v1::ExternalKvSnapshotMetadata SnapshotMetadata(
    const StreamExpectation& expected, const std::string& worker_generation);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_SNAPSHOT_HEADER_CHECK_H_
