#include "core/worker_claims.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace kvindexer {
namespace {

using namespace std::chrono_literals;

// A worker's claims, with a clock the test moves by hand.
class WorkerClaimsTest : public ::testing::Test {
 protected:
  std::optional<ClaimConflict> Claim(std::string_view peer,
                                     std::string_view address,
                                     std::string_view epoch = "e1") {
    return claims_.Observe(WorkerClaim{peer, address, epoch}, now_);
  }
  void Advance(std::chrono::steady_clock::duration d) { now_ += d; }

  WorkerClaims claims_;
  WorkerClaims::TimePoint now_{};
};

TEST_F(WorkerClaimsTest, OneBridgeNeverConflicts) {
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(Claim("ipv4:10.0.0.5:40000", "http://10.0.0.1:30000"));
    Advance(1s);
  }
  EXPECT_EQ(claims_.runs(), 1u);  // one run, however many claims
  EXPECT_EQ(claims_.conflicts_total(), 0u);
}

TEST_F(WorkerClaimsTest, OneLegitimateChangeDoesNotConflict) {
  // The worker restarts on a new address under a new epoch; its bridge
  // reconnects from another port. The old bridge is gone.
  EXPECT_FALSE(Claim("ipv4:10.0.0.5:40000", "http://10.0.0.1:30000", "e1"));
  EXPECT_FALSE(Claim("ipv4:10.0.0.5:40000", "http://10.0.0.1:30000", "e1"));
  Advance(2s);
  EXPECT_FALSE(Claim("ipv4:10.0.0.5:40100", "http://10.0.0.2:30000", "e2"));
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(Claim("ipv4:10.0.0.5:40100", "http://10.0.0.2:30000", "e2"));
  }
  EXPECT_EQ(claims_.conflicts_total(), 0u);
}

TEST_F(WorkerClaimsTest, AlternationConflictsOnEverySwitchBack) {
  EXPECT_FALSE(Claim("ipv4:10.0.0.5:40000", "http://a:1"));
  EXPECT_FALSE(Claim("ipv4:10.0.0.6:40000", "http://b:1"));
  const auto first = Claim("ipv4:10.0.0.5:40000", "http://a:1");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->total, 1u);
  EXPECT_TRUE(first->log);
  EXPECT_EQ(first->other_peer, "ipv4:10.0.0.6:40000");
  EXPECT_EQ(first->other_address, "http://b:1");
  EXPECT_EQ(first->other_epoch, "e1");

  const auto second = Claim("ipv4:10.0.0.6:40000", "http://b:1");
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->other_peer, "ipv4:10.0.0.5:40000");
  EXPECT_EQ(claims_.conflicts_total(), 2u);
}

TEST_F(WorkerClaimsTest, DifferentEpochAloneConflicts) {
  EXPECT_FALSE(Claim("p1", "http://a:1", "e1"));
  EXPECT_FALSE(Claim("p2", "http://a:1", "e2"));
  const auto conflict = Claim("p1", "http://a:1", "e1");
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->other_epoch, "e2");
}

TEST_F(WorkerClaimsTest, AgreeingPeersNeverConflict) {
  // One bridge reconnecting, or two bridges that say the same thing.
  for (int i = 0; i < 6; ++i) {
    EXPECT_FALSE(Claim(i % 2 == 0 ? "p1" : "p2", "http://a:1"));
  }
  EXPECT_EQ(claims_.conflicts_total(), 0u);
}

TEST_F(WorkerClaimsTest, APeerChangingItsOwnClaimDoesNotConflict) {
  EXPECT_FALSE(Claim("p1", "http://a:1", "e1"));
  EXPECT_FALSE(Claim("p1", "http://b:1", "e1"));
  EXPECT_FALSE(Claim("p1", "http://a:1", "e1"));
  EXPECT_FALSE(Claim("p1", "http://a:1", "e2"));
  EXPECT_EQ(claims_.conflicts_total(), 0u);
}

TEST_F(WorkerClaimsTest, ARivalBeforeThePeersLatestRunDoesNotCount) {
  // p2 spoke before p1's latest run, not since: p1 is not coming back to
  // anything.
  EXPECT_FALSE(Claim("p2", "http://b:1"));
  EXPECT_FALSE(Claim("p1", "http://a:1", "e1"));
  EXPECT_FALSE(Claim("p1", "http://a:1", "e2"));
  EXPECT_EQ(claims_.conflicts_total(), 0u);
}

TEST_F(WorkerClaimsTest, ClaimsOutsideTheWindowAreForgotten) {
  EXPECT_FALSE(Claim("p1", "http://a:1"));
  EXPECT_FALSE(Claim("p2", "http://b:1"));
  Advance(kClaimWindow + 1s);
  // Both runs are older than the window: p1 coming back is a new start.
  EXPECT_FALSE(Claim("p1", "http://a:1"));
  EXPECT_EQ(claims_.runs(), 1u);

  // Exactly at the window's edge a run still counts.
  EXPECT_FALSE(Claim("p2", "http://b:1"));
  Advance(kClaimWindow);
  EXPECT_TRUE(Claim("p1", "http://a:1").has_value());
}

TEST_F(WorkerClaimsTest, HistoryIsBoundedWhateverTheClaims) {
  // Many peers, each with another long address, within the window.
  const std::string long_address(4096, 'x');
  for (int i = 0; i < 100; ++i) {
    (void)Claim("peer-" + std::to_string(i), long_address + std::to_string(i));
  }
  EXPECT_EQ(claims_.runs(), kClaimHistory);
  // Kept text is cut: peer-98 coming back after peer-99 conflicts, and the
  // line can show only the excerpt of peer-99's address.
  const auto conflict = Claim("peer-98", "y");
  ASSERT_TRUE(conflict.has_value());
  EXPECT_EQ(conflict->other_address, std::string(kClaimExcerptBytes, 'x'));
}

TEST_F(WorkerClaimsTest, LoggingIsThrottledAtPowersOfTwo) {
  std::vector<uint64_t> logged;
  EXPECT_FALSE(Claim("p1", "a"));
  for (int i = 0; i < 20; ++i) {
    const auto conflict =
        Claim(i % 2 == 0 ? "p2" : "p1", i % 2 == 0 ? "b" : "a");
    if (i == 0) {
      EXPECT_FALSE(conflict.has_value());  // p2's first claim: one change
      continue;
    }
    ASSERT_TRUE(conflict.has_value()) << i;
    if (conflict->log) logged.push_back(conflict->total);
  }
  EXPECT_EQ(claims_.conflicts_total(), 19u);
  EXPECT_EQ(logged, (std::vector<uint64_t>{1, 2, 4, 8, 16}));
}

TEST(ClaimConflictLine, NamesBothClaims) {
  ClaimConflict conflict;
  conflict.total = 4;
  conflict.other_peer = "ipv4:10.0.0.6:40000";
  conflict.other_address = "http://b:1";
  conflict.other_epoch = "e2";
  EXPECT_EQ(
      ClaimConflictLine("w1",
                        WorkerClaim{"ipv4:10.0.0.5:40000", "http://a:1", "e1"},
                        conflict),
      "worker claimed by two bridges with different addresses or epochs "
      "worker=w1 peer=ipv4:10.0.0.5:40000 address=http://a:1 epoch=e1 "
      "other_peer=ipv4:10.0.0.6:40000 other_address=http://b:1 other_epoch=e2 "
      "conflicts_total=4");
  // Long values are cut, with the count of what was left out.
  const std::string long_address(3000, 'a');
  const std::string line = ClaimConflictLine(
      "w1", WorkerClaim{"p", long_address, "e"}, ClaimConflict{});
  EXPECT_NE(line.find(" address=" + std::string(kClaimExcerptBytes, 'a') +
                      "...(+2936 bytes) epoch=e "),
            std::string::npos)
      << line;
  // Control bytes are escaped, in the claim and in the stored rival.
  conflict.other_epoch = "e\n";
  const std::string escaped =
      ClaimConflictLine("w\n1", WorkerClaim{"p", "a\r", "e"}, conflict);
  EXPECT_NE(escaped.find(" worker=w\\x0a1 peer=p address=a\\x0d epoch=e "),
            std::string::npos)
      << escaped;
  EXPECT_NE(escaped.find(" other_epoch=e\\x0a "), std::string::npos) << escaped;
}

}  // namespace
}  // namespace kvindexer
