#include "server/status_inputs_source.h"

#include <utility>
#include <vector>

#include "core/stream_key.h"

namespace kvindexer {

ReportedStream StreamOf(const WorkerSnapshot& worker) {
  ReportedStream s;
  StreamKey key = DecodeStreamKey(worker.worker_id);
  s.ns = std::move(key.ns);
  s.worker_id = std::move(key.worker_id);
  s.dp_rank = key.dp_rank;
  s.worker_address = worker.address;
  s.covered = worker.covered;
  s.worker_generation = worker.meta.generation;
  if (worker.checkpoint.has_value()) {
    s.worker_epoch = worker.checkpoint->epoch;
    s.watermark = worker.checkpoint->seq;
  }
  return s;
}

StatusInputs ReadStatusInputs(const StatusInputsParts& parts) {
  StatusInputs inputs;
  inputs.serving = parts.serving();
  inputs.replica_caught_up = parts.caught_up();
  inputs.permits_held = parts.admission->in_flight();
  inputs.permits_capacity = parts.permits_capacity;
  const auto counted = [&] {
    const WorkerCounts counts = parts.indexer->CountWorkers();
    StreamCounts out;
    out.total = counts.total;
    out.covered = counts.covered;
    return out;
  };
  if (parts.indexer->CountWorkers().total > kMaxReportedStreams) {
    inputs.counts = counted();
    return inputs;
  }
  std::vector<WorkerSnapshot> page = parts.indexer->ListWorkersPage(
      /*after=*/"", kMaxReportedStreams + 1, /*placement_counts=*/false);
  if (page.size() > kMaxReportedStreams) {  // grew since it was counted
    inputs.counts = counted();
    return inputs;
  }
  inputs.streams.reserve(page.size());
  for (const WorkerSnapshot& worker : page) {
    inputs.streams.push_back(StreamOf(worker));
  }
  return inputs;
}

StatusInputsSource MakeStatusInputsSource(StatusInputsParts parts) {
  return [parts = std::move(parts)] { return ReadStatusInputs(parts); };
}

}  // namespace kvindexer
