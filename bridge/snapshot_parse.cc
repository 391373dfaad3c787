#include "bridge/snapshot_parse.h"

#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include <msgpack.hpp>

#include "absl/strings/str_cat.h"

namespace kvindexer::bridge {
namespace {

absl::Status Bad(absl::string_view why) {
  return absl::InvalidArgumentError(why);
}

// Unpacks one msgpack value; `what` names the payload in the error.
absl::Status Unpack(absl::string_view payload, absl::string_view what,
                    msgpack::object_handle* handle) {
  try {
    *handle = msgpack::unpack(payload.data(), payload.size());
  } catch (const std::exception& e) {
    return Bad(absl::StrCat(what, " is not msgpack: ", e.what()));
  }
  return absl::OkStatus();
}

bool AsUnsigned(const msgpack::object& o, uint64_t* out) {
  if (o.type != msgpack::type::POSITIVE_INTEGER) return false;
  *out = o.via.u64;
  return true;
}

bool AsUint32(const msgpack::object& o, uint32_t* out) {
  uint64_t value = 0;
  if (!AsUnsigned(o, &value) || value > std::numeric_limits<uint32_t>::max()) {
    return false;
  }
  *out = static_cast<uint32_t>(value);
  return true;
}

bool AsString(const msgpack::object& o, std::string* out) {
  if (o.type != msgpack::type::STR) return false;
  out->assign(o.via.str.ptr, o.via.str.size);
  return true;
}

bool AsHash(const msgpack::object& o, int64_t* out) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) {
    *out = static_cast<int64_t>(o.via.u64);
    return true;
  }
  if (o.type == msgpack::type::NEGATIVE_INTEGER) {
    *out = o.via.i64;
    return true;
  }
  return false;
}

absl::string_view KeyOf(const msgpack::object& key) {
  if (key.type != msgpack::type::STR) return {};
  return {key.via.str.ptr, key.via.str.size};
}

// The checks both header versions share, after the fields are read.
// `rank_key` is the field name the rank came from, for the message.
absl::Status CheckFences(const SnapshotHeader& h, absl::string_view rank_key,
                         uint64_t rank, std::optional<uint32_t> expected_rank) {
  const PublisherSnapshot& s = h.snapshot;
  if (s.epoch.empty()) return Bad("header epoch is empty");
  if (expected_rank && rank != *expected_rank) {
    return Bad(absl::StrCat(rank_key, " ", rank,
                            " does not match the configured DP rank ",
                            *expected_rank));
  }
  if (s.barrier_seq == ~uint64_t{0} || s.resume_seq != s.barrier_seq + 1) {
    return Bad(absl::StrCat("resume_seq ", s.resume_seq,
                            " is not barrier_seq + 1 (barrier_seq ",
                            s.barrier_seq, ")"));
  }
  if (s.barrier_id.empty()) return Bad("header barrier_id is empty");
  if (h.record_count > kMaxSnapshotRecords) {
    return Bad(absl::StrCat("record_count ", h.record_count,
                            " exceeds the cap of ", kMaxSnapshotRecords));
  }
  return absl::OkStatus();
}

// Unpacks a chunk of either protocol: an array whose records still fit the
// header's record_count after the `records` received so far.
absl::Status UnpackChunk(absl::string_view payload, uint64_t records,
                         uint64_t record_count, msgpack::object_handle* handle,
                         std::span<const msgpack::object>* out) {
  if (absl::Status s = Unpack(payload, "chunk", handle); !s.ok()) return s;
  const msgpack::object& root = handle->get();
  if (root.type != msgpack::type::ARRAY) return Bad("chunk is not an array");
  if (records + root.via.array.size > record_count) {
    return Bad(absl::StrCat("more records than the header's record_count ",
                            record_count));
  }
  *out =
      std::span<const msgpack::object>(root.via.array.ptr, root.via.array.size);
  return absl::OkStatus();
}

// --- snapshot-v2 header ----------------------------------------------------

// The values of the v2 header keys the bridge reads, null when absent.
struct V2HeaderKeys {
  const msgpack::object* version = nullptr;
  const msgpack::object* worker_epoch = nullptr;
  const msgpack::object* epoch = nullptr;
  const msgpack::object* dp_rank = nullptr;
  const msgpack::object* replica_rank = nullptr;
  const msgpack::object* barrier_seq = nullptr;
  const msgpack::object* resume_seq = nullptr;
  const msgpack::object* barrier_id = nullptr;
  const msgpack::object* record_count = nullptr;
  // Identity and schema (SnapshotHeaderFields).
  const msgpack::object* stream_namespace = nullptr;
  const msgpack::object* worker_id = nullptr;
  const msgpack::object* model = nullptr;
  const msgpack::object* hash_schema_version = nullptr;
  const msgpack::object* page_size = nullptr;
  const msgpack::object* is_bigram = nullptr;
  const msgpack::object* worker_generation = nullptr;
};

V2HeaderKeys CollectV2HeaderKeys(const msgpack::object_map& map) {
  V2HeaderKeys keys;
  for (const msgpack::object_kv& kv : std::span(map.ptr, map.size)) {
    const absl::string_view key = KeyOf(kv.key);
    const msgpack::object* value = &kv.val;
    if (key == "version") keys.version = value;
    if (key == "worker_epoch") keys.worker_epoch = value;
    if (key == "epoch") keys.epoch = value;
    if (key == "dp_rank") keys.dp_rank = value;
    if (key == "replica_rank") keys.replica_rank = value;
    if (key == "barrier_seq") keys.barrier_seq = value;
    if (key == "resume_seq") keys.resume_seq = value;
    if (key == "barrier_id") keys.barrier_id = value;
    if (key == "record_count") keys.record_count = value;
    if (key == "namespace") keys.stream_namespace = value;
    if (key == "worker_id") keys.worker_id = value;
    if (key == "model") keys.model = value;
    if (key == "hash_schema_version") keys.hash_schema_version = value;
    if (key == "page_size") keys.page_size = value;
    if (key == "is_bigram") keys.is_bigram = value;
    if (key == "worker_generation") keys.worker_generation = value;
  }
  return keys;
}

// Reads the optional identity and schema keys. A key of the wrong type is
// named in `unreadable` rather than failing the parse: whoever compares
// the fields decides (single-worker mode ignores them).
SnapshotHeaderFields ReadHeaderFields(const V2HeaderKeys& keys) {
  SnapshotHeaderFields fields;
  const auto text = [&fields](const msgpack::object* value,
                              absl::string_view key,
                              std::optional<std::string>* out) {
    if (value == nullptr) return;
    std::string read;
    if (AsString(*value, &read)) {
      *out = std::move(read);
    } else {
      fields.unreadable.emplace_back(key);
    }
  };
  const auto number = [&fields](const msgpack::object* value,
                                absl::string_view key,
                                std::optional<uint32_t>* out) {
    if (value == nullptr) return;
    uint32_t read = 0;
    if (AsUint32(*value, &read)) {
      *out = read;
    } else {
      fields.unreadable.emplace_back(key);
    }
  };
  text(keys.stream_namespace, "namespace", &fields.stream_namespace);
  text(keys.worker_id, "worker_id", &fields.worker_id);
  text(keys.model, "model", &fields.model);
  number(keys.hash_schema_version, "hash_schema_version",
         &fields.hash_schema_version);
  number(keys.page_size, "page_size", &fields.page_size);
  if (keys.is_bigram != nullptr) {
    if (keys.is_bigram->type == msgpack::type::BOOLEAN) {
      fields.is_bigram = keys.is_bigram->via.boolean;
    } else {
      fields.unreadable.emplace_back("is_bigram");
    }
  }
  // A generation is a string; one upstream variant sends an integer, read
  // as its decimal form.
  if (uint64_t numeric = 0; keys.worker_generation != nullptr &&
                            AsUnsigned(*keys.worker_generation, &numeric)) {
    fields.worker_generation = absl::StrCat(numeric);
  } else {
    text(keys.worker_generation, "worker_generation",
         &fields.worker_generation);
  }
  return fields;
}

absl::Status ReadUnsigned(const msgpack::object* value, absl::string_view key,
                          uint64_t* out) {
  if (value == nullptr) return Bad(absl::StrCat("header has no ", key));
  if (!AsUnsigned(*value, out)) {
    return Bad(absl::StrCat("header ", key, " is not an unsigned integer"));
  }
  return absl::OkStatus();
}

absl::Status ReadString(const msgpack::object* value, absl::string_view key,
                        std::string* out) {
  if (value == nullptr) return Bad(absl::StrCat("header has no ", key));
  if (!AsString(*value, out)) {
    return Bad(absl::StrCat("header ", key, " is not a string"));
  }
  return absl::OkStatus();
}

// A field upstream variants spell two ways: `preferred` is read when
// present, else `other`; when both are present they must agree.
const msgpack::object* EitherSpelling(const msgpack::object* preferred,
                                      absl::string_view preferred_key,
                                      const msgpack::object* other,
                                      absl::string_view other_key,
                                      absl::Status* status) {
  if (preferred != nullptr && other != nullptr && !(*preferred == *other)) {
    *status = Bad(absl::StrCat("header ", preferred_key, " and ", other_key,
                               " disagree"));
  }
  return preferred != nullptr ? preferred : other;
}

// --- snapshot-v2 records ---------------------------------------------------

absl::Status ParseV2Record(const msgpack::object& record,
                           SnapshotBlock* block) {
  if (record.type != msgpack::type::MAP) return Bad("a record is not a map");
  bool has_hash = false;
  bool has_tier = false;
  bool has_mask = false;
  bool has_size = false;
  for (const msgpack::object_kv& kv :
       std::span(record.via.map.ptr, record.via.map.size)) {
    const absl::string_view key = KeyOf(kv.key);
    if (key == "block_hash") {
      if (!AsHash(kv.val, &block->hash)) {
        return Bad("a record's block_hash is not an integer");
      }
      has_hash = true;
    } else if (key == "parent_block_hash") {
      int64_t parent = 0;
      if (kv.val.type != msgpack::type::NIL && !AsHash(kv.val, &parent)) {
        return Bad(
            "a record's parent_block_hash is neither nil nor an integer");
      }
    } else if (key == "tier") {
      uint64_t tier = 0;
      if (!AsUnsigned(kv.val, &tier) || tier < 1 || tier > 3) {
        return Bad(
            "a record's tier is not 1 (GPU), 2 (CPU_PINNED) or 3 (DISK)");
      }
      block->tier = static_cast<Tier>(tier);
      has_tier = true;
    } else if (key == "component_mask") {
      if (!AsUint32(kv.val, &block->component_mask) ||
          block->component_mask == 0) {
        return Bad("a record's component_mask is not a non-zero uint32");
      }
      has_mask = true;
    } else if (key == "block_size") {
      if (!AsUint32(kv.val, &block->block_size) || block->block_size == 0) {
        return Bad("a record's block_size is not a non-zero uint32");
      }
      has_size = true;
    }
  }
  if (!has_hash) return Bad("a record has no block_hash");
  if (!has_tier) return Bad("a record has no tier");
  if (!has_mask) return Bad("a record has no component_mask");
  if (!has_size) return Bad("a record has no block_size");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SnapshotHeader> ParseSnapshotV1Header(absl::string_view payload,
                                                     uint32_t expected_rank) {
  msgpack::object_handle handle;
  if (absl::Status s = Unpack(payload, "header", &handle); !s.ok()) return s;
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::ARRAY || root.via.array.size != 7) {
    return Bad(
        "header is not an array of 7 fields [version, epoch, "
        "replica_rank, resume_seq, barrier_seq, barrier_id, "
        "record_count]");
  }
  const msgpack::object* f = root.via.array.ptr;
  SnapshotHeader h;
  h.snapshot.version = 1;
  uint64_t version = 0;
  uint64_t rank = 0;
  if (!AsUnsigned(f[0], &version)) {
    return Bad("header version is not an unsigned integer");
  }
  if (version != 1) {
    return Bad(absl::StrCat("unsupported version ", version, "; expected 1"));
  }
  if (!AsString(f[1], &h.snapshot.epoch)) {
    return Bad("header epoch is not a string");
  }
  if (!AsUnsigned(f[2], &rank)) {
    return Bad("header replica_rank is not an unsigned integer");
  }
  if (!AsUnsigned(f[3], &h.snapshot.resume_seq)) {
    return Bad("header resume_seq is not an unsigned integer");
  }
  if (!AsUnsigned(f[4], &h.snapshot.barrier_seq)) {
    return Bad("header barrier_seq is not an unsigned integer");
  }
  if (!AsString(f[5], &h.snapshot.barrier_id)) {
    return Bad("header barrier_id is not a string");
  }
  if (!AsUnsigned(f[6], &h.record_count)) {
    return Bad("header record_count is not an unsigned integer");
  }
  if (absl::Status s = CheckFences(h, "replica_rank", rank, expected_rank);
      !s.ok()) {
    return s;
  }
  return h;
}

absl::StatusOr<SnapshotHeader> ParseSnapshotV2Header(
    absl::string_view payload, std::optional<uint32_t> expected_rank) {
  msgpack::object_handle handle;
  if (absl::Status s = Unpack(payload, "header", &handle); !s.ok()) return s;
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::MAP) return Bad("header is not a map");
  const V2HeaderKeys keys = CollectV2HeaderKeys(root.via.map);

  SnapshotHeader h;
  h.snapshot.version = 2;
  uint64_t version = 0;
  if (absl::Status s = ReadUnsigned(keys.version, "version", &version);
      !s.ok()) {
    return s;
  }
  if (version != 2) {
    return Bad(absl::StrCat("unsupported version ", version, "; expected 2"));
  }
  absl::Status spelling = absl::OkStatus();
  const msgpack::object* epoch = EitherSpelling(
      keys.worker_epoch, "worker_epoch", keys.epoch, "epoch", &spelling);
  const msgpack::object* rank_value = EitherSpelling(
      keys.dp_rank, "dp_rank", keys.replica_rank, "replica_rank", &spelling);
  if (!spelling.ok()) return spelling;
  // Named as sent; when neither spelling is, both.
  const absl::string_view epoch_key =
      keys.worker_epoch != nullptr ? "worker_epoch"
      : keys.epoch != nullptr      ? "epoch"
                                   : "worker_epoch (or epoch)";
  const absl::string_view rank_key = keys.dp_rank != nullptr ? "dp_rank"
                                     : keys.replica_rank != nullptr
                                         ? "replica_rank"
                                         : "dp_rank (or replica_rank)";
  uint64_t rank = 0;
  for (absl::Status s : {
           ReadString(epoch, epoch_key, &h.snapshot.epoch),
           ReadUnsigned(rank_value, rank_key, &rank),
           ReadUnsigned(keys.barrier_seq, "barrier_seq",
                        &h.snapshot.barrier_seq),
           ReadUnsigned(keys.resume_seq, "resume_seq", &h.snapshot.resume_seq),
           ReadString(keys.barrier_id, "barrier_id", &h.snapshot.barrier_id),
           ReadUnsigned(keys.record_count, "record_count", &h.record_count),
       }) {
    if (!s.ok()) return s;
  }
  if (absl::Status s = CheckFences(h, rank_key, rank, expected_rank); !s.ok()) {
    return s;
  }
  h.snapshot.fields = ReadHeaderFields(keys);
  if (rank <= std::numeric_limits<uint32_t>::max()) {
    h.snapshot.fields.dp_rank = static_cast<uint32_t>(rank);
  } else {
    h.snapshot.fields.unreadable.emplace_back(rank_key);
  }
  return h;
}

absl::Status AppendSnapshotV1Chunk(absl::string_view payload,
                                   uint64_t record_count, uint64_t* records,
                                   std::vector<int64_t>* hashes) {
  msgpack::object_handle handle;
  std::span<const msgpack::object> chunk;
  if (absl::Status s =
          UnpackChunk(payload, *records, record_count, &handle, &chunk);
      !s.ok()) {
    return s;
  }
  for (const msgpack::object& record : chunk) {
    if (record.type != msgpack::type::ARRAY || record.via.array.size != 2) {
      return Bad("a record is not [parent_block_hash, [block_hash]]");
    }
    const msgpack::object& parent = record.via.array.ptr[0];
    const msgpack::object& list = record.via.array.ptr[1];
    int64_t hash = 0;
    if (parent.type != msgpack::type::NIL && !AsHash(parent, &hash)) {
      return Bad("a record's parent_block_hash is neither nil nor an integer");
    }
    if (list.type != msgpack::type::ARRAY) {
      return Bad("a record's block hashes are not an array");
    }
    if (list.via.array.size == 0) return Bad("a record has no block hash");
    if (list.via.array.size > kMaxSnapshotHashesPerRecord) {
      return Bad(absl::StrCat("a record has ", list.via.array.size,
                              " block hashes; the cap is ",
                              kMaxSnapshotHashesPerRecord));
    }
    for (const msgpack::object& h :
         std::span(list.via.array.ptr, list.via.array.size)) {
      if (!AsHash(h, &hash)) return Bad("a block hash is not an integer");
      hashes->push_back(hash);
    }
    ++*records;
  }
  return absl::OkStatus();
}

absl::Status AppendSnapshotV2Chunk(absl::string_view payload,
                                   uint64_t record_count, uint64_t* records,
                                   std::vector<SnapshotBlock>* blocks) {
  msgpack::object_handle handle;
  std::span<const msgpack::object> chunk;
  if (absl::Status s =
          UnpackChunk(payload, *records, record_count, &handle, &chunk);
      !s.ok()) {
    return s;
  }
  for (const msgpack::object& record : chunk) {
    SnapshotBlock block;
    if (absl::Status s = ParseV2Record(record, &block); !s.ok()) {
      return Bad(absl::StrCat("record ", *records, ": ", s.message()));
    }
    blocks->push_back(block);
    ++*records;
  }
  return absl::OkStatus();
}

}  // namespace kvindexer::bridge
