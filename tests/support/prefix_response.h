// Prefix query answers as MatchExternalKvPrefixResponse messages, for tests
// that compare whole responses. The server itself never builds the message:
// it writes the answer's wire form directly (core/prefix_response_wire.h).
#ifndef KVINDEXER_TESTS_SUPPORT_PREFIX_RESPONSE_H_
#define KVINDEXER_TESTS_SUPPORT_PREFIX_RESPONSE_H_

#include "absl/status/status.h"
#include "core/index_operations.h"
#include "core/prefix_answer.h"
#include "kv_indexer.pb.h"

namespace kvindexer::test_support {

// Replaces *resp with `answer`.
void FillPrefixResponse(const PrefixAnswer& answer,
                        ::kv_indexer::v1::MatchExternalKvPrefixResponse* resp);

// A prefix query as the server runs it, without the transport, shedding and
// admission: ValidatePrefix, then IndexOperations::MatchPrefix, the answer
// filled into *resp.
[[nodiscard]] absl::Status MatchPrefix(
    IndexOperations& indexer,
    const ::kv_indexer::v1::MatchExternalKvPrefixRequest& req,
    ::kv_indexer::v1::MatchExternalKvPrefixResponse* resp);

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_PREFIX_RESPONSE_H_
