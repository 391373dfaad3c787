// Throughput of the bridge's CPU path on one core: msgpack decode -> action
// build -> chunking into ApplyExternalKvBatch requests, on batches shaped
// like SGLang's. Reports hashes per second (items_per_second).
//
// Run: <build>/bin/bridge_decode_bench
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bridge/action_builder.h"
#include "bridge/chunker.h"
#include "bridge/event_decoder.h"
#include "tests/support/msgpack_builders.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::Labels;
using ::kvindexer::bridge::testing::Mp;
using ::kvindexer::bridge::testing::MpArray;
using ::kvindexer::bridge::testing::PackBatch;
using ::kvindexer::bridge::testing::StoreEvent;

// Pseudo-random 64-bit hashes, half of them negative, like SHA-256 prefixes.
int64_t HashAt(uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  return static_cast<int64_t>(x * 0xBF58476D1CE4E5B9ull);
}

// `events` stores of `hashes_per_event` hashes with `page_size` tokens per
// hash, optionally with E3 component labels.
std::string MakeBatch(int events, int hashes_per_event, int page_size,
                      bool components) {
  MpArray list;
  uint64_t next = 0;
  for (int e = 0; e < events; ++e) {
    std::vector<int64_t> hashes;
    for (int h = 0; h < hashes_per_event; ++h) hashes.push_back(HashAt(next++));
    list.push_back(components ? StoreEvent(hashes, "GPU", page_size,
                                           Labels({"full", "swa"}))
                              : StoreEvent(hashes, "GPU", page_size));
  }
  return PackBatch(std::move(list), 1700000000.25, 0);
}

void RunPipeline(benchmark::State& state, const std::string& payload) {
  EventDecoder decoder;
  DecodedBatch batch;
  ActionList actions;
  const Tier clear_tiers[] = {Tier::kHbm, Tier::kDram, Tier::kSsd};
  const ApplyHeader header{"worker-0", "http://127.0.0.1:30000", std::nullopt,
                           std::nullopt, ""};
  uint64_t seq = 0;
  size_t hashes = 0;
  for (auto _ : state) {
    if (!decoder.Decode(payload, &batch).ok()) {
      state.SkipWithError("decode failed");
      return;
    }
    BuildActions(batch, clear_tiers, &actions);
    auto requests = ChunkActions(actions, header, seq++);
    benchmark::DoNotOptimize(requests.data());
    hashes = batch.hashes.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(hashes));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(payload.size()));
}

void RunDecodeOnly(benchmark::State& state, const std::string& payload) {
  EventDecoder decoder;
  DecodedBatch batch;
  for (auto _ : state) {
    if (!decoder.Decode(payload, &batch).ok()) {
      state.SkipWithError("decode failed");
      return;
    }
    benchmark::DoNotOptimize(batch.hashes.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(batch.hashes.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(payload.size()));
}

// 64 stores of 32 hashes (one radix node each), page size 16.
void BM_Pipeline_Stores32x64_Page16(benchmark::State& state) {
  static const std::string payload = MakeBatch(64, 32, 16, false);
  RunPipeline(state, payload);
}
BENCHMARK(BM_Pipeline_Stores32x64_Page16);

// Older radix cache: one event per page, 1 hash each, page size 1.
void BM_Pipeline_OneHashEvents2048_Page1(benchmark::State& state) {
  static const std::string payload = MakeBatch(2048, 1, 1, false);
  RunPipeline(state, payload);
}
BENCHMARK(BM_Pipeline_OneHashEvents2048_Page1);

// Newer recorders: coalesced stores, 8 events of 1,024 hashes, page size 1.
void BM_Pipeline_Coalesced1024x8_Page1(benchmark::State& state) {
  static const std::string payload = MakeBatch(8, 1024, 1, false);
  RunPipeline(state, payload);
}
BENCHMARK(BM_Pipeline_Coalesced1024x8_Page1);

// E3 component stores ["full","swa"]: side arrays are built and sent.
void BM_Pipeline_ComponentStores32x64_Page16(benchmark::State& state) {
  static const std::string payload = MakeBatch(64, 32, 16, true);
  RunPipeline(state, payload);
}
BENCHMARK(BM_Pipeline_ComponentStores32x64_Page16);

// A 40,000-hash coalesced store: three chunks.
void BM_Pipeline_Large40000_Page1(benchmark::State& state) {
  static const std::string payload = MakeBatch(1, 40000, 1, false);
  RunPipeline(state, payload);
}
BENCHMARK(BM_Pipeline_Large40000_Page1);

void BM_DecodeOnly_Stores32x64_Page16(benchmark::State& state) {
  static const std::string payload = MakeBatch(64, 32, 16, false);
  RunDecodeOnly(state, payload);
}
BENCHMARK(BM_DecodeOnly_Stores32x64_Page16);

}  // namespace
}  // namespace kvindexer::bridge

BENCHMARK_MAIN();
