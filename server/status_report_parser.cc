#include "server/status_report_parser.h"

#include <charconv>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

constexpr int kMaxDepth = 64;

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  // A number's literal, or a string's decoded UTF-8.
  std::string text;
  std::vector<JsonValue> items;   // array elements, or object values
  std::vector<std::string> keys;  // object keys, parallel to items
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view in) : in_(in) {}

  absl::StatusOr<JsonValue> Document() {
    SkipSpace();
    absl::StatusOr<JsonValue> value = Value(0);
    if (!value.ok()) return value;
    SkipSpace();
    if (pos_ != in_.size()) return Error("content after the document");
    return value;
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        fmt::format("status report JSON at byte {}: {}", pos_, what));
  }

  void SkipSpace() {
    while (pos_ < in_.size() && (in_[pos_] == ' ' || in_[pos_] == '\t' ||
                                 in_[pos_] == '\n' || in_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Literal(std::string_view word) {
    if (in_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::StatusOr<JsonValue> Value(int depth) {
    if (depth > kMaxDepth) return Error("nesting deeper than 64");
    if (pos_ >= in_.size()) return Error("unexpected end");
    JsonValue v;
    const char c = in_[pos_];
    if (c == '{') return Object(depth);
    if (c == '[') return Array(depth);
    if (c == '"') {
      absl::StatusOr<std::string> s = String();
      if (!s.ok()) return s.status();
      v.kind = JsonValue::Kind::kString;
      v.text = *std::move(s);
      return v;
    }
    if (Literal("true")) {
      v.kind = JsonValue::Kind::kBool;
      v.boolean = true;
      return v;
    }
    if (Literal("false")) {
      v.kind = JsonValue::Kind::kBool;
      return v;
    }
    if (Literal("null")) return v;
    return Number();
  }

  absl::StatusOr<JsonValue> Object(int depth) {
    JsonValue v;
    v.kind = JsonValue::Kind::kObject;
    ++pos_;  // '{'
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == '}') {
      ++pos_;
      return v;
    }
    while (true) {
      SkipSpace();
      if (pos_ >= in_.size() || in_[pos_] != '"')
        return Error("expected a key");
      absl::StatusOr<std::string> key = String();
      if (!key.ok()) return key.status();
      SkipSpace();
      if (pos_ >= in_.size() || in_[pos_] != ':') return Error("expected ':'");
      ++pos_;
      SkipSpace();
      absl::StatusOr<JsonValue> member = Value(depth + 1);
      if (!member.ok()) return member;
      v.keys.push_back(*std::move(key));
      v.items.push_back(*std::move(member));
      SkipSpace();
      if (pos_ < in_.size() && in_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < in_.size() && in_[pos_] == '}') {
        ++pos_;
        return v;
      }
      return Error("expected ',' or '}'");
    }
  }

  absl::StatusOr<JsonValue> Array(int depth) {
    JsonValue v;
    v.kind = JsonValue::Kind::kArray;
    ++pos_;  // '['
    SkipSpace();
    if (pos_ < in_.size() && in_[pos_] == ']') {
      ++pos_;
      return v;
    }
    while (true) {
      SkipSpace();
      absl::StatusOr<JsonValue> item = Value(depth + 1);
      if (!item.ok()) return item;
      v.items.push_back(*std::move(item));
      SkipSpace();
      if (pos_ < in_.size() && in_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < in_.size() && in_[pos_] == ']') {
        ++pos_;
        return v;
      }
      return Error("expected ',' or ']'");
    }
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  absl::StatusOr<JsonValue> Number() {
    const size_t start = pos_;
    if (pos_ < in_.size() && in_[pos_] == '-') ++pos_;
    if (pos_ >= in_.size() || !IsDigit(in_[pos_])) {
      return Error("expected a value");
    }
    if (in_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < in_.size() && IsDigit(in_[pos_])) ++pos_;
    }
    if (pos_ < in_.size() && in_[pos_] == '.') {
      ++pos_;
      if (pos_ >= in_.size() || !IsDigit(in_[pos_])) {
        return Error("expected a digit after '.'");
      }
      while (pos_ < in_.size() && IsDigit(in_[pos_])) ++pos_;
    }
    if (pos_ < in_.size() && (in_[pos_] == 'e' || in_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < in_.size() && (in_[pos_] == '+' || in_[pos_] == '-')) ++pos_;
      if (pos_ >= in_.size() || !IsDigit(in_[pos_])) {
        return Error("expected a digit in the exponent");
      }
      while (pos_ < in_.size() && IsDigit(in_[pos_])) ++pos_;
    }
    JsonValue v;
    v.kind = JsonValue::Kind::kNumber;
    v.text = std::string(in_.substr(start, pos_ - start));
    return v;
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  absl::StatusOr<uint32_t> Hex4() {
    if (pos_ + 4 > in_.size()) return Error("short \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = in_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Error("bad hex digit in \\u escape");
      }
    }
    return v;
  }

  // The length of the well-formed UTF-8 sequence at pos_, 0 when none.
  size_t Utf8Length() const {
    const auto b = [&](size_t k) -> unsigned {
      return pos_ + k < in_.size() ? static_cast<unsigned char>(in_[pos_ + k])
                                   : 0x100u;
    };
    const auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
      return b(k) >= lo && b(k) <= hi;
    };
    const unsigned b0 = b(0);
    if (b0 < 0x80) return 1;
    if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
    if (b0 >= 0xE0 && b0 <= 0xEF) {
      return cont(1, b0 == 0xE0 ? 0xA0 : 0x80, b0 == 0xED ? 0x9F : 0xBF) &&
                     cont(2)
                 ? 3
                 : 0;
    }
    if (b0 >= 0xF0 && b0 <= 0xF4) {
      return cont(1, b0 == 0xF0 ? 0x90 : 0x80, b0 == 0xF4 ? 0x8F : 0xBF) &&
                     cont(2) && cont(3)
                 ? 4
                 : 0;
    }
    return 0;
  }

  absl::StatusOr<std::string> String() {
    ++pos_;  // '"'
    std::string out;
    while (true) {
      if (pos_ >= in_.size()) return Error("unterminated string");
      const auto c = static_cast<unsigned char>(in_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) return Error("control character in a string");
      if (c != '\\') {
        const size_t n = Utf8Length();
        if (n == 0) return Error("invalid UTF-8 in a string");
        out.append(in_.substr(pos_, n));
        pos_ += n;
        continue;
      }
      ++pos_;
      if (pos_ >= in_.size()) return Error("unterminated escape");
      const char e = in_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          absl::StatusOr<uint32_t> cp = Hex4();
          if (!cp.ok()) return cp.status();
          if (*cp >= 0xDC00 && *cp <= 0xDFFF) {
            return Error("lone low surrogate in \\u escape");
          }
          if (*cp >= 0xD800 && *cp <= 0xDBFF) {
            if (!Literal("\\u")) return Error("lone high surrogate");
            absl::StatusOr<uint32_t> low = Hex4();
            if (!low.ok()) return low.status();
            if (*low < 0xDC00 || *low > 0xDFFF) {
              return Error("high surrogate without a low one");
            }
            *cp = 0x10000 + ((*cp - 0xD800) << 10) + (*low - 0xDC00);
          }
          AppendUtf8(out, *cp);
          break;
        }
        default:
          return Error("unknown escape");
      }
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
};

// The members of an object by key; an error for a repeated key.
class Members {
 public:
  static absl::StatusOr<Members> Of(const JsonValue& object,
                                    std::string_view where) {
    if (object.kind != JsonValue::Kind::kObject) {
      return absl::InvalidArgumentError(
          fmt::format("status report: {} is not an object", where));
    }
    std::set<std::string_view> seen;
    for (const std::string& key : object.keys) {
      if (!seen.insert(key).second) {
        return absl::InvalidArgumentError(
            fmt::format("status report: {} repeats key \"{}\"", where, key));
      }
    }
    return Members(object, where);
  }

  absl::StatusOr<const JsonValue*> Get(std::string_view key,
                                       JsonValue::Kind kind,
                                       std::string_view type) const {
    for (size_t i = 0; i < object_.keys.size(); ++i) {
      if (object_.keys[i] != key) continue;
      if (object_.items[i].kind != kind) {
        return absl::InvalidArgumentError(
            fmt::format("status report: {}.{} is not {}", where_, key, type));
      }
      return &object_.items[i];
    }
    return absl::InvalidArgumentError(
        fmt::format("status report: {} has no key \"{}\"", where_, key));
  }

  absl::Status String(std::string_view key, std::string* out) const {
    auto v = Get(key, JsonValue::Kind::kString, "a string");
    if (!v.ok()) return v.status();
    *out = (*v)->text;
    return absl::OkStatus();
  }

  absl::Status Bool(std::string_view key, bool* out) const {
    auto v = Get(key, JsonValue::Kind::kBool, "true or false");
    if (!v.ok()) return v.status();
    *out = (*v)->boolean;
    return absl::OkStatus();
  }

  absl::Status Double(std::string_view key, double* out) const {
    auto v = Get(key, JsonValue::Kind::kNumber, "a number");
    if (!v.ok()) return v.status();
    const std::string& text = (*v)->text;
    const auto [end, error] =
        std::from_chars(text.data(), text.data() + text.size(), *out);
    if (error != std::errc() || end != text.data() + text.size()) {
      return absl::InvalidArgumentError(
          fmt::format("status report: {}.{} is {}, out of a double's range",
                      where_, key, text));
    }
    return absl::OkStatus();
  }

  absl::Status Unsigned(std::string_view key, uint64_t max,
                        uint64_t* out) const {
    auto v = Get(key, JsonValue::Kind::kNumber, "a number");
    if (!v.ok()) return v.status();
    const std::string& text = (*v)->text;
    const auto not_integer = [&] {
      return absl::InvalidArgumentError(
          fmt::format("status report: {}.{} is {}, not an integer in 0..{}",
                      where_, key, text, max));
    };
    uint64_t n = 0;
    for (const char c : text) {
      if (c < '0' || c > '9') return not_integer();
      const uint64_t digit = static_cast<uint64_t>(c - '0');
      if (n > (max - digit) / 10) return not_integer();
      n = n * 10 + digit;
    }
    *out = n;
    return absl::OkStatus();
  }

 private:
  Members(const JsonValue& object, std::string_view where)
      : object_(object), where_(where) {}
  const JsonValue& object_;
  std::string where_;
};

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kU32Max = std::numeric_limits<uint32_t>::max();

absl::StatusOr<StatusReportStream> Stream(const JsonValue& value,
                                          size_t index) {
  absl::StatusOr<Members> m =
      Members::Of(value, fmt::format("streams[{}]", index));
  if (!m.ok()) return m.status();
  StatusReportStream s;
  uint64_t dp_rank = 0;
  for (absl::Status status : {
           m->String("namespace", &s.ns),
           m->String("worker_id", &s.worker_id),
           m->Unsigned("dp_rank", kU32Max, &dp_rank),
           m->String("worker_address", &s.worker_address),
           m->Bool("ready", &s.ready),
           m->String("worker_epoch", &s.worker_epoch),
           m->Unsigned("watermark", kU64Max, &s.watermark),
           m->String("worker_generation", &s.worker_generation),
       }) {
    if (!status.ok()) return status;
  }
  s.dp_rank = static_cast<uint32_t>(dp_rank);
  return s;
}

}  // namespace

absl::StatusOr<StatusReport> ParseStatusReport(std::string_view json) {
  absl::StatusOr<JsonValue> document = JsonReader(json).Document();
  if (!document.ok()) return document.status();
  absl::StatusOr<Members> m = Members::Of(*document, "the report");
  if (!m.ok()) return m.status();
  StatusReport report;
  for (absl::Status status : {
           m->String("indexer_id", &report.indexer_id),
           m->String("endpoint", &report.endpoint),
           m->Bool("ready", &report.ready),
           m->Double("normalized_load", &report.normalized_load),
           m->Unsigned("total_workers", kU64Max, &report.total_workers),
           m->Unsigned("ready_workers", kU64Max, &report.ready_workers),
       }) {
    if (!status.ok()) return status;
  }
  absl::StatusOr<const JsonValue*> streams =
      m->Get("streams", JsonValue::Kind::kArray, "an array");
  if (!streams.ok()) return streams.status();
  for (size_t i = 0; i < (*streams)->items.size(); ++i) {
    absl::StatusOr<StatusReportStream> s = Stream((*streams)->items[i], i);
    if (!s.ok()) return s.status();
    report.streams.push_back(*std::move(s));
  }
  return report;
}

}  // namespace kvindexer
