// Short lower-case labels for the admin API's enums and per-worker figures,
// shared by the tables of `workers`, `explain` and `top`.
#ifndef KVINDEXER_CTL_WORKER_LABELS_H_
#define KVINDEXER_CTL_WORKER_LABELS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "kvindexer_admin.pb.h"

namespace kvindexer::ctl {

namespace admin_v1 = ::kvindexer::admin::v1;

std::string SequenceStateLabel(admin_v1::SequenceState state);  // "sequenced"
std::string FidelityLabel(admin_v1::Fidelity fidelity);         // "exact"
std::string StopReasonLabel(admin_v1::StopReason reason);  // "block_missing"
std::string TierLabel(int tier);                           // "hbm"

// Whether a stream key with this namespace and rank is the legacy one.
inline bool IsLegacyStream(std::string_view ns, uint32_t dp_rank) {
  return ns.empty() && dp_rank == 0;
}
// " (namespace ns, dp_rank 1)" after a worker id; "" for the legacy stream.
std::string StreamLabel(std::string_view ns, uint32_t dp_rank);
// "-" for the empty namespace.
std::string NamespaceLabel(std::string_view ns);

// "epoch:seq" for a sequenced worker, "-" otherwise.
std::string EpochSeqLabel(const admin_v1::WorkerInfo& worker);
// The placements of one tier, "?" when the backend cannot count them.
std::string TierPlacementsLabel(const admin_v1::WorkerInfo& worker, int tier);
// The sum over tiers (0 when unknown).
uint64_t TotalPlacements(const admin_v1::WorkerInfo& worker);
// "1.2s ago", or "never" when absent.
std::string AgeLabel(bool has_age, uint64_t age_ms);
// "ok 1.2s ago" / "late 3.0s" / "-" (not heartbeating), with the TTL.
std::string HeartbeatLabel(const admin_v1::WorkerInfo& worker);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_WORKER_LABELS_H_
