#include "core/stream_coverage.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer {
namespace stream_coverage_test {
namespace {

namespace v1 = ::kv_indexer::v1;
using ::testing::ElementsAre;

CoveredStream Stream(std::string ns, std::string worker_id, uint32_t rank,
                     std::string address, bool covered = true) {
  CoveredStream s;
  s.key = StreamKey{std::move(ns), std::move(worker_id), rank};
  s.backend_id = EncodeStreamKey(s.key);
  s.address = std::move(address);
  s.covered = covered;
  return s;
}

v1::MatchExternalKvPrefixRequest ByAddresses(
    const std::vector<std::string>& addresses) {
  v1::MatchExternalKvPrefixRequest req;
  req.add_hashes(1);
  for (const std::string& a : addresses) req.add_eligible_worker_addresses(a);
  return req;
}

std::vector<std::string> WorkerIds(const CoverageSelection& selection) {
  std::vector<std::string> out;
  for (const auto& s : selection.streams) {
    out.push_back(
        absl::StrCat(s->key.ns, "/", s->key.worker_id, "/", s->key.dp_rank));
  }
  return out;
}

// Keys published in any order come out of a selection in key order: the
// table's order numbers follow appends, prepends, inserts between two keys
// and the respacing they force.
TEST(StreamCoverageTable, SelectionIsInKeyOrderWhateverThePublicationOrder) {
  constexpr int kStreams = 3000;
  std::vector<int> ids(kStreams);
  for (int i = 0; i < kStreams; ++i) ids[i] = i;
  for (const char* pattern : {"ascending", "descending", "shuffled"}) {
    SCOPED_TRACE(pattern);
    std::vector<int> order = ids;
    if (std::string(pattern) == "descending") {
      std::reverse(order.begin(), order.end());
    } else if (std::string(pattern) == "shuffled") {
      std::mt19937 rng(7);
      std::shuffle(order.begin(), order.end(), rng);
    }
    StreamCoverageTable table;
    std::vector<std::string> addresses;
    for (int i : order) {
      // One publication per stream, as Configures that add one each.
      const std::string address = absl::StrCat("a", i % 97);
      table.Publish(
          {Stream("", absl::StrCat("w", absl::Dec(i, absl::kZeroPad5)), 0,
                  address)},
          {});
    }
    for (int i = 0; i < 97; ++i) addresses.push_back(absl::StrCat("a", i));
    CoverageSelection selection;
    table.Select(ByAddresses(addresses), &selection);
    ASSERT_EQ(selection.streams.size(), static_cast<size_t>(kStreams));
    EXPECT_TRUE(std::is_sorted(
        selection.streams.begin(), selection.streams.end(),
        [](const auto& a, const auto& b) { return a->key < b->key; }));
    EXPECT_TRUE(selection.complete);
  }
}

TEST(StreamCoverageTable, RepeatedAddressesSelectOnceAndMissingOnesInOrder) {
  StreamCoverageTable table;
  table.Publish({Stream("ns", "b", 1, "x"), Stream("ns", "b", 0, "x"),
                 Stream("", "a", 0, "y")},
                {});
  CoverageSelection selection;
  table.Select(ByAddresses({"x", "m2", "y", "x", "m1", "m2", "y"}), &selection);
  EXPECT_THAT(WorkerIds(selection), ElementsAre("/a/0", "ns/b/0", "ns/b/1"));
  EXPECT_THAT(selection.uncovered_addresses, ElementsAre("m2", "m1"));
  EXPECT_FALSE(selection.complete);
}

TEST(StreamCoverageTable, AnAddressChangeAndAnEraseMoveTheStream) {
  StreamCoverageTable table;
  table.Publish({Stream("", "a", 0, "x"), Stream("", "b", 0, "x")}, {});
  table.Publish({Stream("", "a", 0, "z")}, {EncodeStreamKey({"", "b", 0})});
  CoverageSelection selection;
  table.Select(ByAddresses({"x"}), &selection);
  EXPECT_TRUE(selection.streams.empty());
  EXPECT_THAT(selection.uncovered_addresses, ElementsAre("x"));
  EXPECT_FALSE(selection.complete);
  table.Select(ByAddresses({"z"}), &selection);
  EXPECT_THAT(WorkerIds(selection), ElementsAre("/a/0"));
  EXPECT_TRUE(selection.complete);
}

// A selection holds the entries it saw: a later publication replaces them
// in the table and leaves the selection as it was.
TEST(StreamCoverageTable, ASelectionKeepsWhatItSaw) {
  StreamCoverageTable table;
  table.Publish({Stream("", "a", 0, "x", /*covered=*/true)}, {});
  CoverageSelection before;
  table.Select(ByAddresses({"x"}), &before);
  table.Publish({Stream("", "a", 0, "x", /*covered=*/false)}, {});
  ASSERT_EQ(before.streams.size(), 1u);
  EXPECT_TRUE(before.streams[0]->covered);
  CoverageSelection after;
  table.Select(ByAddresses({"x"}), &after);
  ASSERT_EQ(after.streams.size(), 1u);
  EXPECT_FALSE(after.streams[0]->covered);
  EXPECT_FALSE(after.complete);
}

TEST(StreamCoverageTable, NamedStreamsThatDoNotExistJoinInKeyOrder) {
  StreamCoverageTable table;
  table.Publish({Stream("", "a", 0, "x"), Stream("", "c", 0, "y")}, {});
  v1::MatchExternalKvPrefixRequest req;
  req.add_hashes(1);
  for (const char* id : {"c", "b", "a", "b"}) {
    v1::StreamId* s = req.add_eligible_streams();
    s->set_worker_id(id);
  }
  CoverageSelection selection;
  table.Select(req, &selection);
  EXPECT_THAT(WorkerIds(selection), ElementsAre("/a/0", "/b/0", "/c/0"));
  EXPECT_FALSE(selection.streams[1]->covered);
  EXPECT_EQ(selection.streams[1]->address, "");
  EXPECT_FALSE(selection.complete);
}

}  // namespace
}  // namespace stream_coverage_test
}  // namespace kvindexer
