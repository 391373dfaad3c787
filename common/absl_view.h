// AbslView: a std::string_view seen as an absl::string_view.
//
// Debian 12's abseil is built with its own string_view type (not an alias
// of std::string_view), and its string functions and string-keyed
// containers take that type. Code that holds a std::string_view converts
// through this one function rather than spelling the conversion out.
#ifndef KVINDEXER_COMMON_ABSL_VIEW_H_
#define KVINDEXER_COMMON_ABSL_VIEW_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace kvindexer {

inline absl::string_view AbslView(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_ABSL_VIEW_H_
