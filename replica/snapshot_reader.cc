#include "replica/snapshot_reader.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "durable/record_framing.h"

namespace kvindexer::replica {

absl::Status CheckSnapshotFormat(
    const ::kvindexer::fleet::v1::SnapshotManifest& manifest) {
  if (manifest.format_version() <= durable::kFormatVersion) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "snapshot \"", manifest.id(), "\" was written in checkpoint format ",
      manifest.format_version(), ", newer than the ", durable::kFormatVersion,
      " this binary reads; run a version that reads it"));
}

absl::Status ReadSnapshotChunks(
    fleet::SnapshotStore& store,
    const ::kvindexer::fleet::v1::SnapshotManifest& manifest,
    absl::FunctionRef<absl::Status(const state::v1::CheckpointChunk& chunk)>
        on_chunk) {
  if (absl::Status s = CheckSnapshotFormat(manifest); !s.ok()) return s;
  uint64_t parts = 0;
  uint64_t chunks = 0;
  ::kvindexer::fleet::v1::SnapshotPart part;
  absl::Status status =
      store.ReadParts(manifest, [&](std::string_view bytes) -> absl::Status {
        if (!part.ParseFromArray(bytes.data(),
                                 static_cast<int>(bytes.size()))) {
          return absl::DataLossError(
              absl::StrCat("part ", parts, " of snapshot \"", manifest.id(),
                           "\" does not parse"));
        }
        ++parts;
        for (const state::v1::CheckpointChunk& chunk : part.chunks()) {
          ++chunks;
          if (absl::Status s = on_chunk(chunk); !s.ok()) return s;
        }
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (chunks != manifest.chunks()) {
    return absl::DataLossError(
        absl::StrCat("snapshot \"", manifest.id(), "\" holds ", chunks,
                     " chunks, its manifest says ", manifest.chunks()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<::kvindexer::fleet::v1::SnapshotManifest>>
NewestSnapshot(fleet::SnapshotStore& store) {
  absl::StatusOr<std::vector<::kvindexer::fleet::v1::SnapshotManifest>> all =
      store.List();
  if (!all.ok()) return all.status();
  if (all->empty()) {
    return std::optional<::kvindexer::fleet::v1::SnapshotManifest>();
  }
  return std::optional<::kvindexer::fleet::v1::SnapshotManifest>(all->back());
}

}  // namespace kvindexer::replica
