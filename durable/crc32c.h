// CRC32C (Castagnoli), the checksum of every record and checkpoint part in
// the data directory. Debian 12's abseil predates absl::crc32c.
#ifndef KVINDEXER_DURABLE_CRC32C_H_
#define KVINDEXER_DURABLE_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvindexer::durable {

// Extends `crc` (the CRC32C of earlier bytes, 0 for none) over `data`,
// with the CPU's instruction when it has one (SSE 4.2 on x86-64).
uint32_t Crc32c(std::string_view data, uint32_t crc = 0);

// The same with tables only (slicing by eight), on any CPU.
uint32_t Crc32cPortable(std::string_view data, uint32_t crc = 0);

// Whether Crc32c uses the CPU's instruction on this machine.
bool Crc32cInHardware();

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_CRC32C_H_
