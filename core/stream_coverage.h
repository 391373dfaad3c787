// StreamCoverageTable: what a coverage query (a MatchExternalKvPrefix that
// names the router's eligible workers; docs/contract.md, "Streams >
// Coverage") needs of every stream record: its key, address, coverage,
// checkpoint and generation, with an index by address.
//
// The Indexer publishes into it with the worker directory, before it
// releases its mutation mutex, so a query sees every mutation whole or not
// at all. A query takes the table's reader lock once, to select its
// streams; nothing of the backend is read under it.
//
// Thread safety: Publish is serialised by the caller (the mutation mutex);
// Select may run concurrently with everything.
#ifndef KVINDEXER_CORE_STREAM_COVERAGE_H_
#define KVINDEXER_CORE_STREAM_COVERAGE_H_

#include <cstdint>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/stream_key.h"
#include "kv_indexer.pb.h"

namespace kvindexer {

// One stream as a coverage answer shows it.
struct CoveredStream {
  std::string backend_id;
  StreamKey key;
  std::string address;
  bool covered = false;
  std::string epoch;       // "" without a checkpoint
  uint64_t watermark = 0;  // the checkpoint's seq, 0 without one
  std::string generation;
};

// The streams a coverage query selected.
struct CoverageSelection {
  // Sorted by key; an eligible_streams entry that names no stream is here
  // too, not covered, with an empty address and backend_id.
  std::vector<CoveredStream> streams;
  // Addresses that selected no stream, in request order.
  std::vector<std::string> uncovered_addresses;
  bool complete = false;
};

class StreamCoverageTable {
 public:
  // Replaces the entries of `changed` and drops those of `erased` (backend
  // ids). An id must not be in both.
  void Publish(std::vector<CoveredStream> changed,
               const std::vector<std::string>& erased);
  // The selection of docs/contract.md, "Streams > Coverage": by
  // eligible_streams when any is given, otherwise by
  // eligible_worker_addresses, each de-duplicated in first-seen order.
  // REQUIRES: req is a coverage query.
  void Select(const ::kv_indexer::v1::MatchExternalKvPrefixRequest& req,
              CoverageSelection* out) const;

 private:
  void Unindex(const CoveredStream& stream);

  mutable std::shared_mutex mu_;
  absl::flat_hash_map<std::string, CoveredStream> streams_;  // guarded
  // address -> backend ids of the streams with that address.
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>>
      by_address_;  // guarded
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_STREAM_COVERAGE_H_
