#include "replica/snapshot_part_packer.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"

namespace kvindexer::replica {

SnapshotPartPacker::SnapshotPartPacker(size_t max_part_bytes, Sink sink)
    : max_part_bytes_(max_part_bytes), sink_(sink) {}

void SnapshotPartPacker::Flush() {
  if (!status_.ok() || part_.chunks_size() == 0) return;
  serialized_.clear();
  if (!part_.SerializeToString(&serialized_)) {
    status_ = absl::InternalError("a snapshot part does not serialise");
    return;
  }
  status_ = sink_(serialized_, static_cast<uint64_t>(part_.chunks_size()));
  part_.Clear();
  part_bytes_ = 0;
}

void SnapshotPartPacker::Add(const state::v1::CheckpointChunk& chunk) {
  if (!status_.ok()) return;
  const size_t size = chunk.ByteSizeLong();
  // The field's tag and length prefix.
  const size_t framed =
      1 + google::protobuf::io::CodedOutputStream::VarintSize64(size) + size;
  if (framed > max_part_bytes_) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat("a snapshot chunk of ", framed,
                     " bytes exceeds the part size of ", max_part_bytes_));
    return;
  }
  if (part_bytes_ + framed > max_part_bytes_) Flush();
  if (!status_.ok()) return;
  *part_.add_chunks() = chunk;
  part_bytes_ += framed;
}

absl::Status SnapshotPartPacker::Finish() {
  Flush();
  return status_;
}

}  // namespace kvindexer::replica
