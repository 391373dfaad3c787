// StatusReporter: posts the server's status report to every router of
// KV_INDEXER_ROUTER_URLS (docs/fleet.md, "Status reports to routers").
//
// Each router has a thread of its own, with its own schedule
// (server/status_report_schedule.h), its own kept-alive connection
// (server/router_client.h) and at most one post in flight. At each tick the
// thread reads the inputs once (the StatusInputsSource), builds the body
// (server/status_report_body.h) and posts it, with one interval as the
// timeout. A tick that comes while the previous post is pending is skipped
// for that router only, so a router that is slow or never answers delays
// no other. The first report goes as soon as the reporter starts.
//
// Every post is counted in kvindexer_status_reports_total{router,result},
// result one of accepted (2xx), rejected (another answer), failed (no
// answer: a timeout or a connection error) and skipped. Failures are logged
// at WARN per router, throttled (server/status_report_failure_log.h); the
// first accepted report after them at INFO.
//
// Stop ends the posts in progress, sends each router one final report
// (server/status_report_body.h: not ready, every stream not ready) with one
// interval as its timeout, and joins the threads. A post that had only just
// begun when Stop came may finish first, which can delay the final report
// by up to one more interval.
//
// Thread safety: Stop and the destructor from one thread; counts() from
// any. The source is called on the routers' threads, concurrently.
#ifndef KVINDEXER_SERVER_STATUS_REPORTER_H_
#define KVINDEXER_SERVER_STATUS_REPORTER_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "common/metrics_registry.h"
#include "server/router_client.h"
#include "server/status_report.h"
#include "server/status_report_body.h"
#include "server/status_reporter_config.h"

namespace kvindexer {

struct StatusReporterOptions {
  // REQUIRES: config.enabled(), config.interval_ms > 0.
  StatusReporterConfig config;
  // REQUIRES: non-null; thread-safe; what it reads outlives Stop.
  StatusInputsSource source;
  // Where the counters are registered; null: they are only kept here.
  // REQUIRES: outlives the reporter.
  MetricsRegistry* registry = nullptr;
  // Schedules and log throttling. REQUIRES: outlives the reporter.
  const MonotonicClock* clock = &MonotonicClock::Real();
};

class StatusReporter {
 public:
  // The posts to one router, by result.
  struct Counts {
    uint64_t accepted = 0;
    uint64_t rejected = 0;
    uint64_t failed = 0;
    uint64_t skipped = 0;
  };

  // Logs the routers and the interval (a WARN for an interval routers
  // would find too long) and starts one thread per router.
  explicit StatusReporter(StatusReporterOptions options);
  // Stop().
  ~StatusReporter();
  StatusReporter(const StatusReporter&) = delete;
  StatusReporter& operator=(const StatusReporter&) = delete;

  // Sends the final reports and joins. Idempotent.
  void Stop();

  // The posts to config.routers[router] so far. REQUIRES: router < the
  // number of routers.
  Counts counts(size_t router) const;

 private:
  struct Lane;

  void Run(Lane& lane);
  // Counts and logs the outcome of one post.
  void Record(Lane& lane, const RouterPostResult& result);

  const StatusReporterOptions options_;
  const StatusReportIdentity identity_;
  std::vector<std::unique_ptr<Lane>> lanes_;

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  bool stopped_ = false;   // Stop's thread only
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_REPORTER_H_
