#include "server/rejection_log.h"

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer {
namespace {

using namespace std::chrono_literals;

struct Line {
  spdlog::level::level_enum level;
  std::string text;
};

class RejectionLogTest : public ::testing::Test {
 protected:
  RejectionLog log_{
      [this](spdlog::level::level_enum level, std::string_view text) {
        std::lock_guard<std::mutex> lock(mu_);
        lines_.push_back({level, std::string(text)});
      }};
  std::mutex mu_;
  std::vector<Line> lines_;
};

// Behaviour 49 (docs/contract.md, "Reference behaviours"): 16 rejections log
// at totals 1, 2, 4, 8, 16.
TEST_F(RejectionLogTest, OverloadLogsAtPowersOfTwo) {
  for (int i = 0; i < 16; ++i) log_.RecordOverload();
  ASSERT_EQ(lines_.size(), 5u);
  const char* const totals[] = {"1", "2", "4", "8", "16"};
  for (size_t i = 0; i < lines_.size(); ++i) {
    EXPECT_EQ(lines_[i].level, spdlog::level::warn);
    EXPECT_EQ(lines_[i].text,
              std::string("rejecting prefix query: too many in-flight prefix "
                          "queries rejected_total=") +
                  totals[i]);
  }
  EXPECT_EQ(log_.rejected_total(), 16u);
  EXPECT_EQ(log_.shed_total(), 0u);
}

TEST_F(RejectionLogTest, ShedLogsAtInfoWithFields) {
  for (int i = 0; i < 3; ++i) log_.RecordShed(60ms, 20ms);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[0].level, spdlog::level::info);
  EXPECT_EQ(lines_[0].text,
            "shedding prefix query whose caller deadline already passed "
            "shed_total=1 waited_ms=60 budget_ms=20");
  EXPECT_EQ(lines_[1].text,
            "shedding prefix query whose caller deadline already passed "
            "shed_total=2 waited_ms=60 budget_ms=20");
  EXPECT_EQ(log_.shed_total(), 3u);
}

TEST_F(RejectionLogTest, ClassesCountIndependently) {
  log_.RecordShed(1ms, 0ms);
  log_.RecordOverload();
  log_.RecordShed(1ms, 0ms);
  log_.RecordOverload();
  log_.RecordShed(1ms, 0ms);  // total 3: not logged
  EXPECT_EQ(lines_.size(), 4u);
}

TEST_F(RejectionLogTest, ConcurrentRecordsLogEachPowerOfTwoOnce) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 1000;  // 4000 total: powers 1..2048 -> 12 lines
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this] {
      for (int i = 0; i < kPerThread; ++i) log_.RecordOverload();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(log_.rejected_total(), 4000u);
  EXPECT_EQ(lines_.size(), 12u);
}

TEST(PowerOfTwoTest, Values) {
  EXPECT_FALSE(IsPowerOfTwo(0));
  EXPECT_TRUE(IsPowerOfTwo(1));
  EXPECT_TRUE(IsPowerOfTwo(2));
  EXPECT_FALSE(IsPowerOfTwo(3));
  EXPECT_TRUE(IsPowerOfTwo(1ull << 63));
  EXPECT_FALSE(IsPowerOfTwo((1ull << 63) + 1));
}

}  // namespace
}  // namespace kvindexer
