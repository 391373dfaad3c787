// MachineInfo: what a benchmark report records about the machine it ran on.
#ifndef KVINDEXER_BENCH_MACHINE_INFO_H_
#define KVINDEXER_BENCH_MACHINE_INFO_H_

#include <cstdint>
#include <string>

namespace kvindexer::bench {

struct MachineInfo {
  uint32_t nproc = 0;
  std::string cpu_model;      // from /proc/cpuinfo
  uint64_t mem_total_kb = 0;  // from /proc/meminfo
  std::string loadavg;        // /proc/loadavg at the time of the call
  std::string date_utc;       // ISO 8601
};

MachineInfo ReadMachineInfo();

// VmRSS of this process in bytes from /proc/self/status; 0 if unreadable.
uint64_t ReadRssBytes();

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_MACHINE_INFO_H_
