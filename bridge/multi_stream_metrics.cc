#include "bridge/multi_stream_metrics.h"

#include <array>
#include <string>

#include "bridge/bridge_metrics.h"

namespace kvindexer::bridge {

std::string_view StreamStateName(bool parked, std::string_view stats_state) {
  if (parked) return "parked";
  if (stats_state == "exact") return "exact";
  if (stats_state == "syncing") return "syncing";
  return "degraded";
}

void WriteMultiStreamSeries(MetricsWriter& w,
                            std::span<const StreamView> streams) {
  constexpr std::array<std::string_view, 4> kStates = {"syncing", "exact",
                                                       "degraded", "parked"};
  std::array<size_t, kStates.size()> counts{};
  for (const StreamView& view : streams) {
    const std::string_view state =
        StreamStateName(view.parked, view.stats.state);
    for (size_t i = 0; i < kStates.size(); ++i) {
      if (kStates[i] == state) ++counts[i];
    }
    WriteBridgeSeries(w, view.stats, view.buffered_batches,
                      {{"namespace", view.entry->stream_namespace},
                       {"worker_id", view.entry->worker_id},
                       {"dp_rank", std::to_string(view.entry->dp_rank)}});
  }
  for (size_t i = 0; i < kStates.size(); ++i) {
    w.Gauge("kvindexer_bridge_streams", "Streams of this bridge, by state.",
            static_cast<double>(counts[i]),
            {{"state", std::string(kStates[i])}});
  }
}

}  // namespace kvindexer::bridge
