#include "conformance_fixture.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvindexer::conformance {

BackendInstance::BackendInstance(const BackendDescriptor& descriptor)
    : descriptor_(descriptor) {
  char error[256] = {};
  backend_ = descriptor_.create(error, sizeof(error));
  if (backend_ == nullptr) {
    error_ = error[0] != '\0' ? error : "create() returned null, no reason";
  }
}

BackendInstance::~BackendInstance() {
  if (backend_ != nullptr) descriptor_.destroy(backend_);
}

void ConformanceTest::SetUp() {
  instance_ = std::make_unique<BackendInstance>(descriptor());
  ASSERT_NE(instance_->get(), nullptr)
      << "create() failed: " << instance_->error();
  indexer_ = std::make_unique<Indexer>(instance_->get(), /*gate_log=*/nullptr,
                                       RequestLimits{}, abi_minor());
}

std::string ConformanceTest::AbiInUse() const {
  std::string text =
      absl::StrCat("ABI ", descriptor().abi_major, ".", abi_minor());
  if (descriptor().abi_minor != abi_minor()) {
    absl::StrAppend(&text, " (its descriptor says ", descriptor().abi_major,
                    ".", descriptor().abi_minor,
                    ", but it leaves the calls of 1.", abi_minor() + 1,
                    " to the header's defaults)");
  }
  return text;
}

void ConformanceTest::TearDown() {
  indexer_.reset();
  instance_.reset();
}

absl::Status ConformanceTest::Apply(
    const v1::ApplyExternalKvBatchRequest& req) {
  v1::ApplyExternalKvBatchResponse resp;
  return indexer_->operations().Apply(req, &resp).Wait();
}

void ConformanceTest::ApplyOk(const v1::ApplyExternalKvBatchRequest& req) {
  v1::ApplyExternalKvBatchResponse resp;
  const absl::Status s = indexer_->operations().Apply(req, &resp).Wait();
  EXPECT_TRUE(s.ok()) << s << " for " << Text(req);
}

v1::MatchExternalKvResponse ConformanceTest::Match(const Hashes& hashes,
                                                   bool count_as_hit) {
  const v1::MatchExternalKvRequest req = MatchRequest(hashes, count_as_hit);
  v1::MatchExternalKvResponse resp;
  const absl::Status s = indexer_->operations().Match(req, &resp);
  EXPECT_TRUE(s.ok()) << s << " for " << Text(req);
  EXPECT_TRUE(MatchOrderHolds(req, resp));
  CanonicalizeMatch(req, &resp);
  return resp;
}

v1::MatchExternalKvPrefixResponse ConformanceTest::Prefix(const Hashes& hashes,
                                                          uint32_t max_blocks) {
  const v1::MatchExternalKvPrefixRequest req =
      PrefixRequest(hashes, max_blocks);
  v1::MatchExternalKvPrefixResponse resp;
  const absl::Status s = MatchPrefix(indexer_->operations(), req, &resp);
  EXPECT_TRUE(s.ok()) << s << " for " << Text(req);
  EXPECT_TRUE(PrefixOrderHolds(resp));
  CanonicalizePrefix(&resp);
  return resp;
}

std::map<int64_t, uint64_t> ConformanceTest::Hits(const Hashes& hashes) {
  const v1::GetExternalKvHitCountsRequest req = HitCountsRequest(hashes);
  v1::GetExternalKvHitCountsResponse resp;
  const absl::Status s = indexer_->operations().HitCounts(req, &resp);
  EXPECT_TRUE(s.ok()) << s << " for " << Text(req);
  std::map<int64_t, uint64_t> out;
  for (const auto& e : resp.entries()) {
    EXPECT_TRUE(out.emplace(e.hash(), e.hit_count_total()).second)
        << "hash " << e.hash() << " has two entries: " << Text(resp);
  }
  return out;
}

std::vector<int> ConformanceTest::Tiers(int64_t hash,
                                        const std::string& worker) {
  std::vector<int> tiers;
  const v1::MatchExternalKvResponse resp = Match({hash});
  for (const auto& m : resp.matches()) {
    if (!worker.empty() && m.worker_id() != worker) continue;
    for (const auto& t : m.hashes_by_tier()) {
      for (int64_t h : t.hashes()) {
        if (h == hash) tiers.push_back(static_cast<int>(t.tier()));
      }
    }
  }
  std::sort(tiers.begin(), tiers.end());
  tiers.erase(std::unique(tiers.begin(), tiers.end()), tiers.end());
  return tiers;
}

std::map<std::string, uint32_t> ConformanceTest::Prefixes(
    const v1::MatchExternalKvPrefixResponse& resp) {
  std::map<std::string, uint32_t> out;
  for (const auto& m : resp.matches()) {
    out[m.worker_id()] = m.matched_prefix_blocks();
  }
  return out;
}

std::string ConformanceTest::Observe(const Hashes& universe) {
  std::string out = absl::StrCat("match ", Text(Match(universe)));
  v1::GetExternalKvHitCountsResponse hits;
  EXPECT_TRUE(
      indexer_->operations().HitCounts(HitCountsRequest(universe), &hits).ok());
  absl::StrAppend(&out, "\nhits ", Text(hits));
  // A prefix query starting at every hash, so that every worker is a
  // candidate somewhere and its address and spec become observable.
  for (size_t i = 0; i < universe.size(); ++i) {
    Hashes rotated(universe.begin() + static_cast<ptrdiff_t>(i),
                   universe.end());
    rotated.insert(rotated.end(), universe.begin(),
                   universe.begin() + static_cast<ptrdiff_t>(i));
    absl::StrAppend(&out, "\nprefix ", Text(Prefix(rotated)));
  }
  return out;
}

std::string BackendLabel(
    const ::testing::TestParamInfo<const BackendUnderTest*>& info) {
  return info.param->label;
}

}  // namespace kvindexer::conformance
