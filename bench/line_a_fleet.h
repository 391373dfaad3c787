// The line-A streams kv-indexer-line-a-bench drives (BENCHMARKS.md, "Line-A
// routers and bridges"): `count` streams ("bench", "w<i>", 0) at
// "http://10.<i/256>.<i%256>.1:30000", each with generation "gen-<i>", and
// the calls a line-A bridge makes for them: one Configure listing them all
// and a staged install (Begin, Appends, Commit).
//
// Thread safety: the functions may be called from any thread; each call
// uses the stub it is given.
#ifndef KVINDEXER_BENCH_LINE_A_FLEET_H_
#define KVINDEXER_BENCH_LINE_A_FLEET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kv_indexer.grpc.pb.h"

namespace kvindexer::bench {

struct LineAStream {
  std::string worker_id;
  uint32_t index = 0;
  std::string address;
  std::string generation;
};

std::vector<LineAStream> MakeLineAStreams(uint32_t count);

void SetStreamId(const LineAStream& stream, ::kv_indexer::v1::StreamId* id);

// The Configure a bridge of all `streams` sends every second.
::kv_indexer::v1::ConfigureExpectedWorkersRequest ConfigureRequest(
    const std::vector<LineAStream>& streams);

// Installs `hashes` at HBM for `stream` as a staged snapshot: Begin, Appends
// of at most `append_batch` placements, Commit. Every call gets
// `rpc_timeout_s`. Fails with the first call's error, naming the call.
absl::Status InstallStaged(::kv_indexer::v1::KVIndexer::Stub& stub,
                           const LineAStream& stream,
                           const std::vector<int64_t>& hashes,
                           uint32_t append_batch, double rpc_timeout_s);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_LINE_A_FLEET_H_
