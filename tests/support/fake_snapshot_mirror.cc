#include "tests/support/fake_snapshot_mirror.h"

#include <cctype>
#include <exception>
#include <span>
#include <string>

#include <msgpack.hpp>

namespace kvindexer::bridge::testing {
namespace {

std::optional<int64_t> AsInt(const msgpack::object& o) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) {
    return static_cast<int64_t>(o.via.u64);
  }
  if (o.type == msgpack::type::NEGATIVE_INTEGER) return o.via.i64;
  return std::nullopt;
}

std::optional<std::string_view> AsStr(const msgpack::object& o) {
  if (o.type != msgpack::type::STR) return std::nullopt;
  return std::string_view(o.via.str.ptr, o.via.str.size);
}

std::span<const msgpack::object> Items(const msgpack::object& o) {
  if (o.type != msgpack::type::ARRAY) return {};
  return {o.via.array.ptr, o.via.array.size};
}

uint32_t LabelBit(std::string_view label) {
  std::string lower(label);
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  if (lower == "full") return 1;
  if (lower == "swa") return 2;
  if (lower == "mamba") return 4;
  return 0;
}

// The component mask of a store's component value (slot 7 or its key):
// labels OR-ed; FULL when there are none (nil, metadata, unknown labels).
uint32_t MaskOf(const msgpack::object* components) {
  uint32_t mask = 0;
  if (components != nullptr) {
    if (auto label = AsStr(*components)) mask = LabelBit(*label);
    for (const msgpack::object& item : Items(*components)) {
      if (auto label = AsStr(item)) mask |= LabelBit(*label);
    }
  }
  return mask == 0 ? 1 : mask;
}

std::optional<int64_t> TierOf(std::string_view medium) {
  if (medium == "GPU") return 1;
  if (medium == "CPU_PINNED") return 2;
  if (medium == "DISK") return 3;
  return std::nullopt;
}

}  // namespace

template <typename Key, typename Value>
void SnapshotMirror::Ordered<Key, Value>::Set(const Key& key, Value value) {
  auto [it, inserted] = index_.try_emplace(key, next_);
  if (inserted) {
    entries_.emplace(next_++, std::make_pair(key, std::move(value)));
  } else {
    entries_.at(it->second).second = std::move(value);
  }
}

template <typename Key, typename Value>
void SnapshotMirror::Ordered<Key, Value>::Erase(const Key& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  entries_.erase(it->second);
  index_.erase(it);
}

template <typename Key, typename Value>
void SnapshotMirror::Ordered<Key, Value>::Clear() {
  index_.clear();
  entries_.clear();
}

void SnapshotMirror::Apply(std::string_view payload) {
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(payload.data(), payload.size());
  } catch (const std::exception&) {
    return;  // not a batch (tests publish arbitrary bytes too)
  }
  const std::span<const msgpack::object> root = Items(handle.get());
  if (root.size() < 2) return;
  for (const msgpack::object& raw : Items(root[1])) {
    Event event;
    std::optional<std::string_view> tag;
    const msgpack::object* hashes = nullptr;
    const msgpack::object* parent = nullptr;
    const msgpack::object* size = nullptr;
    const msgpack::object* medium = nullptr;
    const msgpack::object* components = nullptr;
    if (raw.type == msgpack::type::ARRAY) {
      const std::span<const msgpack::object> slots = Items(raw);
      if (slots.empty()) continue;
      tag = AsStr(slots[0]);
      if (!tag) continue;
      const bool store = tag->starts_with("BlockStored");
      auto slot = [&slots](size_t i) {
        return i < slots.size() ? &slots[i] : nullptr;
      };
      hashes = slot(1);
      parent = store ? slot(2) : nullptr;
      size = store ? slot(4) : nullptr;
      medium = store ? slot(6) : slot(2);
      components = store ? slot(7) : nullptr;
    } else if (raw.type == msgpack::type::MAP) {
      const msgpack::object* component_type = nullptr;
      for (const msgpack::object_kv& kv :
           std::span(raw.via.map.ptr, raw.via.map.size)) {
        const std::optional<std::string_view> key = AsStr(kv.key);
        if (!key) continue;
        if (*key == "type") tag = AsStr(kv.val);
        if (*key == "block_hashes") hashes = &kv.val;
        if (*key == "parent_block_hash") parent = &kv.val;
        if (*key == "block_size") size = &kv.val;
        if (*key == "medium") medium = &kv.val;
        if (*key == "component_types") components = &kv.val;
        if (*key == "component_type") component_type = &kv.val;
      }
      if (components == nullptr || components->type == msgpack::type::NIL) {
        components = component_type;
      }
      if (!tag) continue;
    } else {
      continue;
    }
    if (*tag == "AllBlocksCleared") {
      Clear();
      continue;
    }
    event.store = tag->starts_with("BlockStored");
    if (!event.store && !tag->starts_with("BlockRemoved")) continue;
    if (hashes == nullptr) continue;
    for (const msgpack::object& h : Items(*hashes)) {
      if (auto value = AsInt(h)) event.hashes.push_back(*value);
    }
    if (parent != nullptr) event.parent = AsInt(*parent);
    if (size != nullptr) {
      event.size = static_cast<uint32_t>(AsInt(*size).value_or(0));
    }
    if (medium != nullptr) event.medium = AsStr(*medium);
    event.mask = MaskOf(components);
    ApplyEvent(event);
  }
}

void SnapshotMirror::ApplyEvent(const Event& event) {
  const std::optional<int64_t> tier =
      event.medium ? TierOf(*event.medium) : std::nullopt;
  std::optional<int64_t> parent = event.parent;
  for (int64_t hash : event.hashes) {
    if (event.store) {
      v1_.Set(hash, parent);
      if (tier) v2_.Set({hash, *tier}, V2Value{parent, event.mask, event.size});
    } else {
      v1_.Erase(hash);
      if (tier) v2_.Erase({hash, *tier});
    }
    parent = hash;
  }
}

void SnapshotMirror::Clear() {
  v1_.Clear();
  v2_.Clear();
}

std::vector<SnapshotRecord> SnapshotMirror::V1() const {
  std::vector<SnapshotRecord> out;
  v1_.ForEach([&out](int64_t hash, const std::optional<int64_t>& parent) {
    out.push_back({parent, hash});
  });
  return out;
}

std::vector<SnapshotV2Record> SnapshotMirror::V2() const {
  std::vector<SnapshotV2Record> out;
  v2_.ForEach(
      [&out](const std::pair<int64_t, int64_t>& key, const V2Value& value) {
        out.push_back(
            {value.parent, key.first, key.second, value.mask, value.size});
      });
  return out;
}

}  // namespace kvindexer::bridge::testing
