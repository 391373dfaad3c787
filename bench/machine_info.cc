#include "machine_info.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvindexer::bench {
namespace {

// The value after "<name>:" on the first line that starts with `name`.
std::string ProcField(const char* path, absl::string_view name) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, name)) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    return std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return "";
}

uint64_t LeadingNumber(const std::string& s) {
  const std::vector<std::string> parts =
      absl::StrSplit(s, ' ', absl::SkipEmpty());
  uint64_t v = 0;
  if (!parts.empty() && absl::SimpleAtoi(parts[0], &v)) return v;
  return 0;
}

}  // namespace

MachineInfo ReadMachineInfo() {
  MachineInfo m;
  m.nproc = static_cast<uint32_t>(::sysconf(_SC_NPROCESSORS_ONLN));
  m.cpu_model = ProcField("/proc/cpuinfo", "model name");
  m.mem_total_kb = LeadingNumber(ProcField("/proc/meminfo", "MemTotal"));
  std::ifstream load("/proc/loadavg");
  std::getline(load, m.loadavg);
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  m.date_utc = buf;
  return m;
}

uint64_t ReadRssBytes() {
  return LeadingNumber(ProcField("/proc/self/status", "VmRSS")) * 1024;
}

}  // namespace kvindexer::bench
