#include "durable/epoch_choice.h"

#include <utility>

namespace kvindexer::durable {
namespace {

// Why the previous epoch cannot be kept; empty when it can.
std::string ReasonForNewEpoch(const std::optional<EpochFile>& previous,
                              const RecoveryReport& report, WalSync sync,
                              std::string_view boot_id) {
  if (!previous.has_value()) return "no previous epoch was recorded";
  if (report.checkpoint_generation == 0 || report.started_empty) {
    return "no checkpoint was loaded";
  }
  if (report.logs_set_aside) return "log files were set aside";
  if (report.log_damaged) return "damaged log records were cut";
  if (sync == WalSync::kNone &&
      (boot_id.empty() || boot_id != previous->boot_id)) {
    return "the host may have restarted and KV_INDEXER_WAL_SYNC=none";
  }
  return "";
}

}  // namespace

EpochChoice ChooseEpoch(const std::optional<EpochFile>& previous,
                        const RecoveryReport& report, WalSync sync,
                        std::string_view boot_id, std::string fresh_epoch) {
  std::string reason = ReasonForNewEpoch(previous, report, sync, boot_id);
  if (reason.empty()) return {previous->epoch, true, "kept"};
  return {std::move(fresh_epoch), false, std::move(reason)};
}

}  // namespace kvindexer::durable
