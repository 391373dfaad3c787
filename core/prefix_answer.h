// PrefixAnswer: the result of one prefix query before it becomes a
// MatchExternalKvPrefixResponse, as plain views (docs/contract.md,
// "MatchExternalKvPrefix > Result assembly").
//
// The views borrow the query's storage: an answer is valid only inside the
// callback it is handed to. Matches are already in response order (longest
// prefix first, ties in candidate order).
#ifndef KVINDEXER_CORE_PREFIX_ANSWER_H_
#define KVINDEXER_CORE_PREFIX_ANSWER_H_

#include <stdint.h>

#include <span>
#include <string_view>

namespace kvindexer {

// One selected stream of a coverage query (docs/contract.md, "Streams >
// Coverage"), as StreamCoverage shows it.
struct StreamCoverageView {
  std::string_view ns;
  std::string_view worker_id;
  uint32_t dp_rank = 0;
  std::string_view worker_address;
  bool ready = false;  // covered
  std::string_view worker_epoch;
  uint64_t watermark = 0;
  std::string_view worker_generation;
};

// What only a coverage query's answer carries.
struct PrefixCoverage {
  std::span<const StreamCoverageView> streams;  // sorted by key
  bool complete = false;
  std::span<const std::string_view> uncovered_worker_addresses;
};

struct PrefixMatchView {
  std::string_view worker_id;
  std::string_view worker_address;
  uint32_t matched_prefix_blocks = 0;
  // A coverage query's match: the stream it is, whose key and generation
  // the match carries. Null otherwise.
  const StreamCoverageView* stream = nullptr;
};

struct PrefixAnswer {
  std::span<const PrefixMatchView> matches;
  uint32_t best_prefix_blocks = 0;
  uint32_t blocks_read = 0;
  // Set for a coverage query only; a seed-era query's answer has none of
  // its fields.
  const PrefixCoverage* coverage = nullptr;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PREFIX_ANSWER_H_
