#include "bridge/workers_json.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bridge/kv_events_descriptor.h"
#include "common/absl_view.h"
#include "common/env.h"

namespace kvindexer::bridge {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::Status Invalid(std::string_view reason) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid ", kWorkersJsonVariable, ": ", AbslView(reason)));
}

std::string Where(size_t index, std::string_view key) {
  return absl::StrCat("entry ", index, " key \"", AbslView(key), "\"");
}

// Reads the entry's fields one key at a time; the first error wins.
class EntryReader {
 public:
  EntryReader(const Struct& object, size_t index)
      : object_(object), index_(index) {}

  const Value* Find(std::string_view key) {
    seen_.emplace(key);
    auto it = object_.fields().find(std::string(key));
    return it == object_.fields().end() ? nullptr : &it->second;
  }

  void String(std::string_view key, bool required, std::string* out) {
    const Value* value = Find(key);
    if (value == nullptr) {
      if (required)
        Fail(absl::StrCat("entry ", index_, " lacks \"", AbslView(key), "\""));
      return;
    }
    if (value->kind_case() != Value::kStringValue) {
      Fail(absl::StrCat(Where(index_, key), " must be a string"));
      return;
    }
    if (required && value->string_value().empty()) {
      Fail(absl::StrCat(Where(index_, key), " must not be empty"));
      return;
    }
    *out = value->string_value();
  }

  void NullableString(std::string_view key, std::string* out) {
    const Value* value = Find(key);
    if (value == nullptr || value->kind_case() == Value::kNullValue) return;
    if (value->kind_case() != Value::kStringValue) {
      Fail(absl::StrCat(Where(index_, key), " must be a string or null"));
      return;
    }
    *out = value->string_value();
  }

  // Returns whether the key was present.
  bool Uint32(std::string_view key, uint32_t min, uint32_t max, uint32_t* out) {
    const Value* value = Find(key);
    if (value == nullptr) return false;
    const double number = value->number_value();
    if (value->kind_case() != Value::kNumberValue ||
        std::floor(number) != number || number < min || number > max) {
      Fail(absl::StrCat(Where(index_, key), " must be an integer in ", min,
                        "..", max));
      return true;
    }
    *out = static_cast<uint32_t>(number);
    return true;
  }

  void Bool(std::string_view key, bool* out) {
    const Value* value = Find(key);
    if (value == nullptr) return;
    if (value->kind_case() != Value::kBoolValue) {
      Fail(absl::StrCat(Where(index_, key), " must be true or false"));
      return;
    }
    *out = value->bool_value();
  }

  void Fail(std::string reason) {
    if (error_.empty()) error_ = std::move(reason);
  }

  // Keys of the object that no reader asked for.
  std::vector<std::string> UnknownKeys() const {
    std::vector<std::string> unknown;
    for (const auto& [key, value] : object_.fields()) {
      if (!seen_.contains(key)) unknown.push_back(key);
    }
    std::sort(unknown.begin(), unknown.end());
    return unknown;
  }

  const std::string& error() const { return error_; }

 private:
  const Struct& object_;
  const size_t index_;
  std::set<std::string, std::less<>> seen_;
  std::string error_;
};

constexpr uint32_t kU32Max = 0xffffffffu;

absl::StatusOr<WorkerEntry> ReadEntry(const Struct& object, size_t index,
                                      std::vector<std::string>* warnings) {
  WorkerEntry entry;
  EntryReader in(object, index);
  in.Bool("discover", &entry.discover);
  in.Bool("all_dp_ranks", &entry.all_dp_ranks);
  in.String("worker_id", /*required=*/true, &entry.worker_id);
  in.String("worker_address", /*required=*/true, &entry.worker_address);
  in.String("event_endpoint", /*required=*/!entry.discover,
            &entry.event_endpoint);
  in.String("snapshot_endpoint", /*required=*/false, &entry.snapshot_endpoint);
  in.Uint32("snapshot_protocol_version", 1, 2,
            &entry.snapshot_protocol_version);
  in.NullableString("replay_endpoint", &entry.replay_endpoint);
  in.Uint32("replay_protocol", 1, 2, &entry.replay_protocol);
  in.String("namespace", /*required=*/false, &entry.stream_namespace);
  in.String("event_topic", /*required=*/false, &entry.event_topic);
  in.String("model", /*required=*/false, &entry.model);
  in.Uint32("dp_rank", 0, kU32Max, &entry.dp_rank);
  in.Uint32("hash_schema_version", 0, kU32Max, &entry.hash_schema_version);
  entry.page_size_set = in.Uint32("page_size", 1, kU32Max, &entry.page_size);
  in.Bool("is_bigram", &entry.is_bigram);
  if (entry.discover && in.error().empty()) {
    if (absl::StatusOr<WorkerUrl> url = ParseWorkerUrl(entry.worker_address);
        !url.ok()) {
      in.Fail(absl::StrCat(
          Where(index, "worker_address"), ": ", url.status().message(),
          "; \"discover\" reads <worker_address>/server_info"));
    }
  }
  if (entry.all_dp_ranks && !entry.discover) {
    in.Fail(absl::StrCat(Where(index, "all_dp_ranks"),
                         " needs \"discover\": true (the ranks come from "
                         "/server_info)"));
  }
  if (entry.all_dp_ranks) {
    // Each rank's publisher binds its own ports (SGLang offsets every
    // endpoint by the rank), so one endpoint cannot serve every rank.
    for (const auto& [key, value] :
         {std::pair<const char*, const std::string*>{"event_endpoint",
                                                     &entry.event_endpoint},
          {"replay_endpoint", &entry.replay_endpoint},
          {"snapshot_endpoint", &entry.snapshot_endpoint}}) {
      if (value->empty()) continue;
      in.Fail(absl::StrCat(Where(index, key),
                           " cannot be used with \"all_dp_ranks\" (each "
                           "rank publishes on its own port; leave it out)"));
    }
  }
  if (!in.error().empty()) return Invalid(in.error());
  for (const std::string& key : in.UnknownKeys()) {
    warnings->push_back(absl::StrCat(kWorkersJsonVariable, ": entry ", index,
                                     " has unknown key ", QuoteEnvValue(key),
                                     "; ignored"));
  }
  return entry;
}

}  // namespace

absl::StatusOr<WorkersList> ParseWorkersJson(std::string_view text) {
  if (text.size() > kMaxWorkersJsonBytes) {
    return Invalid(absl::StrCat("the value has ", text.size(),
                                " bytes; at most ", kMaxWorkersJsonBytes,
                                " are accepted"));
  }
  Value root;
  // protobuf's JSON reader: strict RFC 8259 syntax with a nesting limit.
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(text.data(), text.size()), &root);
  if (!parsed.ok()) {
    return Invalid(absl::StrCat(
        "not JSON (",
        std::string(parsed.message().data(), parsed.message().size()), ")"));
  }
  if (root.kind_case() != Value::kListValue) {
    return Invalid("the value must be a JSON array of objects");
  }
  if (root.list_value().values_size() == 0) {
    return Invalid("the array is empty; list at least one worker");
  }
  WorkersList list;
  std::set<std::tuple<std::string, std::string, uint32_t>> keys;
  for (int i = 0; i < root.list_value().values_size(); ++i) {
    const Value& item = root.list_value().values(i);
    const size_t index = static_cast<size_t>(i);
    if (item.kind_case() != Value::kStructValue) {
      return Invalid(absl::StrCat("entry ", index, " is not an object"));
    }
    absl::StatusOr<WorkerEntry> entry =
        ReadEntry(item.struct_value(), index, &list.warnings);
    if (!entry.ok()) return entry.status();
    if (!keys.emplace(entry->stream_namespace, entry->worker_id, entry->dp_rank)
             .second) {
      return Invalid(absl::StrCat("entry ", index, " repeats the stream key ",
                                  DescribeStreamKey(*entry),
                                  " (namespace, worker_id, dp_rank)"));
    }
    list.entries.push_back(*std::move(entry));
  }
  return list;
}

std::string DescribeStreamKey(const WorkerEntry& entry) {
  return absl::StrCat(QuoteEnvValue(entry.stream_namespace), "/",
                      QuoteEnvValue(entry.worker_id), "/", entry.dp_rank);
}

}  // namespace kvindexer::bridge
