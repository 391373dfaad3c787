#include "ctl/workers_view.h"

#include "absl/strings/str_cat.h"
#include "ctl/text_table.h"
#include "ctl/worker_labels.h"

namespace kvindexer::ctl {

std::string RenderWorkers(
    const ::kvindexer::admin::v1::ListWorkersResponse& response) {
  if (response.workers().empty()) return "no workers\n";
  TextTable table({"WORKER", "ADDRESS", "STATE", "READY", "EPOCH:SEQ",
                   "FIDELITY", "HBM", "DRAM", "SSD", "LAST APPLY",
                   "HEARTBEAT"});
  for (size_t column : {6, 7, 8}) table.AlignRight(column);
  for (const admin_v1::WorkerInfo& w : response.workers()) {
    std::string state = SequenceStateLabel(w.sequence_state());
    if (w.configured()) state += ",configured";
    std::string fidelity = FidelityLabel(w.fidelity());
    if (!w.fidelity_reason().empty()) {
      absl::StrAppend(&fidelity, " (", w.fidelity_reason(), ")");
    }
    table.AddRow({w.worker_id(),
                  w.worker_address().empty() ? "-" : w.worker_address(), state,
                  w.ready() ? "yes" : "no", EpochSeqLabel(w), fidelity,
                  TierPlacementsLabel(w, 1), TierPlacementsLabel(w, 2),
                  TierPlacementsLabel(w, 3),
                  AgeLabel(w.has_last_apply_age_ms(), w.last_apply_age_ms()),
                  HeartbeatLabel(w)});
  }
  return table.Render();
}

}  // namespace kvindexer::ctl
