#include "server/durability_config.h"

#include <charconv>
#include <optional>

#include "absl/strings/str_cat.h"

namespace kvindexer {
namespace {

constexpr std::string_view kDataDirAccepted =
    "a directory path (valid UTF-8, no NUL); unset or empty keeps the index "
    "in memory only";
constexpr std::string_view kWalSyncAccepted =
    "always (acknowledge after fdatasync) or none (acknowledge after the "
    "write reaches the operating system)";
constexpr std::string_view kCheckpointBytesAccepted =
    "an integer of bytes, at least 1048576 (1 MiB), for example 67108864";

constexpr std::string_view kCheckpointTimeoutAccepted =
    "milliseconds a checkpoint build may run before it is abandoned, an "
    "integer from 1000 (one second) to 86400000 (one day), for example "
    "600000";

constexpr std::string_view kCheckpointBuilderAccepted =
    "process (a process of its own, at the lowest CPU priority) or thread (a "
    "thread of the server)";

// Digits only: no sign, no spaces, no suffixes; nullopt otherwise or on
// overflow.
std::optional<uint64_t> ParseByteCount(std::string_view value) {
  if (value.empty() ||
      value.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  uint64_t n = 0;
  const auto [end, ec] =
      std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return std::nullopt;
  }
  return n;
}

}  // namespace

absl::StatusOr<durable::WalSync> ParseWalSync(std::string_view value) {
  if (value == "always") return durable::WalSync::kAlways;
  if (value == "none") return durable::WalSync::kNone;
  return InvalidEnvValue(kWalSyncVar, value, kWalSyncAccepted);
}

absl::StatusOr<uint64_t> ParseCheckpointBytes(std::string_view value) {
  const std::optional<uint64_t> n = ParseByteCount(value);
  if (n.has_value() && *n >= kMinCheckpointBytes) return *n;
  return InvalidEnvValue(kCheckpointBytesVar, value, kCheckpointBytesAccepted);
}

absl::StatusOr<uint64_t> ParseMaxReplayBytes(std::string_view value,
                                             uint64_t checkpoint_bytes) {
  const std::optional<uint64_t> n = ParseByteCount(value);
  if (n.has_value() && (*n == 0 || *n / 2 >= checkpoint_bytes)) return *n;
  return InvalidEnvValue(
      kMaxReplayBytesVar, value,
      absl::StrCat("0 (no bound: writes never wait for a checkpoint) or an "
                   "integer of bytes at least twice KV_INDEXER_CHECKPOINT_"
                   "BYTES (",
                   checkpoint_bytes, "), that is at least ",
                   2 * checkpoint_bytes));
}

absl::StatusOr<CheckpointBuilder> ParseCheckpointBuilder(
    std::string_view value) {
  if (value == "process") return CheckpointBuilder::kProcess;
  if (value == "thread") return CheckpointBuilder::kThread;
  return InvalidEnvValue(kCheckpointBuilderVar, value,
                         kCheckpointBuilderAccepted);
}

absl::StatusOr<std::chrono::milliseconds> ParseCheckpointTimeoutMs(
    std::string_view value) {
  absl::StatusOr<uint32_t> ms =
      ParseEnvUint32(kCheckpointTimeoutMsVar, value,
                     Uint32Syntax{.min = kMinCheckpointTimeoutMs,
                                  .max = kMaxCheckpointTimeoutMs},
                     kCheckpointTimeoutAccepted);
  if (!ms.ok()) return ms.status();
  return std::chrono::milliseconds(*ms);
}

absl::StatusOr<DurabilityConfig> LoadDurabilityConfig(const EnvLookup& env) {
  DurabilityConfig config;
  if (auto v = env(kWalSyncVar)) {
    auto sync = ParseWalSync(*v);
    if (!sync.ok()) return sync.status();
    config.wal_sync = *sync;
  }
  if (auto v = env(kCheckpointBytesVar)) {
    auto bytes = ParseCheckpointBytes(*v);
    if (!bytes.ok()) return bytes.status();
    config.checkpoint_bytes = *bytes;
  }
  config.max_replay_bytes = kDefaultReplayRotations * config.checkpoint_bytes;
  if (auto v = env(kMaxReplayBytesVar)) {
    auto bytes = ParseMaxReplayBytes(*v, config.checkpoint_bytes);
    if (!bytes.ok()) return bytes.status();
    config.max_replay_bytes = *bytes;
  }
  if (auto v = env(kCheckpointBuilderVar)) {
    auto builder = ParseCheckpointBuilder(*v);
    if (!builder.ok()) return builder.status();
    config.checkpoint_builder = *builder;
  }
  if (auto v = env(kCheckpointTimeoutMsVar)) {
    auto timeout = ParseCheckpointTimeoutMs(*v);
    if (!timeout.ok()) return timeout.status();
    config.checkpoint_timeout = *timeout;
  }
  if (auto v = env(kDataDirVar)) {
    if (!IsValidUtf8(*v) || v->find('\0') != std::string::npos) {
      return InvalidEnvValue(kDataDirVar, *v, kDataDirAccepted);
    }
    config.data_dir = *std::move(v);
  }
  return config;
}

std::string_view WalSyncName(durable::WalSync sync) {
  return sync == durable::WalSync::kAlways ? "always" : "none";
}

std::string_view CheckpointBuilderName(CheckpointBuilder builder) {
  return builder == CheckpointBuilder::kProcess ? "process" : "thread";
}

}  // namespace kvindexer
