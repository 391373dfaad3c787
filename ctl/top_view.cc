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

  // By stream key: streams of one worker id are rows of their own.
  using Key = std::tuple<std::string, std::string, uint32_t>;
  const auto key_of = [](const admin_v1::WorkerInfo& w) {
    return Key(w.namespace_(), w.worker_id(), w.dp_rank());
  };
  std::map<Key, uint64_t> placements_before;
  for (const auto& w : before.workers.workers()) {
    placements_before[key_of(w)] = TotalPlacements(w);
  }
  struct Row {
    const admin_v1::WorkerInfo* worker;
    uint64_t before;
    uint64_t now;
  };
  std::vector<Row> rows;
  for (const auto& w : current.workers.workers()) {
    auto it = placements_before.find(key_of(w));
    const uint64_t now = TotalPlacements(w);
    rows.push_back({&w, it == placements_before.end() ? now : it->second, now});
  }
  auto key = [&](const Row& r) {
    const uint64_t age = r.worker->has_last_apply_age_ms()
                             ? r.worker->last_apply_age_ms()
                             : std::numeric_limits<uint64_t>::max();
    // Larger change first, then fresher, then larger, then by key.
    return std::make_tuple(
        std::numeric_limits<uint64_t>::max() - AbsDiff(r.before, r.now), age,
        std::numeric_limits<uint64_t>::max() - r.now, key_of(*r.worker));
  };
  std::sort(rows.begin(), rows.end(),
            [&](const Row& a, const Row& c) { return key(a) < key(c); });
  if (rows.empty()) {
    out += "no workers\n";
    return out;
  }
  // As in `workers`: namespace and rank columns only when some stream is
  // not a legacy one.
  bool streams = false;
  for (const Row& r : rows) {
    streams =
        streams || !IsLegacyStream(r.worker->namespace_(), r.worker->dp_rank());
  }
  std::vector<std::string> header = {"WORKER"};
  if (streams) header.insert(header.end(), {"NAMESPACE", "RANK"});
  header.insert(header.end(), {"STATE", "READY", "FIDELITY", "PLACEMENTS",
                               "CHANGE", "LAST APPLY", "HEARTBEAT"});
  TextTable table(std::move(header));
  const size_t shift = streams ? 2 : 0;
  if (streams) table.AlignRight(2);
  table.AlignRight(4 + shift);
  table.AlignRight(5 + shift);
  for (const Row& r : rows) {
    const admin_v1::WorkerInfo& w = *r.worker;
    std::vector<std::string> cells = {w.worker_id()};
    if (streams) {
      cells.insert(cells.end(),
                   {NamespaceLabel(w.namespace_()), absl::StrCat(w.dp_rank())});
    }
    cells.insert(
        cells.end(),
        {SequenceStateLabel(w.sequence_state()), w.ready() ? "yes" : "no",
         FidelityLabel(w.fidelity()),
         w.placement_counts_known() ? absl::StrCat(r.now) : "?",
         w.placement_counts_known() ? FormatDelta(r.before, r.now) : "?",
         AgeLabel(w.has_last_apply_age_ms(), w.last_apply_age_ms()),
         HeartbeatLabel(w)});
    table.AddRow(std::move(cells));
  }
  out += table.Render();
  return out;
}

}  // namespace kvindexer::ctl
