#include "common/log_text.h"

#include <gtest/gtest.h>

#include <string>

namespace kvindexer {
namespace {

TEST(LogTextTest, PrintableAsciiIsKept) {
  EXPECT_EQ(LogText("worker-17 http://10.0.0.1:30000 ~!@#$%^&*()'"),
            "worker-17 http://10.0.0.1:30000 ~!@#$%^&*()'");
  EXPECT_EQ(LogText(""), "");
}

TEST(LogTextTest, ControlAndNonAsciiBytesAreEscaped) {
  EXPECT_EQ(LogText("a\nb"), "a\\x0ab");
  EXPECT_EQ(LogText("\r\t\x1b[2J"), "\\x0d\\x09\\x1b[2J");
  EXPECT_EQ(LogText(std::string("\0z", 2)), "\\x00z");
  EXPECT_EQ(LogText("\x7f"), "\\x7f");
  // UTF-8 beyond ASCII, byte by byte; invalid UTF-8 the same way.
  EXPECT_EQ(LogText("caf\xc3\xa9"), "caf\\xc3\\xa9");
  EXPECT_EQ(LogText("\xff\xfe"), "\\xff\\xfe");
}

TEST(LogTextTest, QuoteAndBackslashAreEscapedSoTheBytesReadBack) {
  // A value cannot close a quoted field, and "\x0a" typed by a client is
  // not confused with an escaped newline.
  EXPECT_EQ(LogText("a\"b"), "a\\x22b");
  EXPECT_EQ(LogText("\\x0a"), "\\x5cx0a");
}

TEST(LogTextTest, LongTextIsCutWithTheCountLeftOut) {
  EXPECT_EQ(LogText("abcdef", 4), "abcd...(+2 bytes)");
  EXPECT_EQ(LogText("abcd", 4), "abcd");
  EXPECT_EQ(LogText("abc", 0), "...(+3 bytes)");
  // The cut counts input bytes, before escaping.
  EXPECT_EQ(LogText("\n\n\n", 2), "\\x0a\\x0a...(+1 bytes)");
}

TEST(LogTextTest, AHostileMebibyteBecomesOneBoundedLine) {
  std::string hostile(1 << 20, 'a');
  for (size_t i = 0; i < hostile.size(); i += 7) hostile[i] = '\n';
  const std::string text = LogText(hostile);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_LE(text.size(), 4 * kLogTextBytes + 32);
  EXPECT_NE(text.find("...(+" + std::to_string(hostile.size() - kLogTextBytes) +
                      " bytes)"),
            std::string::npos);
}

TEST(LogTextTest, DefaultShowsAWholeDefaultSizedId) {
  const std::string id(kLogTextBytes, 'w');
  EXPECT_EQ(LogText(id), id);
}

}  // namespace
}  // namespace kvindexer
