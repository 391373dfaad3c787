// IsUnicodeBlank: whether a UTF-8 string is empty after trimming Unicode
// white space (the White_Space property: ASCII tab, line feed, vertical tab,
// form feed, carriage return and space, U+0085, U+00A0, U+1680,
// U+2000..U+200A, U+2028, U+2029, U+202F, U+205F and U+3000), the rule line-A
// routers and bridges apply to worker ids. Bytes that are not valid UTF-8
// are not white space.
#ifndef KVINDEXER_COMMON_UNICODE_BLANK_H_
#define KVINDEXER_COMMON_UNICODE_BLANK_H_

#include <string_view>

namespace kvindexer {

bool IsUnicodeBlank(std::string_view utf8);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_UNICODE_BLANK_H_
