#include "common/env_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

absl::Status FileError(std::string_view var, std::string_view path,
                       std::string_view what) {
  return absl::InvalidArgumentError(
      fmt::format("{}={} is invalid: {}", var, QuoteEnvValue(path), what));
}

}  // namespace

absl::StatusOr<std::string> ReadEnvNamedFile(std::string_view var,
                                             std::string_view path) {
  const std::string p(path);
  if (p.find('\0') != std::string::npos) {
    return FileError(var, path, "the path contains a NUL byte");
  }
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) {
    const int err = errno;
    return FileError(
        var, path, fmt::format("cannot read the file: {}", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    return FileError(var, path, "cannot read the file: not a regular file");
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    const int err = errno;
    return FileError(
        var, path, fmt::format("cannot read the file: {}", std::strerror(err)));
  }
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return FileError(var, path, "cannot read the file: I/O error");
  std::string content = std::move(out).str();
  if (content.empty()) return FileError(var, path, "the file is empty");
  return content;
}

absl::StatusOr<std::string> ReadTokenFile(std::string_view var,
                                          std::string_view path) {
  // Whoever can write the file can choose the token.
  struct stat st;
  if (::stat(std::string(path).c_str(), &st) == 0 &&
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return FileError(var, path,
                     fmt::format("the file is writable by its group or by "
                                 "others (mode {:04o}); expected 0600 or 0400",
                                 st.st_mode & 07777));
  }
  auto content = ReadEnvNamedFile(var, path);
  if (!content.ok()) return content.status();
  std::string_view token = *content;
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
           c == '\f';
  };
  while (!token.empty() && is_space(token.back())) token.remove_suffix(1);
  while (!token.empty() && is_space(token.front())) token.remove_prefix(1);
  if (token.empty()) {
    return FileError(var, path, "the file holds only whitespace");
  }
  for (const char c : token) {
    if (c < 0x21 || c > 0x7e) {
      // The token itself is never quoted: only where it went wrong.
      return FileError(var, path,
                       "the token must be one word of visible ASCII "
                       "characters (0x21..0x7e), with no inner whitespace "
                       "or other bytes");
    }
  }
  if (token.size() < kMinWriteTokenBytes) {
    return FileError(var, path,
                     fmt::format("the token has {} characters; at least {} are "
                                 "required (for example: openssl rand -hex 32)",
                                 token.size(), kMinWriteTokenBytes));
  }
  return std::string(token);
}

std::optional<std::string> LookupPath(const EnvLookup& env,
                                      std::string_view var) {
  return LookupTrimmed(env, var);
}

}  // namespace kvindexer
