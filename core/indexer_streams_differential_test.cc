// Seed-era and line-A clients interleaved at random against one Indexer,
// every answer checked against a plain model of the stream rules
// (docs/contract.md, "Streams"): seed-era applies to legacy workers, line-A
// Configures (which drop every stream they do not list), staged installs,
// gated line-A applies (in order, or refused for an unconfigured stream or
// another generation), InvalidateWorker, and both kinds of prefix query.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/indexer.h"
#include "tests/support/model_backend.h"
#include "tests/support/prefix_response.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace streams_differential_test {
namespace {

namespace v1 = ::kv_indexer::v1;

struct Key {
  std::string ns;
  std::string worker;
  uint32_t rank = 0;
  bool legacy() const { return ns.empty() && rank == 0; }
  auto tie() const { return std::tie(ns, worker, rank); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
  std::string address() const {
    return absl::StrCat("http://", ns.empty() ? "legacy" : ns, "-", worker, "-",
                        rank);
  }
  v1::StreamId id() const {
    v1::StreamId s;
    s.set_namespace_(ns);
    s.set_worker_id(worker);
    s.set_dp_rank(rank);
    return s;
  }
};

// What the rules say a stream's record holds.
struct ModelStream {
  bool configured = false;  // listed by a Configure since it was created
  bool ready = false;
  std::string epoch;  // "" when none
  uint64_t seq = 0;   // the checkpoint, with an epoch
  std::string generation;
  std::set<int64_t> hbm;
  bool covered(const Key& key) const {
    return ready && (key.ns.empty() || (!epoch.empty() && !generation.empty()));
  }
};

const std::vector<Key>& Keys() {
  static const std::vector<Key> keys = {{"", "a", 0},
                                        {"", "b", 0},
                                        {"ns", "a", 0},
                                        {"ns", "a", 1},
                                        {"ns2", "b", 0}};
  return keys;
}

class StreamsDifferential {
 public:
  explicit StreamsDifferential(uint32_t seed) : rng_(seed) {}

  void Run(int steps) {
    for (int step = 0; step < steps && !::testing::Test::HasFailure(); ++step) {
      SCOPED_TRACE(absl::StrCat("step ", step));
      switch (Pick(7)) {
        case 0:
          SeedApply();
          break;
        case 1:
          Configure();
          break;
        case 2:
          Install();
          break;
        case 3:
        case 4:
          GatedApply();
          break;
        case 5:
          Invalidate();
          break;
        default:
          break;
      }
      CheckQueries();
    }
  }

 private:
  uint32_t Pick(uint32_t n) {
    return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_);
  }
  const Key& AnyKey() { return Keys()[Pick(Keys().size())]; }
  std::vector<int64_t> SomeHashes() {
    std::vector<int64_t> out;
    for (int64_t h = 1; h <= 8; ++h) {
      if (Pick(2) == 0) out.push_back(h);
    }
    if (out.empty()) out.push_back(1 + Pick(8));  // an action needs a hash
    return out;
  }

  // An ungated apply of a legacy worker: it creates the record (not
  // configured) and makes it ready.
  void SeedApply() {
    const Key& key = Keys()[Pick(2)];
    const std::vector<int64_t> hashes = SomeHashes();
    const bool report = Pick(3) != 0;
    test_support::Batch batch(key.worker, key.address());
    if (report) {
      batch.Report(kTierHbm, hashes);
    } else {
      batch.Revoke(kTierHbm, hashes);
    }
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s = ops().Apply(batch.request(), &resp).Wait();
    ASSERT_TRUE(s.ok()) << s;
    ModelStream& m = model_[key];
    m.ready = true;
    for (int64_t h : hashes) {
      if (report) {
        m.hbm.insert(h);
      } else {
        m.hbm.erase(h);
      }
    }
  }

  // A line-A Configure of a random subset: every other stream is removed.
  void Configure() {
    v1::ConfigureExpectedWorkersRequest req;
    std::set<Key> listed;
    for (const Key& key : Keys()) {
      if (Pick(4) == 0) continue;
      listed.insert(key);
      v1::ExpectedWorker* w = req.add_workers();
      *w->mutable_stream_id() = key.id();
      w->set_worker_address(key.address());
      // Mostly the generation the stream has, sometimes a new one, sometimes
      // none (which keeps the stored one).
      const uint32_t choice = Pick(4);
      if (choice == 0) w->set_worker_generation(NewGeneration());
      if (choice == 1 || choice == 2) {
        auto it = model_.find(key);
        w->set_worker_generation(it != model_.end() ? it->second.generation
                                                    : "g0");
      }
    }
    if (listed.empty()) return;
    v1::ConfigureExpectedWorkersResponse resp;
    const absl::Status s = ops().Configure(req, &resp).Wait();
    ASSERT_TRUE(s.ok()) << s;
    for (auto it = model_.begin(); it != model_.end();) {
      it = listed.contains(it->first) ? std::next(it) : model_.erase(it);
    }
    for (const v1::ExpectedWorker& w : req.workers()) {
      const Key key{w.stream_id().namespace_(), w.stream_id().worker_id(),
                    w.stream_id().dp_rank()};
      ModelStream& m = model_[key];
      m.configured = true;
      if (!w.worker_generation().empty()) m.generation = w.worker_generation();
    }
    EXPECT_EQ(resp.total_workers(), model_.size());
    EXPECT_EQ(resp.ready_workers(), CoveredCount());
    EXPECT_EQ(resp.indexer_epoch(), ops().IndexerEpoch());
  }

  // Begin, Append, Commit of a random set. Refused (and nothing changes)
  // for an unconfigured stream and for a generation other than a configured
  // non-empty one.
  void Install() {
    const Key& key = AnyKey();
    const auto found = model_.find(key);
    const std::string generation =
        Pick(4) == 0 || found == model_.end() ? NewGeneration()
        : found->second.generation.empty()    ? NewGeneration()
                                              : found->second.generation;
    const std::string epoch = absl::StrCat("e", ++counter_);
    const uint64_t applied_seq = Pick(50);
    const std::vector<int64_t> hashes = SomeHashes();
    v1::BeginExternalKvSnapshotRequest begin;
    *begin.mutable_stream_id() = key.id();
    begin.set_worker_address(key.address());
    begin.set_worker_epoch(epoch);
    begin.set_applied_seq(applied_seq);
    begin.mutable_metadata()->set_worker_generation(generation);
    begin.set_expected_placements(hashes.size());
    v1::BeginExternalKvSnapshotResponse begun;
    const absl::Status s = ops().Begin(begin, &begun).Wait();
    const bool configured = found != model_.end() && found->second.configured;
    const bool conflicting = configured && !found->second.generation.empty() &&
                             found->second.generation != generation;
    if (!configured || conflicting) {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      return;
    }
    ASSERT_TRUE(s.ok()) << s;
    v1::AppendExternalKvSnapshotRequest append;
    append.set_transaction_id(begun.transaction_id());
    for (int64_t h : hashes) {
      v1::ExternalKvSnapshotPlacement* p = append.add_placements();
      p->set_block_hash(h);
      p->set_tier(v1::TIER_HBM);
    }
    v1::AppendExternalKvSnapshotResponse appended;
    ASSERT_TRUE(ops().Append(append, &appended).Wait().ok());
    v1::CommitExternalKvSnapshotRequest commit;
    commit.set_transaction_id(begun.transaction_id());
    v1::CommitExternalKvSnapshotResponse committed;
    const absl::Status c = ops().Commit(commit, &committed).Wait();
    ASSERT_TRUE(c.ok()) << c;
    EXPECT_EQ(committed.applied_seq(), applied_seq);
    ModelStream& m = found->second;
    m.ready = true;
    m.epoch = epoch;
    m.seq = applied_seq;
    m.generation = generation;
    m.hbm = std::set<int64_t>(hashes.begin(), hashes.end());
  }

  // A gated line-A apply: the next seq in the stream's epoch, with its
  // generation; or, to a stream the gate must refuse (unconfigured, or
  // another generation), which changes nothing.
  void GatedApply() {
    const Key& key = AnyKey();
    const auto found = model_.find(key);
    const bool in_order = found != model_.end() && found->second.configured &&
                          found->second.ready && !found->second.epoch.empty();
    const bool wrong_generation = in_order && Pick(4) == 0;
    if (!in_order && found != model_.end() && found->second.configured) {
      return;  // the first apply of a new epoch is not modelled
    }
    const std::vector<int64_t> hashes = SomeHashes();
    const bool report = Pick(3) != 0;
    test_support::Batch batch("", key.address());
    if (report) {
      batch.Report(kTierHbm, hashes);
    } else {
      batch.Revoke(kTierHbm, hashes);
    }
    const std::string epoch = in_order ? found->second.epoch : "e-unknown";
    const uint64_t seq = in_order ? found->second.seq + 1 : 1;
    v1::ApplyExternalKvBatchRequest req = batch.Gated(epoch, seq).request();
    *req.mutable_stream_id() = key.id();
    req.set_worker_generation(!in_order ? "g-any"
                              : wrong_generation
                                  ? found->second.generation + "-old"
                                  : found->second.generation);
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s = ops().Apply(req, &resp).Wait();
    if (!in_order || wrong_generation) {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      return;
    }
    ASSERT_TRUE(s.ok()) << s;
    ModelStream& m = found->second;
    m.seq = seq;
    for (int64_t h : hashes) {
      if (report) {
        m.hbm.insert(h);
      } else {
        m.hbm.erase(h);
      }
    }
  }

  void Invalidate() {
    const Key& key = AnyKey();
    v1::InvalidateWorkerRequest req;
    *req.mutable_stream_id() = key.id();
    v1::InvalidateWorkerResponse resp;
    const absl::Status s = ops().Invalidate(req, &resp).Wait();
    const auto found = model_.find(key);
    if (found == model_.end() || !found->second.configured) {
      EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
      return;
    }
    ASSERT_TRUE(s.ok()) << s;
    ModelStream& m = found->second;
    m.ready = false;
    m.epoch.clear();
    m.seq = 0;
    m.generation.clear();
    m.hbm.clear();
    EXPECT_EQ(resp.total_workers(), model_.size());
    EXPECT_EQ(resp.ready_workers(), CoveredCount());
  }

  // Both kinds of query for a random chain, against the model.
  void CheckQueries() {
    std::vector<int64_t> chain;
    const uint32_t length = 1 + Pick(5);
    for (uint32_t i = 0; i < length; ++i) chain.push_back(1 + Pick(8));

    // Seed era: every stream holding block 0, named by its worker id.
    using Row = std::tuple<std::string, std::string, uint32_t>;
    std::vector<Row> want_seed;
    uint32_t best = 0;
    for (const auto& [key, m] : model_) {
      const uint32_t n = Matched(m, chain);
      if (n == 0) continue;
      want_seed.emplace_back(key.worker, key.address(), n);
      best = std::max(best, n);
    }
    v1::MatchExternalKvPrefixResponse seed;
    ASSERT_TRUE(test_support::MatchPrefix(
                    ops(), test_support::PrefixRequest(chain), &seed)
                    .ok());
    std::vector<Row> got_seed;
    for (const v1::ExternalKvPrefixMatch& m : seed.matches()) {
      EXPECT_FALSE(m.has_stream_id());
      EXPECT_TRUE(m.worker_generation().empty());
      got_seed.emplace_back(m.worker_id(), m.worker_address(),
                            m.matched_prefix_blocks());
    }
    std::sort(want_seed.begin(), want_seed.end());
    std::sort(got_seed.begin(), got_seed.end());
    EXPECT_EQ(got_seed, want_seed);
    EXPECT_EQ(seed.best_prefix_blocks(), best);
    EXPECT_EQ(seed.coverage_size(), 0);

    // Line A, every key eligible: coverage per key (sorted by key), and
    // matches of covered streams only, with stream and generation.
    v1::MatchExternalKvPrefixRequest req = test_support::PrefixRequest(chain);
    for (const Key& key : Keys()) *req.add_eligible_streams() = key.id();
    v1::MatchExternalKvPrefixResponse line_a;
    ASSERT_TRUE(test_support::MatchPrefix(ops(), req, &line_a).ok());
    ASSERT_EQ(line_a.coverage_size(), static_cast<int>(Keys().size()));
    bool complete = true;
    using LineARow =
        std::tuple<std::string, std::string, uint32_t, std::string, uint32_t>;
    std::vector<LineARow> want_line_a;
    for (size_t i = 0; i < Keys().size(); ++i) {
      const Key& key = Keys()[i];
      const v1::StreamCoverage& c = line_a.coverage(static_cast<int>(i));
      EXPECT_EQ(c.stream_id().SerializeAsString(),
                key.id().SerializeAsString());
      const auto found = model_.find(key);
      const bool exists = found != model_.end();
      const bool covered = exists && found->second.covered(key);
      complete = complete && covered;
      EXPECT_EQ(c.ready(), covered) << key.address();
      EXPECT_EQ(c.worker_address(), exists ? key.address() : "");
      EXPECT_EQ(c.worker_generation(), exists ? found->second.generation : "");
      if (!covered) continue;
      const uint32_t n = Matched(found->second, chain);
      if (n > 0) {
        want_line_a.emplace_back(key.ns, key.worker, key.rank,
                                 found->second.generation, n);
      }
    }
    EXPECT_EQ(line_a.complete_coverage(), complete);
    std::vector<LineARow> got_line_a;
    for (const v1::ExternalKvPrefixMatch& m : line_a.matches()) {
      got_line_a.emplace_back(m.stream_id().namespace_(),
                              m.stream_id().worker_id(),
                              m.stream_id().dp_rank(), m.worker_generation(),
                              m.matched_prefix_blocks());
    }
    std::sort(want_line_a.begin(), want_line_a.end());
    std::sort(got_line_a.begin(), got_line_a.end());
    EXPECT_EQ(got_line_a, want_line_a);
  }

  static uint32_t Matched(const ModelStream& m,
                          const std::vector<int64_t>& chain) {
    uint32_t n = 0;
    while (n < chain.size() && m.hbm.contains(chain[n])) ++n;
    return n;
  }
  uint32_t CoveredCount() const {
    uint32_t n = 0;
    for (const auto& [key, m] : model_) n += m.covered(key) ? 1 : 0;
    return n;
  }
  std::string NewGeneration() { return absl::StrCat("g", ++counter_); }
  IndexOperations& ops() { return indexer_.operations(); }

  std::mt19937 rng_;
  uint64_t counter_ = 0;
  std::map<Key, ModelStream> model_;
  test_support::ModelBackend backend_;
  Indexer indexer_{&backend_};
};

TEST(IndexerStreamsDifferentialTest, SeedEraAndLineAClientsAgreeWithTheModel) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    StreamsDifferential run(seed);
    run.Run(400);
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace streams_differential_test
}  // namespace kvindexer
