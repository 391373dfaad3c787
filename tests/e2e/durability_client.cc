#include "tests/e2e/durability_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/wire_vocabulary.h"
#include "grpcpp/grpcpp.h"
#include "tests/e2e/durability_server.h"
#include "tests/support/requests.h"

namespace kvindexer::e2e {
namespace {

using ::kvindexer::test_support::Batch;
using ::kvindexer::test_support::ExpectedWorkers;
using ::kvindexer::test_support::ReferenceModel;
using ::kvindexer::test_support::Snapshot;

constexpr size_t kMatchChunk = kMaxHashesPerRequest;

absl::Status FromGrpc(const grpc::Status& status, const std::string& what) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(what, ": ", status.error_message()));
}

// Adds the matches of one MatchExternalKv answer to `out`.
void Collect(const v1::MatchExternalKvResponse& resp, Placements* out) {
  for (const v1::ExternalKvNodeMatch& match : resp.matches()) {
    WorkerPlacement& worker = (*out)[match.worker_id()];
    worker.address = match.address();
    for (const v1::TierHashes& tier : match.hashes_by_tier()) {
      auto& hashes = worker.tiers[static_cast<int>(tier.tier())];
      for (int i = 0; i < tier.hashes_size(); ++i) {
        const uint32_t mask =
            i < tier.component_masks_size() ? tier.component_masks(i) : 0;
        const uint32_t size =
            i < tier.block_sizes_size() ? tier.block_sizes(i) : 0;
        hashes[tier.hashes(i)] = {mask, size};
      }
    }
  }
}

template <typename MatchFn>
absl::Status ReadInChunks(const std::vector<int64_t>& universe,
                          const MatchFn& match, Placements* out) {
  for (size_t begin = 0; begin < universe.size(); begin += kMatchChunk) {
    v1::MatchExternalKvRequest req;
    const size_t end = std::min(universe.size(), begin + kMatchChunk);
    for (size_t i = begin; i < end; ++i) req.add_hashes(universe[i]);
    v1::MatchExternalKvResponse resp;
    if (absl::Status s = match(req, &resp); !s.ok()) return s;
    Collect(resp, out);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterGatedWorker(v1::KVIndexer::Stub& stub) {
  v1::ConfigureExpectedWorkersResponse configured;
  absl::Status s =
      FromGrpc(stub.ConfigureExpectedWorkers(
                   Deadline().get(),
                   ExpectedWorkers().Worker(kDurableWorker, kDurableAddress),
                   &configured),
               "ConfigureExpectedWorkers");
  if (!s.ok()) return s;
  v1::ReplaceExternalKvSnapshotResponse replaced;
  return FromGrpc(
      stub.ReplaceExternalKvSnapshot(Deadline().get(),
                                     Snapshot(kDurableWorker, kDurableAddress)
                                         .Epoch(kDurableEpoch)
                                         .AppliedSeq(0),
                                     &replaced),
      "ReplaceExternalKvSnapshot");
}

absl::StatusOr<uint64_t> ProbeCheckpoint(v1::KVIndexer::Stub& stub) {
  v1::ApplyExternalKvBatchResponse resp;
  absl::Status s =
      Send(stub, Batch(kDurableWorker, kDurableAddress).Gated(kDurableEpoch, 0),
           &resp);
  if (!s.ok()) return s;
  if (!resp.duplicate()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the probe was not answered as a duplicate (applied_seq ",
                     resp.applied_seq(), ")"));
  }
  return resp.applied_seq();
}

absl::Status Send(v1::KVIndexer::Stub& stub,
                  const v1::ApplyExternalKvBatchRequest& request,
                  v1::ApplyExternalKvBatchResponse* response) {
  return FromGrpc(
      stub.ApplyExternalKvBatch(Deadline().get(), request, response),
      absl::StrCat("apply seq ", request.seq()));
}

GatedWorkerStream::GatedWorkerStream(uint64_t seed, size_t universe,
                                     uint32_t report_hashes,
                                     uint32_t revoke_hashes)
    : rng_(seed), report_hashes_(report_hashes), revoke_hashes_(revoke_hashes) {
  universe_.reserve(universe);
  for (size_t i = 0; i < universe; ++i) {
    universe_.push_back(static_cast<int64_t>(rng_()));
  }
}

const v1::ApplyExternalKvBatchRequest& GatedWorkerStream::Next() {
  std::uniform_int_distribution<size_t> pick(0, universe_.size() - 1);
  std::uniform_int_distribution<int> tier(static_cast<int>(kTierHbm),
                                          static_cast<int>(kTierSsd));
  const auto hashes = [&](uint32_t n) {
    std::vector<int64_t> out(n);
    for (int64_t& h : out) h = universe_[pick(rng_)];
    return out;
  };
  Batch batch(kDurableWorker, kDurableAddress);
  batch.Gated(kDurableEpoch, sent() + 1);
  const std::vector<int64_t> reported = hashes(report_hashes_);
  // Every third batch carries block sizes, so token counts are durable too.
  std::vector<uint32_t> sizes;
  if (rng_() % 3 == 0) sizes.assign(reported.size(), 16);
  batch.Report(tier(rng_), reported, {}, sizes);
  if (revoke_hashes_ > 0) batch.Revoke(tier(rng_), hashes(revoke_hashes_));
  requests_.push_back(batch.request());
  return requests_.back();
}

ReferenceModel GatedWorkerStream::ModelAt(uint64_t seq) const {
  ReferenceModel model;
  for (uint64_t s = 1; s <= seq && s <= sent(); ++s) {
    // The model has no gate: it applies the batch as the gate's G5 does.
    (void)model.Apply(request(s));
  }
  return model;
}

absl::StatusOr<Placements> ServerPlacements(
    v1::KVIndexer::Stub& stub, const std::vector<int64_t>& universe) {
  Placements out;
  absl::Status s = ReadInChunks(
      universe,
      [&](const v1::MatchExternalKvRequest& req,
          v1::MatchExternalKvResponse* resp) {
        return FromGrpc(stub.MatchExternalKv(Deadline().get(), req, resp),
                        "MatchExternalKv");
      },
      &out);
  if (!s.ok()) return s;
  return out;
}

Placements ModelPlacements(ReferenceModel& model,
                           const std::vector<int64_t>& universe) {
  Placements out;
  (void)ReadInChunks(
      universe,
      [&](const v1::MatchExternalKvRequest& req,
          v1::MatchExternalKvResponse* resp) { return model.Match(req, resp); },
      &out);
  return out;
}

std::string FirstDifference(const Placements& got, const Placements& want) {
  for (const auto& [worker, w] : want) {
    const auto g = got.find(worker);
    if (g == got.end()) return absl::StrCat("worker ", worker, " is missing");
    if (g->second.address != w.address) {
      return absl::StrCat("worker ", worker, " has address ", g->second.address,
                          ", want ", w.address);
    }
    for (const auto& [tier, hashes] : w.tiers) {
      const auto gt = g->second.tiers.find(tier);
      const size_t held = gt == g->second.tiers.end() ? 0 : gt->second.size();
      for (const auto& [hash, entry] : hashes) {
        if (gt == g->second.tiers.end() || !gt->second.count(hash)) {
          return absl::StrCat("worker ", worker, " tier ", tier, ": hash ",
                              hash, " is missing (", held, " held, ",
                              hashes.size(), " expected)");
        }
        const auto& got_entry = gt->second.at(hash);
        if (got_entry != entry) {
          return absl::StrCat("worker ", worker, " tier ", tier, ": hash ",
                              hash, " has mask/size ", got_entry.first, "/",
                              got_entry.second, ", want ", entry.first, "/",
                              entry.second);
        }
      }
      if (held != hashes.size()) {
        return absl::StrCat("worker ", worker, " tier ", tier, " holds ", held,
                            " hashes, want ", hashes.size());
      }
    }
    for (const auto& [tier, hashes] : g->second.tiers) {
      if (!w.tiers.count(tier)) {
        return absl::StrCat("worker ", worker, " holds ", hashes.size(),
                            " unexpected hashes at tier ", tier);
      }
    }
  }
  for (const auto& [worker, g] : got) {
    if (!want.count(worker)) {
      return absl::StrCat("unexpected worker ", worker, " holding ",
                          PlacementCount({{worker, g}}), " placements");
    }
  }
  return "no difference";
}

uint64_t PlacementCount(const Placements& placements) {
  uint64_t n = 0;
  for (const auto& [worker, w] : placements) {
    for (const auto& [tier, hashes] : w.tiers) n += hashes.size();
  }
  return n;
}

}  // namespace kvindexer::e2e
