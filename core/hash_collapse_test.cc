#include "core/hash_collapse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

namespace kvindexer {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<int64_t> ToVector(HashSpan span) {
  return std::vector<int64_t>(span.data, span.data + span.size);
}

std::vector<uint32_t> ToVector(U32Span span) {
  return span.size == 0
             ? std::vector<uint32_t>()
             : std::vector<uint32_t>(span.data, span.data + span.size);
}

HashSpan View(const std::vector<int64_t>& v) {
  return HashSpan{v.data(), v.size()};
}

U32Span View(const std::vector<uint32_t>& v) {
  return U32Span{v.data(), v.size()};
}

TEST(CollapseKeepFirst, KeepsFirstSeenOrder) {  // 44
  const std::vector<int64_t> in = {1, -2, 1, 3};
  std::vector<int64_t> buffer;
  EXPECT_THAT(ToVector(CollapseKeepFirst(View(in), &buffer)),
              ElementsAre(1, -2, 3));
}

TEST(CollapseKeepFirst, NoRepeatsReturnsTheInputWithoutCopying) {
  const std::vector<int64_t> in = {5, 4, -3, 2, 1, 0};
  std::vector<int64_t> buffer;
  const HashSpan out = CollapseKeepFirst(View(in), &buffer);
  EXPECT_EQ(out.data, in.data());
  EXPECT_EQ(out.size, in.size());
  EXPECT_THAT(buffer, IsEmpty());
}

TEST(CollapseKeepFirst, EdgeCases) {
  std::vector<int64_t> buffer;
  EXPECT_EQ(CollapseKeepFirst(HashSpan{nullptr, 0}, &buffer).size, 0u);
  const std::vector<int64_t> same = {7, 7, 7, 7};
  EXPECT_THAT(ToVector(CollapseKeepFirst(View(same), &buffer)), ElementsAre(7));
  const std::vector<int64_t> extremes = {INT64_MIN, 0, INT64_MAX, 0, INT64_MIN};
  EXPECT_THAT(ToVector(CollapseKeepFirst(View(extremes), &buffer)),
              ElementsAre(INT64_MIN, 0, INT64_MAX));
}

TEST(CollapseKeepFirst, MatchesReferenceOnRandomInput) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    std::mt19937_64 rng(seed);
    const size_t n = rng() % 20000;
    const int64_t range = static_cast<int64_t>(rng() % 30000) + 1;
    std::vector<int64_t> in(n);
    for (int64_t& h : in) h = static_cast<int64_t>(rng() % range) - range / 2;
    std::vector<int64_t> expected;
    std::set<int64_t> seen;
    for (int64_t h : in) {
      if (seen.insert(h).second) expected.push_back(h);
    }
    std::vector<int64_t> buffer;
    EXPECT_EQ(ToVector(CollapseKeepFirst(View(in), &buffer)), expected)
        << "seed " << seed;
  }
}

TEST(CollapseKeepLast, LastOccurrenceWinsWithMaskAndSize) {
  const std::vector<int64_t> hashes = {1, 2, 1, 3, 2};
  const std::vector<uint32_t> masks = {3, 1, 1, 7, 3};
  const std::vector<uint32_t> sizes = {80, 16, 0, 32, 48};
  ReportBuffer buffer;
  const ReportArrays out = CollapseKeepLast(
      ReportArrays{View(hashes), View(masks), View(sizes)}, &buffer);
  // Each hash at its last position: 1 (index 2), 3 (3), 2 (4).
  EXPECT_THAT(ToVector(out.hashes), ElementsAre(1, 3, 2));
  EXPECT_THAT(ToVector(out.masks), ElementsAre(1u, 7u, 3u));
  // Hash 1's last size is 0: the earlier 80 has no effect at all.
  EXPECT_THAT(ToVector(out.sizes), ElementsAre(0u, 32u, 48u));
}

TEST(CollapseKeepLast, Behaviour30LastEntryWins) {
  const std::vector<int64_t> hashes = {1, 1};
  const std::vector<uint32_t> masks = {3, 1};
  const std::vector<uint32_t> sizes = {80, 80};
  ReportBuffer buffer;
  const ReportArrays out = CollapseKeepLast(
      ReportArrays{View(hashes), View(masks), View(sizes)}, &buffer);
  EXPECT_THAT(ToVector(out.hashes), ElementsAre(1));
  EXPECT_THAT(ToVector(out.masks), ElementsAre(1u));
  EXPECT_THAT(ToVector(out.sizes), ElementsAre(80u));
}

TEST(CollapseKeepLast, EmptySideArraysStayEmpty) {
  const std::vector<int64_t> hashes = {4, 4, 5};
  const std::vector<uint32_t> sizes = {10, 20, 30};
  ReportBuffer buffer;
  const ReportArrays out = CollapseKeepLast(
      ReportArrays{View(hashes), U32Span{nullptr, 0}, View(sizes)}, &buffer);
  EXPECT_THAT(ToVector(out.hashes), ElementsAre(4, 5));
  EXPECT_EQ(out.masks.size, 0u);
  EXPECT_THAT(ToVector(out.sizes), ElementsAre(20u, 30u));
}

TEST(CollapseKeepLast, NoRepeatsReturnsTheInputWithoutCopying) {
  const std::vector<int64_t> hashes = {1, 2, 3};
  const std::vector<uint32_t> masks = {1, 1, 1};
  ReportBuffer buffer;
  const ReportArrays in{View(hashes), View(masks), U32Span{nullptr, 0}};
  const ReportArrays out = CollapseKeepLast(in, &buffer);
  EXPECT_EQ(out.hashes.data, hashes.data());
  EXPECT_EQ(out.masks.data, masks.data());
  EXPECT_EQ(out.hashes.size, 3u);
  EXPECT_THAT(buffer.hashes, IsEmpty());
}

TEST(CollapseKeepLast, MatchesReferenceOnRandomInput) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    std::mt19937_64 rng(seed);
    const size_t n = rng() % 16385;
    const int64_t range = static_cast<int64_t>(rng() % 20000) + 1;
    std::vector<int64_t> hashes(n);
    std::vector<uint32_t> masks(n), sizes(n);
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = static_cast<int64_t>(rng() % range);
      masks[i] = static_cast<uint32_t>(rng() % 8);
      sizes[i] = static_cast<uint32_t>(rng() % 100);
    }
    // Reference: the last (mask, size) per hash.
    std::map<int64_t, std::pair<uint32_t, uint32_t>> last;
    for (size_t i = 0; i < n; ++i) last[hashes[i]] = {masks[i], sizes[i]};
    ReportBuffer buffer;
    const ReportArrays out = CollapseKeepLast(
        ReportArrays{View(hashes), View(masks), View(sizes)}, &buffer);
    ASSERT_EQ(out.hashes.size, last.size()) << "seed " << seed;
    ASSERT_EQ(out.masks.size, last.size());
    ASSERT_EQ(out.sizes.size, last.size());
    std::set<int64_t> seen;
    for (size_t i = 0; i < out.hashes.size; ++i) {
      const int64_t h = out.hashes.data[i];
      EXPECT_TRUE(seen.insert(h).second) << "repeat " << h << " seed " << seed;
      EXPECT_EQ(out.masks.data[i], last[h].first) << "seed " << seed;
      EXPECT_EQ(out.sizes.data[i], last[h].second) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace kvindexer
