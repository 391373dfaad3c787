// Short human forms of the numbers the admin API reports in raw units.
#ifndef KVINDEXER_CTL_UNITS_H_
#define KVINDEXER_CTL_UNITS_H_

#include <cstdint>
#include <string>

namespace kvindexer::ctl {

// 850ms, 12.3s, 5m03s, 2h14m, 3d04h.
std::string FormatDurationMs(uint64_t ms);

// 512 B, 1.5 KiB, 12.3 MiB, 4.0 GiB.
std::string FormatBytes(uint64_t bytes);

// A counter's change since the previous sample: "+12", "-3", "0".
std::string FormatDelta(uint64_t previous, uint64_t current);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_UNITS_H_
