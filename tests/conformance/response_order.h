// Where the contract leaves an order unspecified, these helpers put responses
// into one canonical order so that two conformant answers compare equal, and
// check separately that the orders the contract does fix were respected.
//
//   MatchExternalKv: workers are ordered by the first request block on which
//   they were met (fixed); workers first met on the same block may come in
//   any order (canonical: by worker id).
//   MatchExternalKvPrefix: entries are sorted by prefix, descending (fixed);
//   ties may come in any order (canonical: by worker id).
#ifndef KVINDEXER_TESTS_CONFORMANCE_RESPONSE_ORDER_H_
#define KVINDEXER_TESTS_CONFORMANCE_RESPONSE_ORDER_H_

#include <string>

#include "gtest/gtest.h"
#include "kv_indexer.pb.h"

namespace kvindexer::conformance {

namespace v1 = ::kv_indexer::v1;

// Checks every order and alignment rule of docs/contract.md,
// "MatchExternalKv > Matching and response order", that is fixed.
::testing::AssertionResult MatchOrderHolds(
    const v1::MatchExternalKvRequest& req,
    const v1::MatchExternalKvResponse& resp);
// Reorders workers first met on the same block by worker id.
void CanonicalizeMatch(const v1::MatchExternalKvRequest& req,
                       v1::MatchExternalKvResponse* resp);

// Checks docs/contract.md, "Messages > Field summary" and
// "MatchExternalKvPrefix > Result assembly": prefixes > 0, descending,
// addresses
// non-empty, best = first prefix (or 0).
::testing::AssertionResult PrefixOrderHolds(
    const v1::MatchExternalKvPrefixResponse& resp);
// Orders equal prefixes by worker id.
void CanonicalizePrefix(v1::MatchExternalKvPrefixResponse* resp);

// One-line text of a message, for failure output.
std::string Text(const google::protobuf::Message& m);

}  // namespace kvindexer::conformance

#endif  // KVINDEXER_TESTS_CONFORMANCE_RESPONSE_ORDER_H_
