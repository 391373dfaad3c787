#include "ctl/status_view.h"

#include "absl/strings/str_cat.h"
#include "ctl/text_table.h"
#include "ctl/units.h"

namespace kvindexer::ctl {

std::string RenderStatus(const std::string& endpoint,
                         const ::kvindexer::admin::v1::GetStatsResponse& stats,
                         const std::string& health_check) {
  TextTable table({});
  table.AddRow({"endpoint", endpoint});
  table.AddRow(
      {"server", absl::StrCat("kv-indexer-server ", stats.server_version(),
                              ", up ", FormatDurationMs(stats.uptime_ms()))});
  std::string health = stats.health().empty() ? "?" : stats.health();
  if (health_check != stats.health()) {
    absl::StrAppend(&health, " (health check: ", health_check, ")");
  }
  table.AddRow({"health", health});
  const auto& b = stats.backend();
  std::string backend =
      absl::StrCat(b.name(), " ", b.version(), " (ABI ", b.abi_major(), ".",
                   b.abi_minor(), "), ", b.healthy() ? "healthy" : "FAILED");
  if (!b.healthy() && !b.failure().empty()) {
    absl::StrAppend(&backend, ": ", b.failure());
  }
  table.AddRow({"backend", backend});
  if (!b.path().empty()) table.AddRow({"", b.path()});
  table.AddRow(
      {"index", absl::StrCat(b.blocks(), " blocks, ", b.placements(),
                             " placements, ", b.workers(), " workers, ",
                             b.hit_counters(), " hit counters")});
  table.AddRow({"memory", FormatBytes(b.memory_bytes())});
  table.AddRow(
      {"workers",
       absl::StrCat(stats.workers_total(), " known, ", stats.workers_ready(),
                    " ready, ", stats.workers_sequenced(), " sequenced, ",
                    stats.workers_heartbeating(), " heartbeating")});
  table.AddRow(
      {"admission", absl::StrCat(stats.prefix_queries_inflight(), " of ",
                                 stats.prefix_query_max_inflight(),
                                 " prefix queries in flight")});
  const auto& d = stats.durability();
  if (d.enabled()) {
    table.AddRow({"data dir", d.data_dir()});
    table.AddRow(
        {"", absl::StrCat("wal sync ", d.wal_sync(), ", checkpoint generation ",
                          d.checkpoint_generation(), ", ",
                          d.checkpoints_written(), " checkpoints written, log ",
                          FormatBytes(d.log_bytes()))});
    table.AddRow(
        {"",
         absl::StrCat(
             "replay on restart ", FormatBytes(d.replay_tail_bytes()),
             d.replay_max_bytes() == 0
                 ? " (no cap)"
                 : absl::StrCat(" of a ", FormatBytes(d.replay_max_bytes()),
                                " cap, ", d.write_stalls(),
                                " writes waited for a checkpoint",
                                d.write_stalled() ? ", one waits now" : ""))});
  } else {
    table.AddRow({"data dir", "none (state is not kept across restarts)"});
  }
  return table.Render();
}

}  // namespace kvindexer::ctl
