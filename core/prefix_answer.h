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

struct PrefixMatchView {
  std::string_view worker_id;
  std::string_view worker_address;
  uint32_t matched_prefix_blocks = 0;
};

struct PrefixAnswer {
  std::span<const PrefixMatchView> matches;
  uint32_t best_prefix_blocks = 0;
  uint32_t blocks_read = 0;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PREFIX_ANSWER_H_
