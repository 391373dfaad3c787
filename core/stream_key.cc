#include "core/stream_key.h"

#include "absl/strings/str_cat.h"

namespace kvindexer {
namespace {

constexpr char kMarker = static_cast<char>(0xFF);

void PutU32(uint32_t value, std::string* out) {
  out->push_back(static_cast<char>(value >> 24));
  out->push_back(static_cast<char>(value >> 16));
  out->push_back(static_cast<char>(value >> 8));
  out->push_back(static_cast<char>(value));
}

bool TakeU32(std::string_view* in, uint32_t* value) {
  if (in->size() < 4) return false;
  const auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<unsigned char>((*in)[i]));
  };
  *value = byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
  in->remove_prefix(4);
  return true;
}

bool TakeBytes(std::string_view* in, std::string* out) {
  uint32_t size = 0;
  if (!TakeU32(in, &size) || in->size() < size) return false;
  out->assign(in->data(), size);
  in->remove_prefix(size);
  return true;
}

}  // namespace

std::string EncodeStreamKey(const StreamKey& key) {
  if (key.legacy()) return key.worker_id;
  std::string out;
  out.reserve(1 + 4 + key.ns.size() + 4 + key.worker_id.size() + 4);
  out.push_back(kMarker);
  PutU32(static_cast<uint32_t>(key.ns.size()), &out);
  out.append(key.ns);
  PutU32(static_cast<uint32_t>(key.worker_id.size()), &out);
  out.append(key.worker_id);
  PutU32(key.dp_rank, &out);
  return out;
}

StreamKey DecodeStreamKey(std::string_view id) {
  if (IsEncodedStreamKey(id)) {
    std::string_view rest = id.substr(1);
    StreamKey key;
    if (TakeBytes(&rest, &key.ns) && TakeBytes(&rest, &key.worker_id) &&
        TakeU32(&rest, &key.dp_rank) && rest.empty() && !key.legacy()) {
      return key;
    }
  }
  return StreamKey{"", std::string(id), 0};
}

std::string_view WorkerIdOf(std::string_view id) {
  if (!IsEncodedStreamKey(id)) return id;
  std::string_view rest = id.substr(1);
  uint32_t size = 0;
  if (!TakeU32(&rest, &size) || rest.size() < size) return id;
  rest.remove_prefix(size);
  if (!TakeU32(&rest, &size) || rest.size() < size) return id;
  return rest.substr(0, size);
}

namespace {

// The three parts of a backend id, as views into it.
struct StreamKeyView {
  std::string_view ns;
  std::string_view worker_id;
  uint32_t dp_rank = 0;
};

bool TakeView(std::string_view* in, std::string_view* out) {
  uint32_t size = 0;
  if (!TakeU32(in, &size) || in->size() < size) return false;
  *out = in->substr(0, size);
  in->remove_prefix(size);
  return true;
}

// As DecodeStreamKey, into views.
StreamKeyView DecodeView(std::string_view id) {
  if (IsEncodedStreamKey(id)) {
    std::string_view rest = id.substr(1);
    StreamKeyView key;
    if (TakeView(&rest, &key.ns) && TakeView(&rest, &key.worker_id) &&
        TakeU32(&rest, &key.dp_rank) && rest.empty() &&
        !(key.ns.empty() && key.dp_rank == 0)) {
      return key;
    }
  }
  return StreamKeyView{{}, id, 0};
}

}  // namespace

bool StreamIdOrder::operator()(std::string_view a, std::string_view b) const {
  const StreamKeyView ka = DecodeView(a);
  const StreamKeyView kb = DecodeView(b);
  if (const int c = ka.ns.compare(kb.ns); c != 0) return c < 0;
  if (const int c = ka.worker_id.compare(kb.worker_id); c != 0) return c < 0;
  if (ka.dp_rank != kb.dp_rank) return ka.dp_rank < kb.dp_rank;
  return a < b;
}

StreamKey StreamKeyOf(const ::kv_indexer::v1::StreamId& id) {
  return StreamKey{id.namespace_(), id.worker_id(), id.dp_rank()};
}

void SetStreamId(const StreamKey& key, ::kv_indexer::v1::StreamId* out) {
  out->set_namespace_(key.ns);
  out->set_worker_id(key.worker_id);
  out->set_dp_rank(key.dp_rank);
}

std::string StreamKeyText(const StreamKey& key) {
  return absl::StrCat(key.ns, "/", key.worker_id, "/", key.dp_rank);
}

}  // namespace kvindexer
