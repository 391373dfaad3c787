// ApplyStream: one worker's applies, one at a time, as a bridge sends them:
// REPORT of `hashes` block hashes at HBM, then REVOKE of the same hashes,
// alternating, each timed from send to answer. The index holds the same
// placements after every REVOKE, so any number of phases can follow each
// other.
//
// Thread safety: one thread at a time.
#ifndef KVINDEXER_BENCH_APPLY_STREAM_H_
#define KVINDEXER_BENCH_APPLY_STREAM_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "kv_indexer.grpc.pb.h"
#include "latency_recorder.h"

namespace kvindexer::bench {

struct ApplyStreamOptions {
  std::string worker_id;       // a worker the server already has
  std::string worker_address;  // as registered
  uint32_t hashes = 16'384;
  int64_t first_hash = int64_t{1} << 48;  // hashes first_hash, first_hash+1..
  std::chrono::milliseconds rpc_deadline{30'000};
};

struct ApplyRunFigures {
  uint64_t applies_ok = 0;
  uint64_t applies_failed = 0;
  std::string first_error;  // empty when none failed
  double seconds = 0;
  LatencySummary latency;  // of the OK applies
};

class ApplyStream {
 public:
  ApplyStream(std::shared_ptr<grpc::Channel> channel,
              const ApplyStreamOptions& options);

  // Applies back-to-back until `duration` has passed or `max_applies` have
  // been sent, whichever comes first; the last apply is waited for.
  ApplyRunFigures Run(std::chrono::duration<double> duration,
                      uint64_t max_applies);

 private:
  std::unique_ptr<::kv_indexer::v1::KVIndexer::Stub> stub_;
  ::kv_indexer::v1::ApplyExternalKvBatchRequest report_;
  ::kv_indexer::v1::ApplyExternalKvBatchRequest revoke_;
  std::chrono::milliseconds rpc_deadline_;
  bool next_is_report_ = true;
  uint64_t seq_ = 0;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_APPLY_STREAM_H_
