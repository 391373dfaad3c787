#include "server/worker_match_counters.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer::worker_match_counters_test {
namespace {

WorkerMatchKey Seed(std::string_view id) {
  WorkerMatchKey key;
  key.worker_id = id;
  return key;
}

TEST(WorkerMatchCountersTest, CountsPerWorkerUpToTheCapacity) {
  WorkerMatchCounters counters(2);
  counters.Add(Seed("b"), 3);
  counters.Add(Seed("a"), 1);
  counters.Add(Seed("c"), 5);  // over the capacity
  counters.Add(Seed("b"), 2);
  const std::vector<WorkerMatchCounters::Entry> entries = counters.Read();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].worker_id, "a");
  EXPECT_EQ(entries[0].value, 1u);
  EXPECT_EQ(entries[1].worker_id, "b");
  EXPECT_EQ(entries[1].value, 5u);
  EXPECT_EQ(counters.omitted(), 5u);
}

TEST(WorkerMatchCountersTest, StreamsOfOneWorkerAreKeptApart) {
  WorkerMatchCounters counters(4);
  WorkerMatchKey rank0{"w", true, "ns", 0};
  WorkerMatchKey rank1{"w", true, "ns", 1};
  counters.Add(rank0, 1);
  counters.Add(rank1, 2);
  counters.Add(Seed("w"), 4);
  const std::vector<WorkerMatchCounters::Entry> entries = counters.Read();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_FALSE(entries[0].stream);
  EXPECT_EQ(entries[0].value, 4u);
  EXPECT_EQ(entries[1].dp_rank, 0u);
  EXPECT_EQ(entries[1].value, 1u);
  EXPECT_EQ(entries[2].dp_rank, 1u);
  EXPECT_EQ(entries[2].value, 2u);
}

TEST(WorkerMatchCountersTest, ZeroCapacityOmitsEverything) {
  WorkerMatchCounters counters(0);
  counters.Add(Seed("a"), 7);
  EXPECT_TRUE(counters.Read().empty());
  EXPECT_EQ(counters.omitted(), 7u);
}

// Threads racing to create the same workers' counters: one counter per
// worker, never more than the capacity, and nothing lost.
TEST(WorkerMatchCountersTest, ConcurrentAddsLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kWorkers = 64;
  constexpr int kRounds = 200;
  WorkerMatchCounters counters(kWorkers / 2);
  std::vector<std::string> ids;
  for (int w = 0; w < kWorkers; ++w) ids.push_back("w" + std::to_string(w));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int r = 0; r < kRounds; ++r) {
        for (const std::string& id : ids) counters.Add(Seed(id), 1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::vector<WorkerMatchCounters::Entry> entries = counters.Read();
  EXPECT_EQ(entries.size(), static_cast<size_t>(kWorkers / 2));
  uint64_t total = counters.omitted();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) {
      EXPECT_NE(entries[i].worker_id, entries[i - 1].worker_id);
    }
    EXPECT_EQ(entries[i].value, static_cast<uint64_t>(kThreads * kRounds));
    total += entries[i].value;
  }
  EXPECT_EQ(total, static_cast<uint64_t>(kThreads * kWorkers * kRounds));
}

}  // namespace
}  // namespace kvindexer::worker_match_counters_test
