#include "server/server_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

// Quotes a value for an error message; bytes that are not printable ASCII
// are escaped so that invalid UTF-8 stays readable.
std::string Quote(std::string_view value) {
  return fmt::format("\"{}\"", absl::CHexEscape(absl::string_view(
                                   value.data(), value.size())));
}

absl::Status BadValue(std::string_view var, std::string_view value,
                      std::string_view accepted) {
  return absl::InvalidArgumentError(fmt::format("{}={} is invalid: expected {}",
                                                var, Quote(value), accepted));
}

// RFC 3629 validation: no overlongs, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
        (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

// Digits only: no sign, no whitespace. Fails above `max`.
bool ParseDecimal(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
    if (v > max) return false;
  }
  *out = v;
  return true;
}

constexpr std::string_view kListenAddrAccepted =
    "a literal IP address and port, such as 127.0.0.1:50051 or [::1]:50051 "
    "(IPv6 in brackets; hostnames are not resolved; port 0..65535, where 0 "
    "lets the kernel pick a free port)";
constexpr std::string_view kMaxInflightAccepted =
    "a positive integer (1..4294967295), for example 32";
constexpr std::string_view kBackendAccepted =
    "a backend name (for example absl_rwlock) or the path of a backend .so "
    "file";

}  // namespace

EnvLookup ProcessEnvironment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

absl::StatusOr<std::string> ParseListenAddr(std::string_view value) {
  const auto bad = [&] {
    return BadValue(kListenAddrVar, value, kListenAddrAccepted);
  };
  std::string host;
  std::string_view port;
  int family = AF_INET;
  if (!value.empty() && value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string_view::npos || close + 1 >= value.size() ||
        value[close + 1] != ':') {
      return bad();
    }
    host = std::string(value.substr(1, close - 1));
    port = value.substr(close + 2);
    family = AF_INET6;
  } else {
    const size_t colon = value.rfind(':');
    if (colon == std::string_view::npos) return bad();
    host = std::string(value.substr(0, colon));
    port = value.substr(colon + 1);
  }
  // inet_pton accepts only numeric forms (and no NUL bytes, which c_str()
  // would cut), so a hostname such as "localhost" fails here.
  unsigned char buf[sizeof(in6_addr)];
  if (host.find('\0') != std::string::npos ||
      inet_pton(family, host.c_str(), buf) != 1) {
    return bad();
  }
  uint64_t port_number = 0;
  if (!ParseDecimal(port, 65535, &port_number)) return bad();
  return std::string(value);
}

absl::StatusOr<uint32_t> ParsePrefixQueryMaxInflight(std::string_view value) {
  if (!IsValidUtf8(value)) {
    return absl::InvalidArgumentError(fmt::format(
        "{}={} is invalid: the value is not valid UTF-8; "
        "expected {}",
        kPrefixQueryMaxInflightVar, Quote(value), kMaxInflightAccepted));
  }
  uint64_t n = 0;
  if (!ParseDecimal(value, 0xFFFFFFFFu, &n) || n == 0) {
    return BadValue(kPrefixQueryMaxInflightVar, value, kMaxInflightAccepted);
  }
  return static_cast<uint32_t>(n);
}

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(
    std::string_view value) {
  const std::string lower =
      absl::AsciiStrToLower(absl::string_view(value.data(), value.size()));
  if (lower == "trace") return spdlog::level::trace;
  if (lower == "debug") return spdlog::level::debug;
  if (lower == "info") return spdlog::level::info;
  if (lower == "warn") return spdlog::level::warn;
  if (lower == "error") return spdlog::level::err;
  return BadValue(kLogLevelVar, value,
                  "one of trace, debug, info, warn, error");
}

absl::StatusOr<ServerConfig> LoadServerConfig(const EnvLookup& env) {
  ServerConfig config;
  if (auto v = env(kListenAddrVar)) {
    auto addr = ParseListenAddr(*v);
    if (!addr.ok()) return addr.status();
    config.listen_addr = *std::move(addr);
  }
  if (auto v = env(kPrefixQueryMaxInflightVar)) {
    auto n = ParsePrefixQueryMaxInflight(*v);
    if (!n.ok()) return n.status();
    config.prefix_query_max_inflight = *n;
  }
  if (auto v = env(kBackendVar)) {
    if (v->empty() || !IsValidUtf8(*v)) {
      return BadValue(kBackendVar, *v, kBackendAccepted);
    }
    config.backend = *std::move(v);
  }
  if (auto v = env(kBackendPathVar)) {
    if (!IsValidUtf8(*v)) {
      return BadValue(kBackendPathVar, *v,
                      "a colon-separated list of directories (valid UTF-8)");
    }
    config.backend_path = *std::move(v);
  }
  if (auto v = env(kLogLevelVar)) {
    auto level = ParseLogLevel(*v);
    if (!level.ok()) return level.status();
    config.log_level = *level;
  }
  return config;
}

absl::StatusOr<CommandLineAction> ParseCommandLine(
    std::span<const char* const> args) {
  CommandLineAction action = CommandLineAction::kRun;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      action = CommandLineAction::kHelp;
    } else {
      return absl::InvalidArgumentError(fmt::format(
          "unknown argument {}: kv-indexer-server is configured through "
          "environment variables (see --help); the only option is --help",
          Quote(arg)));
    }
  }
  return action;
}

std::string UsageText(std::string_view program) {
  struct Row {
    std::string_view var;
    std::string default_value;
    std::string_view accepted;
  };
  const Row rows[] = {
      {kListenAddrVar, std::string(kDefaultListenAddr),
       "IP literal and port (IPv6 in brackets); no hostnames; port 0 picks "
       "a free port"},
      {kPrefixQueryMaxInflightVar,
       std::to_string(kDefaultPrefixQueryMaxInflight),
       "positive integer: concurrent prefix scans; more get "
       "RESOURCE_EXHAUSTED"},
      {kBackendVar, std::string(kDefaultBackendName),
       "backend name (memory = the default), or path to a backend .so"},
      {kBackendPathVar, "(empty)",
       "colon-separated directories searched for backends by name"},
      {kLogLevelVar, "info", "trace, debug, info, warn or error"},
      {"KV_INDEXER_ROBIN_MERGE_MIN_DELTA", "1024",
       "robin_sharded_snapshot: changed blocks per shard before a merge "
       "into the base table; 0..4294967295"},
  };
  std::string out = fmt::format(
      "Usage: {} [--help]\n"
      "\n"
      "Single-process, in-memory SGLang KV indexer serving the gRPC service\n"
      "kv_indexer.v1.KVIndexer. It is configured through the environment:\n"
      "\n"
      "  {:<37} {:<14} {}\n",
      program, "VARIABLE", "DEFAULT", "ACCEPTED");
  for (const Row& row : rows) {
    out += fmt::format("  {:<37} {:<14} {}\n", row.var, row.default_value,
                       row.accepted);
  }
  out +=
      "\n"
      "A backend name N is looked up as kvindexer-backend-N.so, first in\n"
      "../lib/kvindexer/backends relative to the executable, then in each\n"
      "directory of KV_INDEXER_BACKEND_PATH. SIGINT or SIGTERM stops the\n"
      "server gracefully: it stops accepting calls and lets running calls\n"
      "finish.\n";
  return out;
}

}  // namespace kvindexer
