#include "common/http_request_head.h"

#include <string>

#include "gtest/gtest.h"

namespace kvindexer {
namespace http_request_head_test {

using State = RequestHeadScan::State;

TEST(ScanRequestHeadTest, FindsTheBlankLineWithCrlfOrBareLf) {
  const std::string crlf = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  RequestHeadScan scan = ScanRequestHead(crlf + "GET /next", 8192);
  EXPECT_EQ(scan.state, State::kComplete);
  EXPECT_EQ(scan.size, crlf.size());

  const std::string lf = "GET /metrics HTTP/1.1\nHost: x\n\n";
  scan = ScanRequestHead(lf, 8192);
  EXPECT_EQ(scan.state, State::kComplete);
  EXPECT_EQ(scan.size, lf.size());
}

TEST(ScanRequestHeadTest, IncompleteUntilTheBlankLine) {
  EXPECT_EQ(ScanRequestHead("", 8192).state, State::kIncomplete);
  EXPECT_EQ(ScanRequestHead("GET / HTTP/1.1\r\nHost: x\r\n", 8192).state,
            State::kIncomplete);
  EXPECT_EQ(ScanRequestHead("GET / HTTP/1.1\r\nHost: x\r\n\r", 8192).state,
            State::kIncomplete);
}

TEST(ScanRequestHeadTest, CapsTheHeadAtExactlyMaxBytes) {
  // A line without an end: too large once the cap is reached, not before.
  EXPECT_EQ(ScanRequestHead(std::string(99, 'a'), 100).state,
            State::kIncomplete);
  EXPECT_EQ(ScanRequestHead(std::string(100, 'a'), 100).state,
            State::kTooLarge);
  EXPECT_EQ(ScanRequestHead(std::string(5000, 'a'), 100).state,
            State::kTooLarge);

  // A head of exactly the cap fits; one byte more does not, whatever
  // follows.
  const std::string line = "GET / HTTP/1.1\r\nX: ";
  const std::string fits =
      line + std::string(100 - line.size() - 4, 'v') + "\r\n\r\n";
  ASSERT_EQ(fits.size(), 100u);
  RequestHeadScan scan = ScanRequestHead(fits, 100);
  EXPECT_EQ(scan.state, State::kComplete);
  EXPECT_EQ(scan.size, 100u);
  const std::string over =
      line + std::string(100 - line.size() - 3, 'v') + "\r\n\r\n";
  EXPECT_EQ(ScanRequestHead(over, 100).state, State::kTooLarge);
}

TEST(ScanRequestHeadTest, ResumedScansFindAnEndSplitAcrossPieces) {
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  // Every split point, the earlier piece scanned first.
  for (size_t split = 1; split < head.size(); ++split) {
    const RequestHeadScan first = ScanRequestHead(head.substr(0, split), 8192);
    ASSERT_EQ(first.state, State::kIncomplete) << split;
    const RequestHeadScan second = ScanRequestHead(head, 8192, split);
    EXPECT_EQ(second.state, State::kComplete) << split;
    EXPECT_EQ(second.size, head.size()) << split;
  }
}

TEST(ScanRequestHeadTest, ABodyIsDeclaredByContentLengthOrTransferEncoding) {
  auto state = [](const std::string& headers) {
    return ScanRequestHead("POST /metrics HTTP/1.1\r\n" + headers + "\r\n",
                           8192)
        .state;
  };
  EXPECT_EQ(state(""), State::kComplete);
  EXPECT_EQ(state("Content-Length: 0\r\n"), State::kComplete);
  EXPECT_EQ(state("content-length:00\r\n"), State::kComplete);
  EXPECT_EQ(state("Content-Length: 5\r\n"), State::kHasBody);
  EXPECT_EQ(state("CONTENT-LENGTH: 10\r\n"), State::kHasBody);
  EXPECT_EQ(state("Content-Length: x\r\n"), State::kHasBody);
  EXPECT_EQ(state("Content-Length:\r\n"), State::kHasBody);
  EXPECT_EQ(state("Transfer-Encoding: chunked\r\n"), State::kHasBody);
  EXPECT_EQ(state("X-Content-Length: 5\r\n"), State::kComplete);
  // The request line is not a header, whatever it says.
  EXPECT_EQ(
      ScanRequestHead("GET /Content-Length:5 HTTP/1.1\r\n\r\n", 8192).state,
      State::kComplete);
}

TEST(RequestLineTest, MethodAndPath) {
  EXPECT_EQ(RequestMethod("GET /healthz HTTP/1.1\r\n\r\n"), "GET");
  EXPECT_EQ(RequestPath("GET /healthz HTTP/1.1\r\n\r\n"), "/healthz");
  EXPECT_EQ(RequestPath("HEAD /readyz?verbose=1 HTTP/1.0\n\n"), "/readyz");
  EXPECT_EQ(RequestMethod("GET /healthz\r\n\r\n"), "");
  EXPECT_EQ(RequestPath("GET /healthz\r\n\r\n"), "");
  EXPECT_EQ(RequestPath(""), "");
}

}  // namespace http_request_head_test
}  // namespace kvindexer
