#include "common/metrics_http_limits.h"

#include <chrono>

#include "gtest/gtest.h"

namespace kvindexer {
namespace metrics_http_limits_test {

using namespace std::chrono_literals;

TEST(WaitDeadlineTest, RequestTimeoutFromTheStartOfTheWait) {
  MetricsHttpLimits limits;
  limits.request_timeout = 5s;
  limits.keep_alive_timeout = 2s;
  const std::chrono::steady_clock::time_point since{100s};
  // A new connection, with or without bytes: the whole request in 5 s.
  EXPECT_EQ(WaitDeadline(limits, since, /*kept_alive=*/false,
                         /*any_bytes_received=*/false),
            since + 5s);
  EXPECT_EQ(WaitDeadline(limits, since, false, true), since + 5s);
  // A kept-alive connection: 2 s for the first byte, then the rest of the
  // 5 s, counted from the end of the previous response all the same.
  EXPECT_EQ(WaitDeadline(limits, since, true, false), since + 2s);
  EXPECT_EQ(WaitDeadline(limits, since, true, true), since + 5s);
}

TEST(WaitDeadlineTest, KeepAliveNeverOutlastsTheRequestTimeout) {
  MetricsHttpLimits limits;
  limits.request_timeout = 300ms;
  limits.keep_alive_timeout = 2s;
  const std::chrono::steady_clock::time_point since{7s};
  EXPECT_EQ(WaitDeadline(limits, since, true, false), since + 300ms);
}

TEST(MetricsHttpLimitsTest, Defaults) {
  const MetricsHttpLimits limits;
  EXPECT_EQ(limits.max_connections, 64u);
  EXPECT_EQ(limits.max_head_bytes, 8192u);
  EXPECT_EQ(limits.request_timeout, 5s);
  EXPECT_EQ(limits.keep_alive_timeout, 2s);
  EXPECT_EQ(limits.max_requests_per_connection, 5u);
  EXPECT_EQ(limits.write_timeout, 5s);
  EXPECT_EQ(limits.max_waiting_scrapes, 4u);
}

}  // namespace metrics_http_limits_test
}  // namespace kvindexer
