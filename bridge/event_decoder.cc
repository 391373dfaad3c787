#include "bridge/event_decoder.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>

#include <msgpack.hpp>

#include "absl/strings/str_cat.h"
#include "bridge/cache_names.h"

namespace kvindexer::bridge {
namespace {

// What the container at a given depth is.
enum class Role : uint8_t {
  kRoot,        // the batch envelope
  kEvents,      // batch[1]
  kArrayEvent,  // one array-form event
  kMapEvent,    // one map-form event
  kHashList,    // block_hashes
  kLabelList,   // component labels
  kIgnored,     // anything the bridge does not read
};

// What the next value at the current position means.
enum class Field : uint8_t {
  kIgnore,
  kRootValue,
  kEventsValue,
  kEventValue,
  kTag,
  kHashes,
  kBlockSize,
  kMedium,
  kComponents,       // slot 7 or map key "component_types"
  kComponentSingle,  // map key "component_type"
  kMapKey,
  kHashElement,
  kLabelElement,
};

enum class Tag : uint8_t { kNone, kBad, kStore, kRemove, kClear, kUnknown };

enum class MapKey : uint8_t {
  kOther,
  kType,
  kBlockHashes,
  kBlockSize,
  kMedium,
  kComponentTypes,
  kComponentType,
};

enum class ValueKind : uint8_t { kNone, kScalar, kArray, kMap };

struct ComponentValue {
  enum class State : uint8_t { kAbsent, kNil, kLabels, kMetadata, kBad };
  State state = State::kAbsent;
  uint32_t mask = 0;
  bool IsSet() const { return state != State::kAbsent && state != State::kNil; }
};

struct MediumValue {
  enum class State : uint8_t { kAbsent, kNil, kValid, kUnknown, kWrongType };
  State state = State::kAbsent;
  Tier tier = Tier::kHbm;
  std::string unknown;  // the rejected medium string, truncated
};

struct BlockSizeValue {
  enum class State : uint8_t { kAbsent, kValid, kInvalid };
  State state = State::kAbsent;
  uint32_t value = 0;
};

constexpr size_t kMaxDetailLength = 64;

std::string Truncated(std::string_view s) {
  return std::string(s.substr(0, kMaxDetailLength));
}

Tag ClassifyTag(std::string_view tag) {
  if (tag == "BlockStored" || tag == "BlockStoredWithComponentType" ||
      tag == "BlockStoredWithComponentTypeAndMetadata") {
    return Tag::kStore;
  }
  if (tag == "BlockRemoved" || tag == "BlockRemovedWithComponentType") {
    return Tag::kRemove;
  }
  if (tag == "AllBlocksCleared") return Tag::kClear;
  return Tag::kUnknown;
}

MapKey ClassifyKey(std::string_view key) {
  if (key == "type") return MapKey::kType;
  if (key == "block_hashes") return MapKey::kBlockHashes;
  if (key == "block_size") return MapKey::kBlockSize;
  if (key == "medium") return MapKey::kMedium;
  if (key == "component_types") return MapKey::kComponentTypes;
  if (key == "component_type") return MapKey::kComponentType;
  return MapKey::kOther;
}

// SAX visitor for msgpack::parse. Returning false stops the parse; that is
// done only for batch-level errors (batch_error_ is then set).
class BatchVisitor : public msgpack::null_visitor {
 public:
  BatchVisitor(size_t payload_size, DecodedBatch* out)
      : payload_size_(payload_size), out_(out) {}

  const std::string& batch_error() const { return batch_error_; }
  bool truncated() const { return truncated_; }
  bool malformed() const { return malformed_; }

  // --- scalars -----------------------------------------------------------
  bool visit_nil() { return OnScalar(ScalarType::kNil, 0, {}); }
  bool visit_boolean(bool /*v*/) { return OnScalar(ScalarType::kOther, 0, {}); }
  bool visit_positive_integer(uint64_t v) {
    if (roles_[depth_] == Role::kHashList) {  // hot path
      // uint64 above INT64_MAX is reinterpreted bit for bit
      // (docs/bridge-events.md, "Event batches > Hashes").
      out_->hashes.push_back(static_cast<int64_t>(v));
      return true;
    }
    return OnScalar(ScalarType::kUint, v, {});
  }
  bool visit_negative_integer(int64_t v) {
    if (roles_[depth_] == Role::kHashList) {
      out_->hashes.push_back(v);
      return true;
    }
    return OnScalar(ScalarType::kInt, 0, {});
  }
  bool visit_float32(float /*v*/) {
    return OnScalar(ScalarType::kOther, 0, {});
  }
  bool visit_float64(double /*v*/) {
    return OnScalar(ScalarType::kOther, 0, {});
  }
  bool visit_str(const char* v, uint32_t size) {
    return OnScalar(ScalarType::kStr, 0, std::string_view(v, size));
  }
  bool visit_bin(const char* /*v*/, uint32_t /*size*/) {
    return OnScalar(ScalarType::kOther, 0, {});
  }
  bool visit_ext(const char* /*v*/, uint32_t /*size*/) {
    return OnScalar(ScalarType::kOther, 0, {});
  }

  // --- containers --------------------------------------------------------
  bool start_array(uint32_t num_elements) {
    if (!CheckDepth()) return false;
    Role role = Role::kIgnored;
    switch (CurrentField()) {
      case Field::kRootValue:
        if (num_elements < 2) {
          return FailBatch(absl::StrCat("batch array has ", num_elements,
                                        " elements; at least 2 required"));
        }
        role = Role::kRoot;
        root_index_ = -1;
        break;
      case Field::kEventsValue:
        role = Role::kEvents;
        break;
      case Field::kEventValue:
        value_kind_ = ValueKind::kArray;
        slot_ = -1;
        role = Role::kArrayEvent;
        break;
      case Field::kHashes:
        BeginHashList(num_elements);
        role = Role::kHashList;
        break;
      case Field::kComponents:
      case Field::kComponentSingle: {
        ComponentValue& target = ComponentTarget();
        target.state = ComponentValue::State::kLabels;
        target.mask = 0;
        label_target_ = &target;
        role = Role::kLabelList;
        break;
      }
      default:
        MarkWrongContainer();
        break;
    }
    return Push(role);
  }
  bool start_array_item() {
    switch (roles_[depth_]) {
      case Role::kRoot:
        ++root_index_;
        break;
      case Role::kArrayEvent:
        ++slot_;
        break;
      case Role::kEvents:
        BeginEvent();
        break;
      default:
        break;
    }
    return true;
  }
  bool end_array_item() {
    if (roles_[depth_] == Role::kEvents) FinishEvent();
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }

  bool start_map(uint32_t /*num_kv_pairs*/) {
    if (!CheckDepth()) return false;
    Role role = Role::kIgnored;
    switch (CurrentField()) {
      case Field::kRootValue:
        return FailBatch("batch is a map, not an array");
      case Field::kEventsValue:
        return FailBatch("batch index 1 (events) is a map, not an array");
      case Field::kEventValue:
        value_kind_ = ValueKind::kMap;
        in_map_key_ = false;
        role = Role::kMapEvent;
        break;
      case Field::kComponents:
      case Field::kComponentSingle: {
        // Metadata such as {"cache_salt": ...}: a legacy store
        // (docs/bridge-events.md, "Event batches > Components and block size").
        ComponentValue& target = ComponentTarget();
        target.state = ComponentValue::State::kMetadata;
        target.mask = 0;
        break;
      }
      default:
        MarkWrongContainer();
        break;
    }
    return Push(role);
  }
  bool start_map_key() {
    if (roles_[depth_] == Role::kMapEvent) {
      in_map_key_ = true;
      key_ = MapKey::kOther;
    }
    return true;
  }
  bool start_map_value() {
    if (roles_[depth_] == Role::kMapEvent) in_map_key_ = false;
    return true;
  }
  bool end_map() {
    --depth_;
    return true;
  }

  void parse_error(size_t /*parsed_offset*/, size_t /*error_offset*/) {
    malformed_ = true;
  }
  void insufficient_bytes(size_t /*parsed_offset*/, size_t /*error_offset*/) {
    truncated_ = true;
  }

 private:
  enum class ScalarType : uint8_t { kNil, kUint, kInt, kStr, kOther };

  bool CheckDepth() {
    if (depth_ >= EventDecoder::kMaxNestingDepth) {
      return FailBatch(absl::StrCat("msgpack nesting deeper than ",
                                    EventDecoder::kMaxNestingDepth));
    }
    return true;
  }
  bool Push(Role role) {
    ++depth_;
    roles_[depth_] = role;
    return true;
  }
  bool FailBatch(std::string message) {
    batch_error_ = std::move(message);
    return false;
  }

  Field CurrentField() const {
    if (depth_ == 0) return Field::kRootValue;
    switch (roles_[depth_]) {
      case Role::kRoot:
        return root_index_ == 1 ? Field::kEventsValue : Field::kIgnore;
      case Role::kEvents:
        return Field::kEventValue;
      case Role::kArrayEvent:
        return ArraySlotField();
      case Role::kMapEvent:
        return in_map_key_ ? Field::kMapKey : MapValueField();
      case Role::kHashList:
        return Field::kHashElement;
      case Role::kLabelList:
        return Field::kLabelElement;
      case Role::kIgnored:
        return Field::kIgnore;
    }
    return Field::kIgnore;
  }

  // Array-form slots (docs/bridge-events.md,
  // "Event batches > Decoding rules"): the tag in slot 0 selects the layout.
  Field ArraySlotField() const {
    if (slot_ == 0) return Field::kTag;
    if (tag_ == Tag::kStore) {
      switch (slot_) {
        case 1:
          return Field::kHashes;
        case 4:
          return Field::kBlockSize;
        case 6:
          return Field::kMedium;
        case 7:
          return Field::kComponents;
        default:
          return Field::kIgnore;
      }
    }
    if (tag_ == Tag::kRemove) {
      if (slot_ == 1) return Field::kHashes;
      if (slot_ == 2) return Field::kMedium;
    }
    return Field::kIgnore;
  }

  Field MapValueField() const {
    switch (key_) {
      case MapKey::kType:
        return Field::kTag;
      case MapKey::kBlockHashes:
        return Field::kHashes;
      case MapKey::kBlockSize:
        return Field::kBlockSize;
      case MapKey::kMedium:
        return Field::kMedium;
      case MapKey::kComponentTypes:
        return Field::kComponents;
      case MapKey::kComponentType:
        return Field::kComponentSingle;
      case MapKey::kOther:
        return Field::kIgnore;
    }
    return Field::kIgnore;
  }

  ComponentValue& ComponentTarget() {
    return CurrentField() == Field::kComponentSingle ? component_single_
                                                     : components_;
  }

  // A container where the bridge expects a scalar (or a hash list element).
  void MarkWrongContainer() {
    switch (CurrentField()) {
      case Field::kTag:
        tag_ = Tag::kBad;
        break;
      case Field::kHashElement:
        hashes_bad_ = true;
        hash_detail_ = "a block hash is a container, not an integer";
        break;
      case Field::kMedium:
        medium_.state = MediumValue::State::kWrongType;
        break;
      case Field::kBlockSize:
        block_size_.state = BlockSizeValue::State::kInvalid;
        break;
      case Field::kLabelElement:
        label_target_->state = ComponentValue::State::kBad;
        break;
      case Field::kMapKey:
        key_ = MapKey::kOther;
        break;
      case Field::kHashes:  // only maps get here; arrays are hash lists
        out_->hashes.resize(hash_begin_);
        hashes_present_ = true;
        hashes_bad_ = true;
        hash_detail_ = "block_hashes is a map, not an array";
        break;
      default:
        break;
    }
  }

  bool OnScalar(ScalarType type, uint64_t u, std::string_view s) {
    switch (CurrentField()) {
      case Field::kIgnore:
        return true;
      case Field::kRootValue:
        return FailBatch("batch is not an array");
      case Field::kEventsValue:
        return FailBatch("batch index 1 (events) is not an array");
      case Field::kEventValue:
        value_kind_ = ValueKind::kScalar;
        return true;
      case Field::kTag:
        tag_ = type == ScalarType::kStr ? ClassifyTag(s) : Tag::kBad;
        if (tag_ == Tag::kUnknown) unknown_tag_ = Truncated(s);
        return true;
      case Field::kMapKey:
        key_ = type == ScalarType::kStr ? ClassifyKey(s) : MapKey::kOther;
        return true;
      case Field::kHashes:
        // Scalar where the hash list belongs (nil, int, string, ...).
        out_->hashes.resize(hash_begin_);
        hashes_present_ = true;
        hashes_bad_ = true;
        hash_detail_ = "block_hashes is not an array";
        return true;
      case Field::kHashElement:
        // Integers never reach here (hot path); anything else is an error.
        hashes_bad_ = true;
        hash_detail_ = type == ScalarType::kStr
                           ? "a block hash is a string, not an integer"
                           : "a block hash is not an integer";
        return true;
      case Field::kBlockSize:
        if (type == ScalarType::kUint &&
            u <= std::numeric_limits<uint32_t>::max()) {
          block_size_.state = BlockSizeValue::State::kValid;
          block_size_.value = static_cast<uint32_t>(u);
        } else {
          block_size_.state = BlockSizeValue::State::kInvalid;
        }
        return true;
      case Field::kMedium:
        if (type == ScalarType::kNil) {
          medium_.state = MediumValue::State::kNil;
        } else if (type == ScalarType::kStr) {
          if (auto tier = TierFromMedium(s)) {
            medium_.state = MediumValue::State::kValid;
            medium_.tier = *tier;
          } else {
            medium_.state = MediumValue::State::kUnknown;
            medium_.unknown = Truncated(s);
          }
        } else {
          medium_.state = MediumValue::State::kWrongType;
        }
        return true;
      case Field::kComponents:
      case Field::kComponentSingle: {
        ComponentValue& target = ComponentTarget();
        target.mask = 0;
        if (type == ScalarType::kNil) {
          target.state = ComponentValue::State::kNil;
        } else if (type == ScalarType::kStr) {
          target.state = ComponentValue::State::kLabels;
          target.mask = ComponentBitFromName(s).value_or(0);
        } else {
          target.state = ComponentValue::State::kBad;
        }
        return true;
      }
      case Field::kLabelElement:
        if (type == ScalarType::kStr) {
          label_target_->mask |= ComponentBitFromName(s).value_or(0);
        } else {
          label_target_->state = ComponentValue::State::kBad;
        }
        return true;
    }
    return true;
  }

  void BeginHashList(uint32_t claimed) {
    // A repeated "block_hashes" key replaces the earlier list.
    out_->hashes.resize(hash_begin_);
    hashes_present_ = true;
    hashes_bad_ = false;
    // Every element takes at least one byte, so the payload size bounds a
    // sane reservation whatever the header claims.
    const size_t want = std::min<size_t>(claimed, payload_size_);
    if (out_->hashes.capacity() < out_->hashes.size() + want) {
      out_->hashes.reserve(
          std::max(out_->hashes.size() + want, out_->hashes.capacity() * 2));
    }
  }

  void BeginEvent() {
    value_kind_ = ValueKind::kNone;
    tag_ = Tag::kNone;
    unknown_tag_.clear();
    slot_ = -1;
    in_map_key_ = false;
    key_ = MapKey::kOther;
    hash_begin_ = out_->hashes.size();
    hashes_present_ = false;
    hashes_bad_ = false;
    hash_detail_ = nullptr;
    medium_.state = MediumValue::State::kAbsent;
    block_size_.state = BlockSizeValue::State::kAbsent;
    components_ = ComponentValue{};
    component_single_ = ComponentValue{};
    label_target_ = &components_;
  }

  void Skip(EventSkipReason reason, std::string detail) {
    out_->hashes.resize(hash_begin_);
    out_->skipped.push_back(
        SkippedEvent{out_->event_count, reason, std::move(detail)});
  }

  void FinishEvent() {
    FinishEventImpl();
    ++out_->event_count;
  }

  void FinishEventImpl() {
    if (value_kind_ != ValueKind::kArray && value_kind_ != ValueKind::kMap) {
      Skip(EventSkipReason::kNotAnEvent, "event is neither an array nor a map");
      return;
    }
    switch (tag_) {
      case Tag::kNone:
      case Tag::kBad:
        Skip(EventSkipReason::kMissingTag,
             value_kind_ == ValueKind::kArray
                 ? "array event does not start with a string tag"
                 : "map event has no string \"type\"");
        return;
      case Tag::kUnknown:
        Skip(EventSkipReason::kUnknownTag,
             absl::StrCat("ignored event tag \"", unknown_tag_, "\""));
        return;
      case Tag::kClear: {
        out_->hashes.resize(hash_begin_);
        KvEvent ev;
        ev.kind = EventKind::kClear;
        out_->events.push_back(ev);
        return;
      }
      case Tag::kStore:
      case Tag::kRemove:
        break;
    }
    if (!hashes_present_) {
      Skip(EventSkipReason::kMissingHashes, "event has no block_hashes");
      return;
    }
    if (hashes_bad_) {
      Skip(EventSkipReason::kBadHashes, hash_detail_ != nullptr
                                            ? hash_detail_
                                            : "block_hashes is malformed");
      return;
    }
    switch (medium_.state) {
      case MediumValue::State::kAbsent:
        Skip(EventSkipReason::kMissingMedium, "event has no medium");
        return;
      case MediumValue::State::kNil:
        Skip(EventSkipReason::kMissingMedium, "medium is nil");
        return;
      case MediumValue::State::kUnknown:
        Skip(EventSkipReason::kUnknownMedium,
             absl::StrCat("medium \"", medium_.unknown,
                          "\" has no tier (accepted: GPU, CPU_PINNED, DISK)"));
        return;
      case MediumValue::State::kWrongType:
        Skip(EventSkipReason::kUnknownMedium, "medium is not a string");
        return;
      case MediumValue::State::kValid:
        break;
    }
    KvEvent ev;
    ev.kind = tag_ == Tag::kStore ? EventKind::kStore : EventKind::kRemove;
    ev.tier = medium_.tier;
    ev.hash_begin = hash_begin_;
    ev.hash_count = out_->hashes.size() - hash_begin_;
    if (tag_ == Tag::kStore) {
      // "component_types" (or slot 7) wins over "component_type" when set.
      const ComponentValue& comp =
          components_.IsSet() ? components_ : component_single_;
      switch (comp.state) {
        case ComponentValue::State::kAbsent:
        case ComponentValue::State::kNil:
        case ComponentValue::State::kMetadata:
          break;  // legacy store
        case ComponentValue::State::kBad:
          Skip(EventSkipReason::kBadComponents,
               "component labels are not strings");
          return;
        case ComponentValue::State::kLabels:
          if (block_size_.state != BlockSizeValue::State::kValid) {
            Skip(EventSkipReason::kBadBlockSize,
                 "component store needs a block_size in 0..4294967295");
            return;
          }
          ev.has_components = true;
          ev.component_mask = comp.mask;
          ev.block_size = block_size_.value;
          break;
      }
    }
    out_->events.push_back(ev);
  }

  const size_t payload_size_;
  DecodedBatch* const out_;

  int depth_ = 0;
  std::array<Role, EventDecoder::kMaxNestingDepth + 1> roles_{};
  int root_index_ = -1;

  // Current event.
  ValueKind value_kind_ = ValueKind::kNone;
  Tag tag_ = Tag::kNone;
  std::string unknown_tag_;
  int64_t slot_ = -1;
  bool in_map_key_ = false;
  MapKey key_ = MapKey::kOther;
  size_t hash_begin_ = 0;
  bool hashes_present_ = false;
  bool hashes_bad_ = false;
  const char* hash_detail_ = nullptr;
  MediumValue medium_;
  BlockSizeValue block_size_;
  ComponentValue components_;
  ComponentValue component_single_;
  ComponentValue* label_target_ = &components_;

  std::string batch_error_;
  bool truncated_ = false;
  bool malformed_ = false;
};

}  // namespace

absl::Status EventDecoder::Decode(std::string_view payload,
                                  DecodedBatch* out) const {
  out->Clear();
  BatchVisitor visitor(payload.size(), out);
  bool ok = false;
  std::string failure;
  try {
    size_t offset = 0;
    ok = msgpack::parse(payload.data(), payload.size(), offset, visitor);
  } catch (const std::exception& e) {
    failure = absl::StrCat("msgpack parser failed: ", e.what());
  } catch (...) {
    failure = "msgpack parser failed";
  }
  if (ok) return absl::OkStatus();
  out->Clear();
  if (failure.empty()) {
    if (!visitor.batch_error().empty()) {
      failure = visitor.batch_error();
    } else if (visitor.malformed()) {
      failure = "payload is not valid msgpack";
    } else if (visitor.truncated()) {
      failure =
          payload.empty() ? "payload is empty" : "payload is truncated msgpack";
    } else {
      failure = "payload could not be decoded";
    }
  }
  return absl::InvalidArgumentError(failure);
}

}  // namespace kvindexer::bridge
