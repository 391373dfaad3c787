// StreamCoverageTable: what a coverage query (a MatchExternalKvPrefix that
// names the router's eligible workers; docs/contract.md, "Streams >
// Coverage") needs of every stream record: its key, address, coverage,
// checkpoint and generation, with an index by address.
//
// The Indexer publishes into it with the worker directory, before it
// releases its mutation mutex, so a query sees every mutation whole or not
// at all. A query takes the table's reader lock once, to select its
// streams; nothing of the backend is read under it. Entries are immutable
// and shared: a selection holds references to them rather than copies, and
// a publication replaces an entry instead of changing it. Every entry
// carries an integer that orders it by key (a new key takes a value between
// its neighbours', and all are spread out again only when there is no room),
// so that a selection is put in key order by comparing integers.
//
// Thread safety: Publish is serialised by the caller (the mutation mutex);
// Select may run concurrently with everything.
#ifndef KVINDEXER_CORE_STREAM_COVERAGE_H_
#define KVINDEXER_CORE_STREAM_COVERAGE_H_

#include <cstdint>
#include <map>
#include <memory>
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
  // Sorted by key, each stream once; an eligible_streams entry that names
  // no stream is here too, not covered, with an empty address and
  // backend_id. Never null.
  std::vector<std::shared_ptr<const CoveredStream>> streams;
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
  struct Entry {
    std::shared_ptr<const CoveredStream> stream;  // never null
    uint64_t order = 0;  // a < b in key order exactly when a.order < b.order
  };
  using KeyIndex = std::map<StreamKey, Entry*>;

  void Unindex(Entry* entry);
  void Order(KeyIndex::iterator at);
  void Renumber();

  mutable std::shared_mutex mu_;
  // Everything below is guarded by mu_. Entries are owned by by_id_ and
  // stay at one address while they exist.
  absl::flat_hash_map<std::string, std::unique_ptr<Entry>> by_id_;
  KeyIndex by_key_;
  absl::flat_hash_map<std::string, absl::flat_hash_set<Entry*>> by_address_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_STREAM_COVERAGE_H_
