#include "worker_removal.h"

#include <stddef.h>

#include <optional>

#include "kvindexer/backend_kit.h"

namespace kvindexer::absl_rwlock {
namespace {

// Takes placement (worker, tier) out of block `hash`; deletes the block and
// its hit counter when it was the last one. Never allocates.
void RevokePlacement(uint32_t worker, uint32_t tier, int64_t hash,
                     BlockTable* blocks, HitCounterTable* hits) noexcept {
  BlockRecord* record = blocks->Find(hash);
  if (record == nullptr) return;  // cannot happen: holdings mirror blocks
  const ptrdiff_t at = record->Find(PlacementKey(worker, tier));
  if (at < 0) return;  // cannot happen either
  blocks->RemovePlacementAt(*record, static_cast<size_t>(at));
  if (record->placements.empty()) {
    blocks->Erase(hash);
    hits->Erase(hash);
  } else {
    blocks->ShrinkToInline(*record);
  }
}

// Runs one optional rebuild of a table left sparse. A rebuild happens
// completely or not at all; when it cannot get its memory the table simply
// stays as large as it was.
template <typename Compact>
void TryCompact(Compact compact) noexcept {
  try {
    compact();
  } catch (...) {  // std::bad_alloc: nothing changed, nothing to report
    return;
  }
}

}  // namespace

BackendStatus RemoveWorkerFromTables(absl::string_view id, BlockTable* blocks,
                                     WorkerRegistry* workers,
                                     HitCounterTable* hits,
                                     uint32_t* existed) noexcept {
  *existed = 0;
  const std::optional<uint32_t> found = workers->Find(id);
  if (!found) return kit::OkStatus();
  const uint32_t worker = *found;
  try {
    workers->ReserveForRemove();
  } catch (...) {
    return kit::ErrorStatus(BackendCode::kResourceExhausted,
                            "out of memory freeing the ordinal of worker "
                            "\"%.*s\"; nothing was removed",
                            static_cast<int>(id.size() > 64 ? 64 : id.size()),
                            id.data());
  }
  // Nothing below allocates. The holdings are read in place; Remove drops
  // them afterwards.
  const WorkerRecord& record = workers->at(worker);
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    for (int64_t hash : record.Holdings(tier)) {
      RevokePlacement(worker, tier, hash, blocks, hits);
    }
  }
  workers->Remove(worker);
  *existed = 1;
  TryCompact([&] { blocks->Compact(); });
  TryCompact([&] { hits->Compact(); });
  TryCompact([&] { workers->Compact(); });
  return kit::OkStatus();
}

}  // namespace kvindexer::absl_rwlock
