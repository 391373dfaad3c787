#include "bridge/snapshot_header_check.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kvindexer::bridge {
namespace {

// Strings in single quotes: the log lines that show the message escape
// double quotes, and escape any unusual byte themselves.
std::string Quoted(const std::string& value) {
  return absl::StrCat("'", value, "'");
}
std::string Quoted(uint32_t value) { return absl::StrCat(value); }
std::string Quoted(bool value) { return value ? "true" : "false"; }

template <typename T>
absl::Status Compare(const char* key, const std::optional<T>& header,
                     const T& expected) {
  if (!header || *header == expected) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("snapshot header ", key, " is ", Quoted(*header),
                   "; the entry says ", Quoted(expected)));
}

}  // namespace

absl::Status CheckSnapshotHeader(const SnapshotHeaderFields& header,
                                 const StreamExpectation& expected) {
  if (!header.unreadable.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "snapshot header key ", absl::StrJoin(header.unreadable, ", "),
        " has a value of the wrong type"));
  }
  for (absl::Status status : {
           Compare("namespace", header.stream_namespace,
                   expected.stream_namespace),
           Compare("worker_id", header.worker_id, expected.worker_id),
           Compare("dp_rank", header.dp_rank, expected.dp_rank),
           Compare("model", header.model, expected.model),
           Compare("hash_schema_version", header.hash_schema_version,
                   expected.hash_schema_version),
           Compare("page_size", header.page_size, expected.page_size),
           Compare("is_bigram", header.is_bigram, expected.is_bigram),
       }) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

kv_indexer::v1::ExternalKvSnapshotMetadata SnapshotMetadata(
    const StreamExpectation& expected, const std::string& worker_generation) {
  kv_indexer::v1::ExternalKvSnapshotMetadata metadata;
  metadata.set_model(expected.model);
  metadata.set_worker_generation(worker_generation);
  metadata.set_hash_schema_version(expected.hash_schema_version);
  metadata.set_page_size(expected.page_size);
  metadata.set_is_bigram(expected.is_bigram);
  return metadata;
}

}  // namespace kvindexer::bridge
