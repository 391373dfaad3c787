// StreamMetadata: what a stream's bridge says about the worker behind it
// (docs/contract.md, "Streams > Metadata"). The host stores it beside the
// sequence state; backends never see it.
//
// Every source updates it by one rule: an empty string or a zero keeps the
// stored value, and is_bigram is written only together with a non-zero
// hash_schema_version. Only InvalidateWorker clears a field (the generation).
#ifndef KVINDEXER_CORE_STREAM_METADATA_H_
#define KVINDEXER_CORE_STREAM_METADATA_H_

#include <cstdint>
#include <string>

namespace kvindexer {

struct StreamMetadata {
  std::string generation;
  std::string model;
  uint32_t hash_schema_version = 0;
  uint32_t page_size = 0;
  bool is_bigram = false;

  bool operator==(const StreamMetadata&) const = default;
};

// What one request says; fields it leaves empty or zero say nothing.
struct MetadataUpdate {
  const std::string* generation = nullptr;
  const std::string* model = nullptr;
  uint32_t hash_schema_version = 0;
  uint32_t page_size = 0;
  bool is_bigram = false;
};

// Applies `update` to `stored` by the keep rule; returns whether anything
// changed.
bool MergeStreamMetadata(const MetadataUpdate& update, StreamMetadata* stored);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_STREAM_METADATA_H_
