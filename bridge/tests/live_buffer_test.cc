// LiveBuffer: order, overflow reporting, Close, and one producer with one
// consumer thread.
#include "bridge/live_buffer.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using namespace std::chrono_literals;

LiveItem Batch(uint64_t seq) {
  LiveItem item;
  item.kind = LiveItem::Kind::kBatch;
  item.batch.seq = seq;
  item.batch.payload = "p" + std::to_string(seq);
  return item;
}

LiveItem Marker(LiveItem::Kind kind) {
  LiveItem item;
  item.kind = kind;
  return item;
}

TEST(LiveBuffer, KeepsOrderOfBatchesAndMarkers) {
  LiveBuffer buffer(8);
  buffer.Push(Marker(LiveItem::Kind::kConnected));
  buffer.Push(Batch(0));
  buffer.Push(Batch(1));
  buffer.Push(Marker(LiveItem::Kind::kDisconnected));
  EXPECT_EQ(buffer.batches(), 2u);

  auto a = buffer.Pop(0ms);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, LiveItem::Kind::kConnected);
  auto b = buffer.Pop(0ms);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->kind, LiveItem::Kind::kBatch);
  EXPECT_EQ(b->batch.seq, 0u);
  EXPECT_EQ(b->batch.payload, "p0");
  EXPECT_EQ(buffer.Pop(0ms)->batch.seq, 1u);
  EXPECT_EQ(buffer.Pop(0ms)->kind, LiveItem::Kind::kDisconnected);
  EXPECT_EQ(buffer.batches(), 0u);
  EXPECT_FALSE(buffer.Pop(0ms).has_value());
}

TEST(LiveBuffer, OverflowIsOneItemWithFirstDroppedSeqAndCount) {
  LiveBuffer buffer(2);
  buffer.Push(Batch(10));
  buffer.Push(Batch(11));
  buffer.Push(Batch(12));                           // dropped
  buffer.Push(Batch(13));                           // dropped
  buffer.Push(Marker(LiveItem::Kind::kMalformed));  // markers always fit
  buffer.Push(Batch(14));  // dropped: a new run after the marker
  EXPECT_EQ(buffer.dropped_total(), 3u);
  EXPECT_EQ(buffer.batches(), 2u);

  EXPECT_EQ(buffer.Pop(0ms)->batch.seq, 10u);
  buffer.Push(Batch(15));  // room again: queued after the overflow
  EXPECT_EQ(buffer.Pop(0ms)->batch.seq, 11u);
  auto overflow = buffer.Pop(0ms);
  ASSERT_TRUE(overflow.has_value());
  EXPECT_EQ(overflow->kind, LiveItem::Kind::kOverflow);
  EXPECT_EQ(overflow->first_dropped_seq, 12u);
  EXPECT_EQ(overflow->dropped, 2u);
  EXPECT_EQ(buffer.Pop(0ms)->kind, LiveItem::Kind::kMalformed);
  auto second = buffer.Pop(0ms);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->kind, LiveItem::Kind::kOverflow);
  EXPECT_EQ(second->first_dropped_seq, 14u);
  EXPECT_EQ(second->dropped, 1u);
  EXPECT_EQ(buffer.Pop(0ms)->batch.seq, 15u);
  EXPECT_FALSE(buffer.Pop(0ms).has_value());
  EXPECT_EQ(buffer.dropped_total(), 3u);
}

TEST(LiveBuffer, OverflowDrainedBeforeAnyLaterPush) {
  LiveBuffer buffer(1);
  buffer.Push(Batch(1));
  buffer.Push(Batch(2));  // dropped
  EXPECT_EQ(buffer.Pop(0ms)->batch.seq, 1u);
  auto overflow = buffer.Pop(0ms);
  ASSERT_TRUE(overflow.has_value());
  EXPECT_EQ(overflow->kind, LiveItem::Kind::kOverflow);
  EXPECT_EQ(overflow->first_dropped_seq, 2u);
  EXPECT_EQ(overflow->dropped, 1u);
  buffer.Push(Batch(3));
  buffer.Push(Batch(4));  // dropped: a new run, reported on its own
  EXPECT_EQ(buffer.Pop(0ms)->batch.seq, 3u);
  overflow = buffer.Pop(0ms);
  ASSERT_TRUE(overflow.has_value());
  EXPECT_EQ(overflow->first_dropped_seq, 4u);
  EXPECT_EQ(overflow->dropped, 1u);
}

TEST(LiveBuffer, CloseWakesWaiterAndEndsEveryPop) {
  LiveBuffer buffer(4);
  buffer.Push(Batch(1));
  std::optional<LiveItem> first = buffer.Pop(0ms);
  ASSERT_TRUE(first.has_value());

  std::thread waiter([&] {
    // Would wait an hour unless Close() wakes it.
    EXPECT_FALSE(buffer.Pop(std::chrono::hours(1)).has_value());
  });
  buffer.Close();
  waiter.join();
  buffer.Push(Batch(2));
  EXPECT_FALSE(buffer.Pop(0ms).has_value());
  EXPECT_EQ(buffer.batches(), 0u);
}

TEST(LiveBuffer, ProducerAndConsumerThreadsSeeEveryBatchInOrder) {
  constexpr uint64_t kCount = 20000;
  LiveBuffer buffer(64);
  std::thread producer([&] {
    for (uint64_t seq = 0; seq < kCount; ++seq) buffer.Push(Batch(seq));
    buffer.Push(Marker(LiveItem::Kind::kDisconnected));
  });
  // Every batch is either delivered or covered by an overflow item, in
  // sequence order.
  uint64_t next = 0;
  uint64_t delivered = 0;
  while (true) {
    std::optional<LiveItem> item = buffer.Pop(std::chrono::seconds(10));
    ASSERT_TRUE(item.has_value());
    if (item->kind == LiveItem::Kind::kDisconnected) break;
    if (item->kind == LiveItem::Kind::kOverflow) {
      ASSERT_EQ(item->first_dropped_seq, next);
      next += item->dropped;
    } else {
      ASSERT_EQ(item->kind, LiveItem::Kind::kBatch);
      ASSERT_EQ(item->batch.seq, next);
      ++next;
      ++delivered;
    }
  }
  producer.join();
  EXPECT_EQ(next, kCount);
  EXPECT_EQ(delivered + buffer.dropped_total(), kCount);
}

// Consecutive malformed messages are one queued item carrying their count
// (and how many had a sequence frame of the wrong length), so garbage
// cannot grow the queue without bound; anything in between ends the run.
TEST(LiveBuffer, ConsecutiveMalformedMessagesAreMerged) {
  LiveBuffer buffer(4);
  auto malformed = [](size_t frames, std::string detail) {
    LiveItem item = Marker(LiveItem::Kind::kMalformed);
    item.frame_count = frames;
    item.detail = std::move(detail);
    return item;
  };
  buffer.Push(malformed(1, "first"));
  for (int i = 0; i < 10'000; ++i) buffer.Push(malformed(i % 2 ? 2 : 5, "x"));
  buffer.Push(Batch(7));
  buffer.Push(malformed(3, "after"));
  std::optional<LiveItem> merged = buffer.Pop(0ms);
  ASSERT_TRUE(merged.has_value());
  EXPECT_EQ(merged->kind, LiveItem::Kind::kMalformed);
  EXPECT_EQ(merged->detail, "first");
  EXPECT_EQ(merged->malformed, 10'001u);
  EXPECT_EQ(merged->malformed_seq_length, 5'000u);
  EXPECT_EQ(buffer.Pop(0ms)->batch.seq, 7u);
  std::optional<LiveItem> last = buffer.Pop(0ms);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->malformed, 1u);
  EXPECT_EQ(last->malformed_seq_length, 1u);
  EXPECT_FALSE(buffer.Pop(0ms).has_value());
}

}  // namespace
}  // namespace kvindexer::bridge
