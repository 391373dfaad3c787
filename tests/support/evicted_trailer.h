// The placement bound's trailer (common/eviction_header.h) as a client of
// the real server sees it, for tests that send raw calls.
#ifndef KVINDEXER_TESTS_SUPPORT_EVICTED_TRAILER_H_
#define KVINDEXER_TESTS_SUPPORT_EVICTED_TRAILER_H_

#include <optional>
#include <string>
#include <string_view>

#include "common/eviction_header.h"
#include "grpcpp/client_context.h"

namespace kvindexer::test_support {

// The value of the kv-indexer-evicted entry of a finished call's trailing
// metadata (the last one, should it repeat); nullopt when there is none.
inline std::optional<std::string> EvictedTrailer(
    const grpc::ClientContext& context) {
  std::optional<std::string> value;
  for (const auto& [name, entry] : context.GetServerTrailingMetadata()) {
    if (std::string_view(name.data(), name.size()) == kEvictedHeader) {
      value.emplace(entry.data(), entry.size());
    }
  }
  return value;
}

// Whether the finished call's answer carried the trailer.
inline bool CarriesEvictedTrailer(const grpc::ClientContext& context) {
  return EvictedTrailer(context).has_value();
}

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_EVICTED_TRAILER_H_
