// The trailing metadata with which the server tells a bridge that the
// placement bound evicted placements of the stream it feeds
// (docs/contract.md, "Limits > The placement bound"). It is sent on the OK
// answer of an ApplyExternalKvBatch (a probe included) or a
// ReplaceExternalKvSnapshot while the stream's record is marked evicted,
// that is until a whole snapshot of the stream installs. Absent otherwise,
// so a server without a bound sends exactly the bytes it always did.
#ifndef KVINDEXER_COMMON_EVICTION_HEADER_H_
#define KVINDEXER_COMMON_EVICTION_HEADER_H_

#include <string_view>

namespace kvindexer {

inline constexpr std::string_view kEvictedHeader = "kv-indexer-evicted";
inline constexpr std::string_view kEvictedValue = "1";

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_EVICTION_HEADER_H_
