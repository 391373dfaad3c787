#include "fleet/jetstream_lease_register.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace kvindexer::fleet {
namespace {

constexpr char kKey[] = "writer";
constexpr char kWrongLastSequenceText[] = "wrong last sequence";

struct KvEntryDeleter {
  void operator()(kvEntry* e) const { kvEntry_Destroy(e); }
};
using KvEntryPtr = std::unique_ptr<kvEntry, KvEntryDeleter>;

class JetStreamLeaseRegister final : public LeaseRegister {
 public:
  JetStreamLeaseRegister(std::shared_ptr<NatsClient> client, std::string bucket,
                         kvStore* kv)
      : client_(std::move(client)), bucket_(std::move(bucket)), kv_(kv) {}
  ~JetStreamLeaseRegister() override { kvStore_Destroy(kv_); }

  absl::StatusOr<std::optional<Entry>> Get() override {
    kvEntry* raw = nullptr;
    const natsStatus s = kvStore_Get(&raw, kv_, kKey);
    KvEntryPtr entry(raw);
    if (s == NATS_NOT_FOUND) return std::optional<Entry>();
    if (s != NATS_OK) {
      return NatsUnavailable(
          absl::StrCat("cannot read the lease in bucket ", bucket_), s,
          static_cast<jsErrCode>(0));
    }
    const char* data = static_cast<const char*>(kvEntry_Value(entry.get()));
    const int len = kvEntry_ValueLen(entry.get());
    return std::optional<Entry>(
        Entry{.value = std::string(data == nullptr ? "" : data,
                                   len > 0 ? static_cast<size_t>(len) : 0),
              .revision = kvEntry_Revision(entry.get())});
  }

  absl::StatusOr<uint64_t> Create(std::string_view value) override {
    uint64_t revision = 0;
    const natsStatus s = kvStore_Create(&revision, kv_, kKey, value.data(),
                                        static_cast<int>(value.size()));
    if (s == NATS_OK) return revision;
    const std::string text = NatsErrorText(s);
    // The bucket answers a create of a key that exists with its fence
    // error; when the text does not say so, the value read back does.
    absl::StatusOr<std::optional<Entry>> current = Get();
    if (text.find(kWrongLastSequenceText) != std::string::npos ||
        (current.ok() && current->has_value())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the lease in bucket ", bucket_, " was already written",
          current.ok() && current->has_value()
              ? absl::StrCat(" (revision ", (*current)->revision, ")")
              : std::string()));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot write the lease in bucket ", bucket_, ": ", text));
  }

  absl::StatusOr<uint64_t> Update(std::string_view value,
                                  uint64_t expected) override {
    uint64_t revision = 0;
    const natsStatus s =
        kvStore_Update(&revision, kv_, kKey, value.data(),
                       static_cast<int>(value.size()), expected);
    if (s == NATS_OK) return revision;
    const std::string text = NatsErrorText(s);
    absl::StatusOr<std::optional<Entry>> current = Get();
    const uint64_t found =
        current.ok() && current->has_value() ? (*current)->revision : 0;
    if (text.find(kWrongLastSequenceText) != std::string::npos ||
        (current.ok() && found != expected)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the lease in bucket ", bucket_, " is at revision ",
                       found, ", not ", expected));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot write the lease in bucket ", bucket_, ": ", text));
  }

 private:
  const std::shared_ptr<NatsClient> client_;
  const std::string bucket_;
  kvStore* const kv_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<LeaseRegister>> OpenJetStreamLeaseRegister(
    std::shared_ptr<NatsClient> client, const EventLogConfig& config) {
  const std::string bucket = config.stream + "_LEASE";
  kvStore* kv = nullptr;
  natsStatus s = js_KeyValue(&kv, client->jetstream(), bucket.c_str());
  if (s == NATS_NOT_FOUND) {
    kvConfig cfg;
    kvConfig_Init(&cfg);
    cfg.Bucket = bucket.c_str();
    cfg.History = 1;
    cfg.StorageType = js_FileStorage;
    cfg.Replicas = static_cast<int>(config.replicas);
    s = js_CreateKeyValue(&kv, client->jetstream(), &cfg);
    if (s == NATS_OK) {
      spdlog::info("created snapshot lease bucket {} replicas={}", bucket,
                   config.replicas);
    } else if (s != NATS_TIMEOUT && s != NATS_NO_RESPONDERS &&
               s != NATS_CONNECTION_CLOSED) {
      const std::string text = NatsErrorText(s);
      kvStore_Destroy(kv);
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create the key-value bucket ", bucket, " (", kNatsStreamVar,
          ", ", kNatsReplicasVar, "=", config.replicas, "): ", text));
    }
  }
  if (s != NATS_OK) {
    kvStore_Destroy(kv);
    return NatsUnavailable(
        absl::StrCat("cannot open the key-value bucket ", bucket), s,
        static_cast<jsErrCode>(0));
  }
  return std::unique_ptr<LeaseRegister>(
      std::make_unique<JetStreamLeaseRegister>(std::move(client), bucket, kv));
}

}  // namespace kvindexer::fleet
