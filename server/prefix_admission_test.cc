#include "server/prefix_admission.h"

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer {
namespace {

TEST(PrefixAdmissionTest, RejectsBeyondLimitWithoutBlocking) {
  PrefixAdmission admission(2);
  PrefixAdmission::Permit a = admission.TryAcquire();
  PrefixAdmission::Permit b = admission.TryAcquire();
  EXPECT_TRUE(a);
  EXPECT_TRUE(b);
  EXPECT_EQ(admission.in_flight(), 2u);
  PrefixAdmission::Permit c = admission.TryAcquire();
  EXPECT_FALSE(c);
  EXPECT_EQ(admission.in_flight(), 2u);
}

TEST(PrefixAdmissionTest, ReleaseOnDestructionFreesAPermit) {
  PrefixAdmission admission(1);
  {
    PrefixAdmission::Permit a = admission.TryAcquire();
    ASSERT_TRUE(a);
    EXPECT_FALSE(admission.TryAcquire());
  }
  EXPECT_EQ(admission.in_flight(), 0u);
  EXPECT_TRUE(admission.TryAcquire());
}

TEST(PrefixAdmissionTest, MoveTransfersOwnership) {
  PrefixAdmission admission(1);
  PrefixAdmission::Permit a = admission.TryAcquire();
  PrefixAdmission::Permit b = std::move(a);
  EXPECT_FALSE(a.held());  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(b.held());
  EXPECT_EQ(admission.in_flight(), 1u);
  PrefixAdmission::Permit c;
  c = std::move(b);
  EXPECT_EQ(admission.in_flight(), 1u);
  c.Release();
  c.Release();  // idempotent
  EXPECT_EQ(admission.in_flight(), 0u);
}

TEST(PrefixAdmissionTest, ConcurrentAcquireNeverExceedsLimit) {
  constexpr uint32_t kLimit = 3;
  PrefixAdmission admission(kLimit);
  std::atomic<uint32_t> holders{0};
  std::atomic<uint32_t> max_holders{0};
  std::atomic<uint64_t> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        PrefixAdmission::Permit p = admission.TryAcquire();
        if (!p) continue;
        granted.fetch_add(1);
        const uint32_t now = holders.fetch_add(1) + 1;
        uint32_t seen = max_holders.load();
        while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
        }
        EXPECT_LE(admission.in_flight(), kLimit);
        holders.fetch_sub(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(max_holders.load(), kLimit);
  EXPECT_GT(granted.load(), 0u);
  EXPECT_EQ(admission.in_flight(), 0u);
}

}  // namespace
}  // namespace kvindexer
