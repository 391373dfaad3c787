#include "ctl/workers_view.h"

#include "absl/strings/str_cat.h"
#include "ctl/text_table.h"
#include "ctl/worker_labels.h"

namespace kvindexer::ctl {

std::string RenderWorkers(
    const ::kvindexer::admin::v1::ListWorkersResponse& response) {
  if (response.workers().empty()) return "no workers\n";
  // A fleet of legacy streams only keeps the seed-era table; any other
  // stream adds its namespace and rank after the worker id.
  bool streams = false;
  for (const admin_v1::WorkerInfo& w : response.workers()) {
    streams = streams || !IsLegacyStream(w.namespace_(), w.dp_rank());
  }
  std::vector<std::string> header = {"WORKER"};
  if (streams) header.insert(header.end(), {"NAMESPACE", "RANK"});
  header.insert(header.end(),
                {"ADDRESS", "STATE", "READY", "EPOCH:SEQ", "FIDELITY", "HBM",
                 "DRAM", "SSD", "LAST APPLY", "HEARTBEAT"});
  TextTable table(std::move(header));
  const size_t shift = streams ? 2 : 0;
  if (streams) table.AlignRight(2);
  for (size_t column : {6, 7, 8}) table.AlignRight(column + shift);
  for (const admin_v1::WorkerInfo& w : response.workers()) {
    std::string state = SequenceStateLabel(w.sequence_state());
    if (w.configured()) state += ",configured";
    std::string fidelity = FidelityLabel(w.fidelity());
    if (!w.fidelity_reason().empty()) {
      absl::StrAppend(&fidelity, " (", w.fidelity_reason(), ")");
    }
    std::vector<std::string> row = {w.worker_id()};
    if (streams) {
      row.insert(row.end(),
                 {NamespaceLabel(w.namespace_()), absl::StrCat(w.dp_rank())});
    }
    row.insert(row.end(),
               {w.worker_address().empty() ? "-" : w.worker_address(), state,
                w.ready() ? "yes" : "no", EpochSeqLabel(w), fidelity,
                TierPlacementsLabel(w, 1), TierPlacementsLabel(w, 2),
                TierPlacementsLabel(w, 3),
                AgeLabel(w.has_last_apply_age_ms(), w.last_apply_age_ms()),
                HeartbeatLabel(w)});
    table.AddRow(std::move(row));
  }
  return table.Render();
}

}  // namespace kvindexer::ctl
