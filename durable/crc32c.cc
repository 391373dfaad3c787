#include "durable/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define KVINDEXER_CRC32C_SSE42 1
#endif

namespace kvindexer::durable {
namespace {

// Reflected Castagnoli polynomial.
constexpr uint32_t kPolynomial = 0x82F63B78u;

// Slicing-by-8 tables: table[0] is the byte-at-a-time table; table[k][b] is
// the CRC of byte b followed by k zero bytes, so eight bytes fold in with
// eight independent look-ups. Portable code, no -m flags: the build must run
// on any x86-64 or ARM host.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ ((crc & 1u) != 0 ? kPolynomial : 0u);
    }
    tables[0][b] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t prev = tables[k - 1][b];
      tables[k][b] = (prev >> 8) ^ tables[0][prev & 0xFFu];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

uint32_t LoadLittleEndian32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

#ifdef KVINDEXER_CRC32C_SSE42
// SSE 4.2's crc32 instruction computes exactly this CRC, eight bytes at a
// time and several times faster than the tables. Compiled for SSE 4.2 in
// this function only and called only when the CPU has it, so the binary
// still runs on any x86-64.
__attribute__((target("sse4.2"))) uint32_t HardwareCrc32c(std::string_view data,
                                                          uint32_t crc) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t word;
    memcpy(&word, p, sizeof(word));
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*p));
    ++p;
    --n;
  }
  return ~c32;
}

bool CpuHasCrc32c() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

bool Crc32cInHardware() {
#ifdef KVINDEXER_CRC32C_SSE42
  return CpuHasCrc32c();
#else
  return false;
#endif
}

uint32_t Crc32c(std::string_view data, uint32_t crc) {
#ifdef KVINDEXER_CRC32C_SSE42
  if (CpuHasCrc32c()) return HardwareCrc32c(data, crc);
#endif
  return Crc32cPortable(data, crc);
}

uint32_t Crc32cPortable(std::string_view data, uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint32_t c = ~crc;
  while (n >= 8) {
    const uint32_t lo = LoadLittleEndian32(p) ^ c;
    const uint32_t hi = LoadLittleEndian32(p + 4);
    c = kTables[7][lo & 0xFFu] ^ kTables[6][(lo >> 8) & 0xFFu] ^
        kTables[5][(lo >> 16) & 0xFFu] ^ kTables[4][lo >> 24] ^
        kTables[3][hi & 0xFFu] ^ kTables[2][(hi >> 8) & 0xFFu] ^
        kTables[1][(hi >> 16) & 0xFFu] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c = (c >> 8) ^ kTables[0][(c ^ *p) & 0xFFu];
    ++p;
    --n;
  }
  return ~c;
}

}  // namespace kvindexer::durable
