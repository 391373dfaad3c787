#include "fleet_log_bytes.h"

#include <algorithm>

#include "fleet_traffic.h"

namespace kvindexer::bench {

absl::StatusOr<LogBytesFigures> MeasureLogBytes(fleet::EventLog& log,
                                                int monitor_port,
                                                const std::string& stream,
                                                uint64_t seed, uint32_t workers,
                                                uint32_t batch_hashes,
                                                uint64_t total_hashes) {
  BulkAppendOptions options;
  options.seed = seed;
  options.workers = std::max<uint32_t>(workers, 1);
  options.batch_hashes = std::max<uint32_t>(batch_hashes, 1);
  options.batches_per_worker = std::max<uint64_t>(
      total_hashes / options.batch_hashes / options.workers, 1);
  absl::StatusOr<BulkAppendResult> appended = BulkAppend(log, options);
  if (!appended.ok()) return appended.status();
  absl::StatusOr<StreamUsage> usage = ReadStreamUsage(monitor_port, stream);
  if (!usage.ok()) return usage.status();
  LogBytesFigures figures;
  figures.batch_hashes = options.batch_hashes;
  figures.hashes = appended->hashes;
  figures.records = appended->batches;
  figures.stream = *usage;
  figures.append_seconds = appended->seconds;
  return figures;
}

}  // namespace kvindexer::bench
