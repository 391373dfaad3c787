#include "tests/support/msgpack_builders.h"

#include <cstdlib>
#include <cstring>

#include <msgpack.hpp>

namespace kvindexer::bridge::testing {
namespace {

// Always float64 (cb), as Python's msgpack writes a float. msgpack-cxx's
// pack_double would write an integral value such as 1.0 as an integer.
void PackFloat64(msgpack::sbuffer& buffer, double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  char bytes[9];
  bytes[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i) {
    bytes[1 + i] = static_cast<char>((bits >> (56 - 8 * i)) & 0xff);
  }
  buffer.write(bytes, sizeof bytes);
}

void PackInto(msgpack::sbuffer& buffer, msgpack::packer<msgpack::sbuffer>& pk,
              const Mp& value) {
  std::visit(
      [&buffer, &pk](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) {
          pk.pack_nil();
        } else if constexpr (std::is_same_v<T, bool>) {
          if (v) {
            pk.pack_true();
          } else {
            pk.pack_false();
          }
        } else if constexpr (std::is_same_v<T, int64_t>) {
          pk.pack_int64(v);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          pk.pack_uint64(v);
        } else if constexpr (std::is_same_v<T, double>) {
          PackFloat64(buffer, v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          pk.pack_str(static_cast<uint32_t>(v.size()));
          pk.pack_str_body(v.data(), static_cast<uint32_t>(v.size()));
        } else if constexpr (std::is_same_v<T, MpBin>) {
          pk.pack_bin(static_cast<uint32_t>(v.bytes.size()));
          pk.pack_bin_body(v.bytes.data(),
                           static_cast<uint32_t>(v.bytes.size()));
        } else if constexpr (std::is_same_v<T, MpArray>) {
          pk.pack_array(static_cast<uint32_t>(v.size()));
          for (const Mp& item : v) PackInto(buffer, pk, item);
        } else {
          pk.pack_map(static_cast<uint32_t>(v.size()));
          for (const auto& [key, val] : v) {
            PackInto(buffer, pk, key);
            PackInto(buffer, pk, val);
          }
        }
      },
      value.v);
}

}  // namespace

std::string Pack(const Mp& value) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> pk(buffer);
  PackInto(buffer, pk, value);
  return std::string(buffer.data(), buffer.size());
}

Mp Hashes(const std::vector<int64_t>& hashes) {
  MpArray out;
  out.reserve(hashes.size());
  for (int64_t h : hashes) out.emplace_back(h);
  return out;
}

Mp StoreEvent(const std::vector<int64_t>& hashes,
              std::optional<std::string> medium, int64_t block_size,
              std::optional<Mp> slot7) {
  MpArray tokens;
  for (int64_t i = 0; i < block_size * static_cast<int64_t>(hashes.size());
       ++i) {
    tokens.emplace_back(i % 1000);
  }
  MpArray event{Mp("BlockStored"),
                Hashes(hashes),
                Mp(nullptr),
                Mp(std::move(tokens)),
                Mp(block_size),
                Mp(nullptr),
                medium ? Mp(*medium) : Mp(nullptr)};
  if (slot7) event.push_back(std::move(*slot7));
  return event;
}

Mp RemoveEvent(const std::vector<int64_t>& hashes,
               std::optional<std::string> medium) {
  return MpArray{Mp("BlockRemoved"), Hashes(hashes),
                 medium ? Mp(*medium) : Mp(nullptr)};
}

Mp ClearEvent() { return MpArray{Mp("AllBlocksCleared")}; }

Mp Labels(const std::vector<std::string>& labels) {
  MpArray out;
  for (const auto& l : labels) out.emplace_back(l);
  return out;
}

Mp Batch(MpArray events, double ts, std::optional<int64_t> dp_rank) {
  return MpArray{Mp(ts), Mp(std::move(events)),
                 dp_rank ? Mp(*dp_rank) : Mp(nullptr)};
}

std::string PackBatch(MpArray events, double ts,
                      std::optional<int64_t> dp_rank) {
  return Pack(Batch(std::move(events), ts, dp_rank));
}

std::string FromHex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    std::abort();
  };
  if (hex.size() % 2 != 0) std::abort();
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1])));
  }
  return out;
}

std::string ToHex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string SeqFrame(uint64_t seq) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<size_t>(i)] = static_cast<char>(seq & 0xff);
    seq >>= 8;
  }
  return out;
}

}  // namespace kvindexer::bridge::testing
