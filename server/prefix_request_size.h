// The request size rule of MatchExternalKvPrefix (docs/contract.md,
// "Transport > Request size" and "Streams > Coverage"): 8 MiB, as for every
// method, except that a coverage query (one whose bytes carry a top-level
// eligible_worker_addresses or eligible_streams field) may take up to 9 MiB,
// room for the router's longest prompt plus its list of eligible workers.
// Requests over 8 MiB are rare, so only they are looked into.
#ifndef KVINDEXER_SERVER_PREFIX_REQUEST_SIZE_H_
#define KVINDEXER_SERVER_PREFIX_REQUEST_SIZE_H_

#include <cstddef>

#include "grpcpp/grpcpp.h"

namespace kvindexer {

inline constexpr size_t kMaxCoverageRequestBytes = 9 * 1024 * 1024;

// Whether the serialized request carries a top-level field 3 or 4. A
// request that does not parse as far as that is taken to carry neither.
bool CarriesCoverageFields(const grpc::ByteBuffer& request);

// OK, or OUT_OF_RANGE naming the size and the maximum that applies.
grpc::Status CheckPrefixRequestSize(const grpc::ByteBuffer& request);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_PREFIX_REQUEST_SIZE_H_
