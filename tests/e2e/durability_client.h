// The client side of the durability e2e tests: one gated worker
// (docs/contract.md, "Recovery"), a seeded stream of its applies, and the
// index read back through MatchExternalKv in a canonical form that can be
// compared with the reference model (tests/support/reference_model.h).
//
// Thread safety: none; a GatedWorkerStream is used by one thread at a time.
#ifndef KVINDEXER_TESTS_E2E_DURABILITY_CLIENT_H_
#define KVINDEXER_TESTS_E2E_DURABILITY_CLIENT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/reference_model.h"

namespace kvindexer::e2e {

namespace v1 = ::kv_indexer::v1;

inline constexpr char kDurableWorker[] = "durable-worker";
inline constexpr char kDurableAddress[] = "10.0.0.7:9000";
inline constexpr char kDurableEpoch[] = "epoch-1";

// Gives kDurableWorker a record (ConfigureExpectedWorkers) and makes it
// SEQUENCED at (kDurableEpoch, 0) with an empty Replace, so that gated
// applies from seq 1 are accepted.
absl::Status RegisterGatedWorker(v1::KVIndexer::Stub& stub);

// The server's checkpoint of kDurableWorker in kDurableEpoch: a probe (a
// gated apply with seq 0 and no actions, answered as a duplicate). An error
// when the RPC fails or the answer is not a duplicate.
absl::StatusOr<uint64_t> ProbeCheckpoint(v1::KVIndexer::Stub& stub);

// Sends `request`; OK only when the RPC succeeded. `response` is filled.
absl::Status Send(v1::KVIndexer::Stub& stub,
                  const v1::ApplyExternalKvBatchRequest& request,
                  v1::ApplyExternalKvBatchResponse* response);

// Seeded gated applies for kDurableWorker: batch n carries seq n, REPORTs
// of random hashes of a fixed universe at random tiers (sometimes with
// block sizes) and REVOKEs of others, so that the index changes in both
// directions. Every request is kept, so that a model can be folded to any
// checkpoint.
class GatedWorkerStream {
 public:
  GatedWorkerStream(uint64_t seed, size_t universe, uint32_t report_hashes,
                    uint32_t revoke_hashes);

  // The request with seq = sent() + 1, remembered.
  const v1::ApplyExternalKvBatchRequest& Next();
  uint64_t sent() const { return requests_.size(); }
  // The request with seq `seq`. REQUIRES: 1 <= seq <= sent().
  const v1::ApplyExternalKvBatchRequest& request(uint64_t seq) const {
    return requests_[seq - 1];
  }
  const std::vector<int64_t>& universe() const { return universe_; }

  // The reference model after applies 1..seq. REQUIRES: seq <= sent().
  test_support::ReferenceModel ModelAt(uint64_t seq) const;

 private:
  std::mt19937_64 rng_;
  std::vector<int64_t> universe_;
  uint32_t report_hashes_;
  uint32_t revoke_hashes_;
  std::vector<v1::ApplyExternalKvBatchRequest> requests_;
};

// worker id -> (address, tier -> hash -> (component mask, block size)).
struct WorkerPlacement {
  std::string address;
  std::map<int, std::map<int64_t, std::pair<uint32_t, uint32_t>>> tiers;
  bool operator==(const WorkerPlacement&) const = default;
};
using Placements = std::map<std::string, WorkerPlacement>;

// What the server holds for `universe`, read with MatchExternalKv (at most
// 16,384 hashes per request, count_as_hit false).
absl::StatusOr<Placements> ServerPlacements(
    v1::KVIndexer::Stub& stub, const std::vector<int64_t>& universe);
// The same read from the model.
Placements ModelPlacements(test_support::ReferenceModel& model,
                           const std::vector<int64_t>& universe);
// A short description of the first difference, for failure messages.
std::string FirstDifference(const Placements& got, const Placements& want);
// Placements summed over workers and tiers.
uint64_t PlacementCount(const Placements& placements);

}  // namespace kvindexer::e2e

#endif  // KVINDEXER_TESTS_E2E_DURABILITY_CLIENT_H_
