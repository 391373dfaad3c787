#include "ctl/explain_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

bool NonLegacy(const ::kv_indexer::v1::StreamId& stream) {
  return !IsLegacyStream(stream.namespace_(), stream.dp_rank());
}

// "ready 2 of 3 selected streams, complete" and the uncovered addresses.
std::string CoverageLine(
    const ::kv_indexer::v1::MatchExternalKvPrefixResponse& answer) {
  size_t ready = 0;
  for (const auto& c : answer.coverage()) ready += c.ready() ? 1 : 0;
  std::string out =
      absl::StrCat("coverage: ", ready, " of ", answer.coverage_size(),
                   " selected streams ready, ",
                   answer.complete_coverage() ? "complete" : "partial");
  if (answer.uncovered_worker_addresses_size() > 0) {
    absl::StrAppend(&out, "; no stream at ",
                    absl::StrJoin(answer.uncovered_worker_addresses(), ", "));
  }
  return out + "\n";
}

}  // namespace

std::string RenderExplain(
    const ::kvindexer::admin::v1::ExplainPrefixResponse& response) {
  const auto& answer = response.answer();
  std::string out =
      absl::StrCat("answer: best ", answer.best_prefix_blocks(), " blocks, ",
                   answer.blocks_read(), " blocks read, ",
                   answer.matches_size(), " workers matched\n");
  if (answer.coverage_size() > 0 ||
      answer.uncovered_worker_addresses_size() > 0) {
    out += CoverageLine(answer);
  }
  // Namespace and rank columns only when some stream is not a legacy one.
  bool match_streams = false;
  for (const auto& m : answer.matches()) {
    match_streams = match_streams || NonLegacy(m.stream_id());
  }
  if (answer.matches_size() > 0) {
    std::vector<std::string> header = {"  WORKER"};
    if (match_streams) header.insert(header.end(), {"NAMESPACE", "RANK"});
    header.insert(header.end(), {"ADDRESS", "MATCHED"});
    TextTable matches(std::move(header));
    if (match_streams) matches.AlignRight(2);
    matches.AlignRight(match_streams ? 4 : 2);
    for (const auto& m : answer.matches()) {
      std::vector<std::string> row = {absl::StrCat("  ", m.worker_id())};
      if (match_streams) {
        row.insert(row.end(), {NamespaceLabel(m.stream_id().namespace_()),
                               absl::StrCat(m.stream_id().dp_rank())});
      }
      row.insert(row.end(),
                 {m.worker_address(), absl::StrCat(m.matched_prefix_blocks())});
      matches.AddRow(std::move(row));
    }
    out += matches.Render();
  }
  if (response.workers().empty()) {
    out +=
        "\nno worker holds block 0 and none was named with --worker or "
        "--stream\n";
    return out;
  }
  out += "\n";
  bool streams = false;
  for (const admin_v1::WorkerExplanation& w : response.workers()) {
    streams = streams || NonLegacy(w.stream_id());
  }
  std::vector<std::string> header = {"WORKER"};
  if (streams) header.insert(header.end(), {"NAMESPACE", "RANK"});
  header.insert(header.end(),
                {"MATCHED", "RULE", "STOPPED", "FRESHNESS", "DETAIL"});
  TextTable table(std::move(header));
  if (streams) table.AlignRight(2);
  table.AlignRight(streams ? 3 : 1);
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
    std::vector<std::string> row = {w.worker_id()};
    if (streams) {
      row.insert(row.end(), {NamespaceLabel(w.stream_id().namespace_()),
                             absl::StrCat(w.stream_id().dp_rank())});
    }
    row.insert(row.end(), {absl::StrCat(w.matched_prefix_blocks()),
                           w.rule().empty() ? "-" : w.rule(), stop, freshness,
                           detail.empty() ? "-" : detail});
    table.AddRow(std::move(row));
  }
  out += table.Render();
  return out;
}

}  // namespace kvindexer::ctl
