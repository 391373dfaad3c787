#include "bridge_payloads.h"

#include <algorithm>
#include <msgpack.hpp>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::bench {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void PackStr(Packer& pk, std::string_view s) {
  pk.pack_str(static_cast<uint32_t>(s.size()));
  pk.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

absl::Status BadShape(absl::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("batch shape \"", text,
                   "\" is not <stores>x<hashes>p<page> with positive numbers, "
                   "e.g. 64x32p16"));
}

void PackStore(Packer& pk, uint64_t first_index, size_t hashes,
               uint32_t page_size) {
  pk.pack_array(7);
  PackStr(pk, "BlockStored");
  pk.pack_array(static_cast<uint32_t>(hashes));
  for (size_t i = 0; i < hashes; ++i) pk.pack_int64(BenchHash(first_index + i));
  pk.pack_nil();
  const size_t tokens = hashes * page_size;
  pk.pack_array(static_cast<uint32_t>(tokens));
  for (size_t t = 0; t < tokens; ++t) pk.pack_uint32(t % 1000);
  pk.pack_uint32(page_size);
  pk.pack_nil();
  PackStr(pk, "GPU");
}

}  // namespace

absl::StatusOr<BatchShape> ParseBatchShape(absl::string_view text) {
  const size_t x = text.find('x');
  const size_t p = text.find('p');
  if (x == absl::string_view::npos || p == absl::string_view::npos || p < x) {
    return BadShape(text);
  }
  BatchShape shape;
  shape.name = std::string(text);
  if (!absl::SimpleAtoi(text.substr(0, x), &shape.stores) ||
      !absl::SimpleAtoi(text.substr(x + 1, p - x - 1),
                        &shape.hashes_per_store) ||
      !absl::SimpleAtoi(text.substr(p + 1), &shape.page_size) ||
      shape.stores == 0 || shape.hashes_per_store == 0 ||
      shape.page_size == 0) {
    return BadShape(text);
  }
  return shape;
}

int64_t BenchHash(uint64_t index) {
  uint64_t x = (index + 1) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<int64_t>(x == 0 ? 1 : x);
}

size_t BatchPlan::HashesIn(size_t batch) const {
  if (batch + 1 == batches && last_batch_hashes > 0) return last_batch_hashes;
  return shape.hashes_per_batch();
}

size_t BatchPlan::TotalHashes() const {
  if (batches == 0) return 0;
  return (batches - 1) * shape.hashes_per_batch() + HashesIn(batches - 1);
}

std::vector<int64_t> BatchPlan::AllHashes() const {
  std::vector<int64_t> out;
  out.reserve(TotalHashes());
  for (size_t b = 0; b < batches; ++b) {
    const uint64_t first = FirstIndex(b);
    for (size_t i = 0; i < HashesIn(b); ++i)
      out.push_back(BenchHash(first + i));
  }
  return out;
}

BatchPlan PlanForHashes(const BatchShape& shape, uint64_t base,
                        size_t total_hashes) {
  BatchPlan plan;
  plan.shape = shape;
  plan.base = base;
  const size_t per = shape.hashes_per_batch();
  plan.batches = (total_hashes + per - 1) / per;
  const size_t rest = total_hashes % per;
  plan.last_batch_hashes = rest;
  return plan;
}

std::string PackPlanBatch(const BatchPlan& plan, size_t batch) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  const size_t hashes = plan.HashesIn(batch);
  const size_t per_store = plan.shape.hashes_per_store;
  const size_t stores = (hashes + per_store - 1) / per_store;
  pk.pack_array(3);
  pk.pack_double(1700000000.25 + static_cast<double>(batch));
  pk.pack_array(static_cast<uint32_t>(stores));
  uint64_t index = plan.FirstIndex(batch);
  size_t left = hashes;
  for (size_t s = 0; s < stores; ++s) {
    const size_t n = std::min(left, per_store);
    PackStore(pk, index, n, plan.shape.page_size);
    index += n;
    left -= n;
  }
  pk.pack_uint32(0);
  return std::string(buffer.data(), buffer.size());
}

std::string PackStoreBatch(const std::vector<int64_t>& hashes) {
  msgpack::sbuffer buffer;
  Packer pk(buffer);
  pk.pack_array(3);
  pk.pack_double(1700000000.0);
  pk.pack_array(1);
  pk.pack_array(7);
  PackStr(pk, "BlockStored");
  pk.pack_array(static_cast<uint32_t>(hashes.size()));
  for (int64_t h : hashes) pk.pack_int64(h);
  pk.pack_nil();
  pk.pack_array(static_cast<uint32_t>(hashes.size()));
  for (size_t t = 0; t < hashes.size(); ++t) pk.pack_uint32(t % 1000);
  pk.pack_uint32(1);
  pk.pack_nil();
  PackStr(pk, "GPU");
  pk.pack_uint32(0);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace kvindexer::bench
