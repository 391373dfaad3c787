// Whether a restart keeps the indexer epoch of the previous run
// (docs/durability.md, "The indexer epoch"). The epoch promises that the
// index still holds everything acknowledged under it, so it is kept only
// when recovery was exact: the previous epoch is known, a checkpoint was
// loaded and every log file from its generation on replayed, losing at
// most a torn tail of the newest, and, with KV_INDEXER_WAL_SYNC=none
// (acknowledged writes reach the OS, not the disk), the host did not
// reboot in between.
//
// Thread safety: pure functions.
#ifndef KVINDEXER_DURABLE_EPOCH_CHOICE_H_
#define KVINDEXER_DURABLE_EPOCH_CHOICE_H_

#include <optional>
#include <string>
#include <string_view>

#include "durable/indexer_epoch_file.h"
#include "durable/recovery_report.h"
#include "durable/wal_sync.h"

namespace kvindexer::durable {

struct EpochChoice {
  std::string epoch;
  bool kept = false;
  // For the log: "kept", or why a new one was chosen.
  std::string reason;
};

// `previous`: ReadEpochFile's answer; `report`: RecoverDirectory's;
// `boot_id`: this boot's (empty when unknown, which never matches);
// `fresh_epoch`: the epoch to use when the previous one is not kept.
EpochChoice ChooseEpoch(const std::optional<EpochFile>& previous,
                        const RecoveryReport& report, WalSync sync,
                        std::string_view boot_id, std::string fresh_epoch);

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_EPOCH_CHOICE_H_
