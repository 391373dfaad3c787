// EvictionReason: why the placement bound cleared a worker's tier
// (core/placement_bound.h; docs/contract.md, "The placement bound").
#ifndef KVINDEXER_CORE_EVICTION_REASON_H_
#define KVINDEXER_CORE_EVICTION_REASON_H_

#include <cstdint>
#include <string_view>

namespace kvindexer {

// Why a tier was evicted. The numbers are logged (WAL op 9); never reuse one.
enum class EvictionReason : uint32_t {
  kWorkerBound = 1,  // the worker held more than max_per_worker
  kIndexBound = 2,   // the index held more than max_placements
};
inline constexpr uint32_t kMaxEvictionReason = 2;

constexpr std::string_view EvictionReasonName(EvictionReason reason) {
  switch (reason) {
    case EvictionReason::kWorkerBound:
      return "worker_bound";
    case EvictionReason::kIndexBound:
      return "index_bound";
  }
  return "unknown";
}

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_EVICTION_REASON_H_
