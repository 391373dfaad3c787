#include "json_writer.h"

#include <cmath>
#include <cstdio>

namespace kvindexer::bench {

void JsonWriter::Key(std::string_view key) {
  if (!first_.back()) out_ += ',';
  first_.back() = false;
  if (!key.empty()) {
    Quoted(key);
    out_ += ':';
  }
}

void JsonWriter::Quoted(std::string_view s) {
  out_ += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out_ += '\\';
      out_ += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out_ += buf;
    } else {
      out_ += c;
    }
  }
  out_ += '"';
}

void JsonWriter::BeginObject(std::string_view key) {
  Key(key);
  out_ += '{';
  first_.push_back(true);
}

void JsonWriter::EndObject() {
  first_.pop_back();
  out_ += '}';
}

void JsonWriter::BeginArray(std::string_view key) {
  Key(key);
  out_ += '[';
  first_.push_back(true);
}

void JsonWriter::EndArray() {
  first_.pop_back();
  out_ += ']';
}

void JsonWriter::Field(std::string_view key, std::string_view value) {
  Key(key);
  Quoted(value);
}

void JsonWriter::Field(std::string_view key, double value) {
  Key(key);
  if (!std::isfinite(value)) {
    out_ += "null";
    return;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", value);
  out_ += buf;
}

void JsonWriter::Field(std::string_view key, uint64_t value) {
  Key(key);
  out_ += std::to_string(value);
}

void JsonWriter::Field(std::string_view key, int64_t value) {
  Key(key);
  out_ += std::to_string(value);
}

void JsonWriter::Field(std::string_view key, bool value) {
  Key(key);
  out_ += value ? "true" : "false";
}

}  // namespace kvindexer::bench
