// Repeated-hash collapsing, the normalisation the host applies before a
// backend sees hashes.
//
//   * Queries (MatchExternalKv, GetExternalKvHitCounts) keep each hash's first
//     occurrence, in request order: [1, -2, 1, 3] -> [1, -2, 3].
//   * REPORT keeps each hash's LAST occurrence together with its mask and
//     size; earlier occurrences have no effect at all (docs/contract.md,
//     "ApplyExternalKvBatch > Apply semantics").
//
// Both return views. When the input has no repeats, which is the common case,
// the result views the input itself and nothing is copied; otherwise it views
// the caller-provided buffer. Either way the result is valid while the input
// and the buffer are alive and unchanged.
//
// Thread safety: the functions are reentrant; each thread uses its own
// scratch table.
#ifndef KVINDEXER_CORE_HASH_COLLAPSE_H_
#define KVINDEXER_CORE_HASH_COLLAPSE_H_

#include <stdint.h>

#include <vector>

#include "kvindexer/backend.h"

namespace kvindexer {

// Keep-first, order-preserving. `buffer` is used only when there are repeats.
[[nodiscard]] HashSpan CollapseKeepFirst(HashSpan hashes,
                                         std::vector<int64_t>* buffer);

// One REPORT's arrays. `masks` and `sizes` are each empty or hashes.size long.
struct ReportArrays {
  HashSpan hashes;
  U32Span masks;
  U32Span sizes;
};

// Storage for a collapsed REPORT.
struct ReportBuffer {
  std::vector<int64_t> hashes;
  std::vector<uint32_t> masks;
  std::vector<uint32_t> sizes;
};

// Keep-last: each distinct hash appears once, with the mask and size of its
// last occurrence, at the position of that last occurrence. Empty side arrays
// stay empty. REQUIRES: side arrays empty or aligned with hashes.
[[nodiscard]] ReportArrays CollapseKeepLast(ReportArrays report,
                                            ReportBuffer* buffer);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_HASH_COLLAPSE_H_
