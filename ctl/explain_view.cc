#include "ctl/explain_view.h"

#include "absl/strings/str_cat.h"
#include "ctl/text_table.h"
#include "ctl/worker_labels.h"

namespace kvindexer::ctl {
namespace {

std::string ComponentLabel(uint32_t component) {
  switch (component) {
    case 1:
      return "FULL";
    case 2:
      return "SWA";
    case 4:
      return "MAMBA";
    default:
      return absl::StrCat("component ", component);
  }
}

// Only the reasons that name a block carry its index.
bool NamesBlock(admin_v1::StopReason reason) {
  return reason == admin_v1::STOP_REASON_BLOCK_MISSING ||
         reason == admin_v1::STOP_REASON_TIER_NOT_ALLOWED ||
         reason == admin_v1::STOP_REASON_COMPONENT_HOLE ||
         reason == admin_v1::STOP_REASON_FAIL_CLOSED;
}

}  // namespace

std::string RenderExplain(
    const ::kvindexer::admin::v1::ExplainPrefixResponse& response) {
  const auto& answer = response.answer();
  std::string out =
      absl::StrCat("answer: best ", answer.best_prefix_blocks(), " blocks, ",
                   answer.blocks_read(), " blocks read, ",
                   answer.matches_size(), " workers matched\n");
  if (answer.matches_size() > 0) {
    TextTable matches({"  WORKER", "ADDRESS", "MATCHED"});
    matches.AlignRight(2);
    for (const auto& m : answer.matches()) {
      matches.AddRow({absl::StrCat("  ", m.worker_id()), m.worker_address(),
                      absl::StrCat(m.matched_prefix_blocks())});
    }
    out += matches.Render();
  }
  if (response.workers().empty()) {
    out += "\nno worker holds block 0 and none was named with --worker\n";
    return out;
  }
  out += "\n";
  TextTable table(
      {"WORKER", "MATCHED", "RULE", "STOPPED", "FRESHNESS", "DETAIL"});
  table.AlignRight(1);
  for (const admin_v1::WorkerExplanation& w : response.workers()) {
    std::string stop = StopReasonLabel(w.stop_reason());
    if (NamesBlock(w.stop_reason())) {
      absl::StrAppend(&stop, " @", w.stop_block());
    }
    if (w.stop_component() != 0) {
      absl::StrAppend(&stop, " ", ComponentLabel(w.stop_component()));
    }
    std::string freshness = absl::StrCat(
        SequenceStateLabel(w.sequence_state()), ", ",
        FidelityLabel(w.fidelity()), ", apply ",
        AgeLabel(w.has_last_apply_age_ms(), w.last_apply_age_ms()));
    std::string detail = w.detail();
    if (w.excluded()) {
      detail =
          absl::StrCat("excluded", w.excluded_reason().empty() ? "" : ": ",
                       w.excluded_reason(), detail.empty() ? "" : "; ", detail);
    }
    table.AddRow({w.worker_id(), absl::StrCat(w.matched_prefix_blocks()),
                  w.rule().empty() ? "-" : w.rule(), stop, freshness,
                  detail.empty() ? "-" : detail});
  }
  out += table.Render();
  return out;
}

}  // namespace kvindexer::ctl
