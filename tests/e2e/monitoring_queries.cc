#include "tests/e2e/monitoring_queries.h"

#include <cctype>
#include <cstddef>

namespace kvindexer::e2e {
namespace {

bool IsIdentifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' ||
         c == ':';
}

bool IsIdentifierChar(char c) {
  return IsIdentifierStart(c) || std::isdigit(static_cast<unsigned char>(c));
}

// The JSON string starting at `text[pos]` (the opening quote), unescaped;
// `pos` ends after the closing quote. \uXXXX escapes are kept as they are:
// the files hold none in their queries.
std::string ReadJsonString(std::string_view text, size_t& pos) {
  std::string out;
  ++pos;  // the opening quote
  while (pos < text.size() && text[pos] != '"') {
    char c = text[pos++];
    if (c == '\\' && pos < text.size()) {
      c = text[pos++];
      switch (c) {
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        default:
          break;  // \" \\ \/ stand for themselves
      }
    }
    out += c;
  }
  ++pos;  // the closing quote
  return out;
}

size_t SkipSpaces(std::string_view text, size_t pos) {
  while (pos < text.size() &&
         std::isspace(static_cast<unsigned char>(text[pos])) != 0) {
    ++pos;
  }
  return pos;
}

std::string_view Strip(std::string_view text) {
  while (!text.empty() &&
         std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() &&
         std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

size_t Indentation(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && line[n] == ' ') ++n;
  return n;
}

// A one-line YAML scalar: quotes removed ('' inside single quotes is one
// quote), and a trailing comment dropped from a plain one.
std::string YamlScalar(std::string_view value) {
  value = Strip(value);
  if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
    std::string out;
    for (size_t i = 1; i + 1 < value.size(); ++i) {
      out += value[i];
      if (value[i] == '\'' && value[i + 1] == '\'') ++i;
    }
    return out;
  }
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    size_t pos = 0;
    return ReadJsonString(value, pos);
  }
  if (const size_t comment = value.find(" #");
      comment != std::string_view::npos) {
    value = Strip(value.substr(0, comment));
  }
  return std::string(value);
}

}  // namespace

std::vector<std::string> DashboardQueries(std::string_view json) {
  std::vector<std::string> queries;
  size_t pos = 0;
  while (pos < json.size()) {
    if (json[pos] != '"') {
      ++pos;
      continue;
    }
    const std::string key = ReadJsonString(json, pos);
    const size_t colon = SkipSpaces(json, pos);
    if (colon >= json.size() || json[colon] != ':') continue;  // a value
    const size_t value = SkipSpaces(json, colon + 1);
    if (value >= json.size() || json[value] != '"') {
      pos = value;  // an object, array, number...: its strings come next
      continue;
    }
    pos = value;
    std::string text = ReadJsonString(json, pos);
    if (key == "expr" || key == "query" || key == "definition") {
      queries.push_back(std::move(text));
    }
  }
  return queries;
}

std::vector<std::string> RuleQueries(std::string_view yaml) {
  std::vector<std::string> queries;
  const std::vector<std::string_view> lines = Lines(yaml);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const size_t indent = Indentation(line);
    std::string_view rest = line.substr(indent);
    if (rest.starts_with("- ")) rest.remove_prefix(2);
    if (!rest.starts_with("expr:")) continue;
    const std::string_view value =
        Strip(rest.substr(std::string_view("expr:").size()));
    if (value.empty() || value.front() == '|' || value.front() == '>') {
      std::string block;
      while (i + 1 < lines.size() && (Strip(lines[i + 1]).empty() ||
                                      Indentation(lines[i + 1]) > indent)) {
        const std::string_view part = Strip(lines[++i]);
        if (part.empty()) continue;
        if (!block.empty()) block += '\n';
        block += part;
      }
      queries.push_back(std::move(block));
    } else {
      queries.push_back(YamlScalar(value));
    }
  }
  return queries;
}

std::set<std::string> MetricNames(std::string_view query,
                                  std::string_view prefix) {
  std::set<std::string> names;
  size_t pos = 0;
  while (pos < query.size()) {
    const char c = query[pos];
    if (c == '"' || c == '\'' || c == '`') {  // a string literal
      ++pos;
      while (pos < query.size() && query[pos] != c) {
        pos += query[pos] == '\\' && c != '`' ? 2 : 1;
      }
      ++pos;
      continue;
    }
    if (!IsIdentifierStart(c)) {
      ++pos;
      continue;
    }
    const size_t start = pos;
    while (pos < query.size() && IsIdentifierChar(query[pos])) ++pos;
    const std::string_view word = query.substr(start, pos - start);
    if (word.starts_with(prefix)) names.emplace(word);
  }
  return names;
}

}  // namespace kvindexer::e2e
