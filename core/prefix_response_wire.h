// The protobuf wire form of a MatchExternalKvPrefixResponse, written straight
// from a PrefixAnswer.
//
// The server answers prefix queries this way instead of building the
// generated message: setting 32 string fields costs a heap allocation per
// worker address, more than the rest of the encoding. The bytes are exactly
// what MatchExternalKvPrefixResponse::SerializeToArray produces for the same
// values (fields in number order, proto3 zero values omitted, lengths as
// minimal varints); prefix_response_wire_test.cc compares the two.
#ifndef KVINDEXER_CORE_PREFIX_RESPONSE_WIRE_H_
#define KVINDEXER_CORE_PREFIX_RESPONSE_WIRE_H_

#include <stddef.h>
#include <stdint.h>

#include "core/prefix_answer.h"

namespace kvindexer {

// The encoded size of `answer`, in bytes: one pass over the entries that
// reads only their lengths. Also what the prefix answer ceiling measures
// (docs/contract.md, "Limits > Bounds").
[[nodiscard]] size_t PrefixResponseWireSize(const PrefixAnswer& answer);

// Writes the encoding of `answer` to `out` and returns the end of what it
// wrote. REQUIRES: `out` has room for PrefixResponseWireSize(answer) bytes.
uint8_t* WritePrefixResponseWire(const PrefixAnswer& answer, uint8_t* out);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PREFIX_RESPONSE_WIRE_H_
