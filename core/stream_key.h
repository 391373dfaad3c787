// StreamKey: what the host keys its per-stream state by, and the backend id
// that stands for it (docs/contract.md, "Streams").
//
// A stream is (namespace, worker_id, dp_rank). The legacy key ("", id, 0) is
// the worker a seed-era client names; its backend id is the worker id's bytes
// unchanged, so that a seed-era deployment's backend ids, fleet subjects and
// files look exactly as they always did. Any other key's backend id is byte
// 0xFF, then the namespace and the worker id, each as a u32 big-endian
// length and its bytes, then dp_rank as a u32 big-endian. 0xFF never occurs
// in UTF-8 and proto3 strings are UTF-8, so no worker id equals an encoded
// key, and the encoding is injective. Encoded ids go to the backend (which
// treats ids as opaque bytes) and never into files or APIs, which carry the
// three fields.
#ifndef KVINDEXER_CORE_STREAM_KEY_H_
#define KVINDEXER_CORE_STREAM_KEY_H_

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "kv_indexer.pb.h"

namespace kvindexer {

struct StreamKey {
  std::string ns;
  std::string worker_id;
  uint32_t dp_rank = 0;

  bool legacy() const { return ns.empty() && dp_rank == 0; }
  // Bytewise by namespace, then worker id, then rank.
  auto operator<=>(const StreamKey&) const = default;
  bool operator==(const StreamKey&) const = default;
};

// The backend id of `key` (see above).
std::string EncodeStreamKey(const StreamKey& key);
// Whether `id` is an encoded non-legacy key rather than a worker id.
inline bool IsEncodedStreamKey(std::string_view id) {
  return !id.empty() && static_cast<unsigned char>(id[0]) == 0xFF;
}
// The key a backend id stands for: any id that is not a well-formed
// encoding is a legacy key with that worker id.
StreamKey DecodeStreamKey(std::string_view id);

// The worker id part of a backend id, as a view into it: the id itself for
// a legacy key.
std::string_view WorkerIdOf(std::string_view id);

// Orders backend ids by the keys they stand for, bytewise by namespace,
// then worker id, then rank (the order of StreamKey), without decoding
// them into strings. Ids of equal keys (a malformed encoding that decodes
// as a legacy key) are ordered by their bytes, so that only equal ids are
// equivalent. For ordered containers keyed by backend id.
struct StreamIdOrder {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const;
};

// The key of a StreamId message.
StreamKey StreamKeyOf(const ::kv_indexer::v1::StreamId& id);
// Fills `out` with `key`'s three fields.
void SetStreamId(const StreamKey& key, ::kv_indexer::v1::StreamId* out);
// "<namespace>/<worker_id>/<dp_rank>", for messages and logs.
std::string StreamKeyText(const StreamKey& key);

// Files and APIs carry a stream's fields, never its backend id: a message
// with `worker_id` and an optional `stream_id` (absent: the legacy key)
// names the stream whose backend id is `id`.
template <typename Message>
void SetStreamFields(std::string_view id, Message* message) {
  const StreamKey key = DecodeStreamKey(id);
  message->set_worker_id(key.worker_id);
  if (!key.legacy()) SetStreamId(key, message->mutable_stream_id());
}
// The backend id of the stream such a message names.
template <typename Message>
std::string BackendIdOf(const Message& message) {
  if (!message.has_stream_id()) return message.worker_id();
  return EncodeStreamKey(StreamKeyOf(message.stream_id()));
}

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_STREAM_KEY_H_
