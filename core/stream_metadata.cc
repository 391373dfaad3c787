#include "core/stream_metadata.h"

namespace kvindexer {
namespace {

template <typename T>
bool Store(const T& value, T* stored) {
  if (*stored == value) return false;
  *stored = value;
  return true;
}

}  // namespace

bool MergeStreamMetadata(const MetadataUpdate& update, StreamMetadata* stored) {
  bool changed = false;
  if (update.generation != nullptr && !update.generation->empty()) {
    changed |= Store(*update.generation, &stored->generation);
  }
  if (update.model != nullptr && !update.model->empty()) {
    changed |= Store(*update.model, &stored->model);
  }
  if (update.hash_schema_version != 0) {
    changed |= Store(update.hash_schema_version, &stored->hash_schema_version);
    changed |= Store(update.is_bigram, &stored->is_bigram);
  }
  if (update.page_size != 0) {
    changed |= Store(update.page_size, &stored->page_size);
  }
  return changed;
}

}  // namespace kvindexer
