#include "ctl/top_view.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ctl/text_table.h"
#include "ctl/units.h"
#include "ctl/worker_labels.h"

namespace kvindexer::ctl {
namespace {

uint64_t AbsDiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

}  // namespace

std::string RenderTop(const std::string& endpoint, const TopSample* previous,
                      const TopSample& current) {
  const TopSample& before = previous != nullptr ? *previous : current;
  const auto& s = current.stats;
  const auto& b = s.backend();
  const auto& pb = before.stats.backend();
  std::string out =
      absl::StrCat("kv-indexer-server ", s.server_version(), " at ", endpoint,
                   "  up ", FormatDurationMs(s.uptime_ms()), "  health ",
                   s.health().empty() ? "?" : s.health(), "  backend ",
                   b.name(), b.healthy() ? "" : " FAILED", "\n");
  absl::StrAppend(&out, "workers ", s.workers_total(), " known, ",
                  s.workers_ready(), " ready, ", s.workers_heartbeating(),
                  " heartbeating  prefix queries ", s.prefix_queries_inflight(),
                  "/", s.prefix_query_max_inflight(), " in flight\n\n");

  TextTable counters({"", "VALUE", "CHANGE"});
  counters.AlignRight(1);
  counters.AlignRight(2);
  auto row = [&](const char* name, uint64_t was, uint64_t now) {
    counters.AddRow({name, absl::StrCat(now), FormatDelta(was, now)});
  };
  row("blocks", pb.blocks(), b.blocks());
  row("placements", pb.placements(), b.placements());
  row("backend workers", pb.workers(), b.workers());
  row("hit counters", pb.hit_counters(), b.hit_counters());
  counters.AddRow({"memory", FormatBytes(b.memory_bytes()),
                   FormatDelta(pb.memory_bytes(), b.memory_bytes())});
  if (s.durability().enabled()) {
    const auto& d = s.durability();
    const auto& pd = before.stats.durability();
    counters.AddRow({"log", FormatBytes(d.log_bytes()),
                     FormatDelta(pd.log_bytes(), d.log_bytes())});
    row("checkpoints", pd.checkpoints_written(), d.checkpoints_written());
  }
  out += counters.Render();
  out += "\n";

  std::map<std::string, uint64_t> placements_before;
  for (const auto& w : before.workers.workers()) {
    placements_before[w.worker_id()] = TotalPlacements(w);
  }
  struct Row {
    const admin_v1::WorkerInfo* worker;
    uint64_t before;
    uint64_t now;
  };
  std::vector<Row> rows;
  for (const auto& w : current.workers.workers()) {
    auto it = placements_before.find(w.worker_id());
    const uint64_t now = TotalPlacements(w);
    rows.push_back({&w, it == placements_before.end() ? now : it->second, now});
  }
  auto key = [](const Row& r) {
    const uint64_t age = r.worker->has_last_apply_age_ms()
                             ? r.worker->last_apply_age_ms()
                             : std::numeric_limits<uint64_t>::max();
    // Larger change first, then fresher, then larger, then by id.
    return std::make_tuple(
        std::numeric_limits<uint64_t>::max() - AbsDiff(r.before, r.now), age,
        std::numeric_limits<uint64_t>::max() - r.now, r.worker->worker_id());
  };
  std::sort(rows.begin(), rows.end(),
            [&](const Row& a, const Row& c) { return key(a) < key(c); });
  if (rows.empty()) {
    out += "no workers\n";
    return out;
  }
  TextTable table({"WORKER", "STATE", "READY", "FIDELITY", "PLACEMENTS",
                   "CHANGE", "LAST APPLY", "HEARTBEAT"});
  table.AlignRight(4);
  table.AlignRight(5);
  for (const Row& r : rows) {
    const admin_v1::WorkerInfo& w = *r.worker;
    table.AddRow(
        {w.worker_id(), SequenceStateLabel(w.sequence_state()),
         w.ready() ? "yes" : "no", FidelityLabel(w.fidelity()),
         w.placement_counts_known() ? absl::StrCat(r.now) : "?",
         w.placement_counts_known() ? FormatDelta(r.before, r.now) : "?",
         AgeLabel(w.has_last_apply_age_ms(), w.last_apply_age_ms()),
         HeartbeatLabel(w)});
  }
  out += table.Render();
  return out;
}

}  // namespace kvindexer::ctl
