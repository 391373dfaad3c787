#include "ctl/worker_labels.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "ctl/units.h"

namespace kvindexer::ctl {
namespace {

// "SEQUENCE_STATE_SEQUENCED" -> "sequenced" for prefix "SEQUENCE_STATE_".
std::string Strip(const std::string& name, std::string_view prefix) {
  std::string_view rest = name;
  if (rest.substr(0, prefix.size()) == prefix)
    rest.remove_prefix(prefix.size());
  // The proto3 zero value means "not said": a dash, like other blanks.
  if (rest.empty() || rest == "UNSPECIFIED") return "-";
  return absl::AsciiStrToLower(AbslView(rest));
}

}  // namespace

std::string SequenceStateLabel(admin_v1::SequenceState state) {
  return Strip(admin_v1::SequenceState_Name(state), "SEQUENCE_STATE_");
}

std::string FidelityLabel(admin_v1::Fidelity fidelity) {
  return Strip(admin_v1::Fidelity_Name(fidelity), "FIDELITY_");
}

std::string StopReasonLabel(admin_v1::StopReason reason) {
  return Strip(admin_v1::StopReason_Name(reason), "STOP_REASON_");
}

std::string StreamLabel(std::string_view ns, uint32_t dp_rank) {
  if (IsLegacyStream(ns, dp_rank)) return "";
  return absl::StrCat(" (namespace ", NamespaceLabel(ns), ", dp_rank ", dp_rank,
                      ")");
}

std::string NamespaceLabel(std::string_view ns) {
  return ns.empty() ? "-" : std::string(ns);
}

std::string TierLabel(int tier) {
  switch (tier) {
    case 1:
      return "hbm";
    case 2:
      return "dram";
    case 3:
      return "ssd";
    default:
      return absl::StrCat("tier", tier);
  }
}

std::string EpochSeqLabel(const admin_v1::WorkerInfo& worker) {
  if (worker.sequence_state() != admin_v1::SEQUENCE_STATE_SEQUENCED) return "-";
  return absl::StrCat(worker.worker_epoch(), ":", worker.applied_seq());
}

std::string TierPlacementsLabel(const admin_v1::WorkerInfo& worker, int tier) {
  if (!worker.placement_counts_known()) return "?";
  for (const admin_v1::TierPlacementCount& count : worker.placements()) {
    if (static_cast<int>(count.tier()) == tier) {
      return absl::StrCat(count.placements());
    }
  }
  return "0";
}

uint64_t TotalPlacements(const admin_v1::WorkerInfo& worker) {
  uint64_t total = 0;
  for (const admin_v1::TierPlacementCount& count : worker.placements()) {
    total += count.placements();
  }
  return total;
}

std::string AgeLabel(bool has_age, uint64_t age_ms) {
  if (!has_age) return "never";
  return absl::StrCat(FormatDurationMs(age_ms), " ago");
}

std::string HeartbeatLabel(const admin_v1::WorkerInfo& worker) {
  if (!worker.heartbeat_marked()) return "-";
  const std::string ttl =
      absl::StrCat(" (ttl ", FormatDurationMs(worker.heartbeat_ttl_ms()), ")");
  if (worker.has_heartbeat_deadline_in_ms() &&
      worker.heartbeat_deadline_in_ms() < 0) {
    return absl::StrCat("late ",
                        FormatDurationMs(static_cast<uint64_t>(
                            -worker.heartbeat_deadline_in_ms())),
                        ttl);
  }
  return absl::StrCat("ok ",
                      AgeLabel(worker.has_last_heartbeat_age_ms(),
                               worker.last_heartbeat_age_ms()),
                      ttl);
}

}  // namespace kvindexer::ctl
