#include "server/status_reporter.h"

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "server/status_report_failure_log.h"
#include "server/status_report_schedule.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

enum ReportResult : size_t {
  kReportAccepted,
  kReportRejected,
  kReportFailed,
  kReportSkipped,
  kReportResults
};
constexpr std::array<const char*, kReportResults> kReportResultNames = {
    "accepted", "rejected", "failed", "skipped"};

}  // namespace

struct StatusReporter::Lane {
  Lane(const RouterUrl& url, const StatusReporterOptions& options)
      : router(url),
        client(url, std::chrono::milliseconds(options.config.interval_ms),
               options.config.router_tls_ca_file),
        failure_log(options.clock, url.url) {
    for (size_t r = 0; r < kReportResults; ++r) {
      counters[r] =
          options.registry == nullptr
              ? &own_counters[r]
              : &options.registry->AddCounter(
                    "kvindexer_status_reports",
                    "Status reports for a router (KV_INDEXER_ROUTER_"
                    "URLS), by result: accepted (2xx), rejected "
                    "(another answer), failed (a timeout or a "
                    "connection error), skipped (the previous post "
                    "was still pending at the tick).",
                    {{"router", url.url}, {"result", kReportResultNames[r]}});
    }
  }

  const RouterUrl router;
  RouterClient client;
  // The lane's thread only.
  StatusReportFailureLog failure_log;
  std::array<Counter*, kReportResults> counters{};
  std::array<Counter, kReportResults> own_counters;
  bool in_flight = false;  // guarded by the reporter's mu_
  std::thread thread;
};

StatusReporter::StatusReporter(StatusReporterOptions options)
    : options_(std::move(options)),
      identity_{.indexer_id = options_.config.indexer_id,
                .endpoint = options_.config.advertise_endpoint} {
  std::string urls;
  for (const RouterUrl& router : options_.config.routers) {
    if (!urls.empty()) urls += ',';
    urls += router.url;
  }
  spdlog::info(
      "status reports to routers={} every interval_ms={} indexer_id={} "
      "endpoint={}",
      urls, options_.config.interval_ms, options_.config.indexer_id,
      options_.config.advertise_endpoint);
  if (options_.config.interval_ms >= kRouterReportMaxAgeMs) {
    spdlog::warn(
        "{}={} is {} ms or more: routers drop reports older than {} ms, so "
        "this indexer will look stale to them between reports",
        kStatusIntervalMsVar, options_.config.interval_ms,
        kRouterReportMaxAgeMs, kRouterReportMaxAgeMs);
  }
  for (const RouterUrl& router : options_.config.routers) {
    lanes_.push_back(std::make_unique<Lane>(router, options_));
  }
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    Lane* const raw = lane.get();
    lane->thread = std::thread([this, raw] { Run(*raw); });
  }
}

StatusReporter::~StatusReporter() { Stop(); }

void StatusReporter::Stop() {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (const std::unique_ptr<Lane>& lane : lanes_) {
      if (lane->in_flight) lane->client.Abort();
    }
  }
  wake_.notify_all();
  for (const std::unique_ptr<Lane>& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
}

StatusReporter::Counts StatusReporter::counts(size_t router) const {
  const Lane& lane = *lanes_.at(router);
  return Counts{.accepted = lane.counters[kReportAccepted]->value(),
                .rejected = lane.counters[kReportRejected]->value(),
                .failed = lane.counters[kReportFailed]->value(),
                .skipped = lane.counters[kReportSkipped]->value()};
}

void StatusReporter::Run(Lane& lane) {
  const MonotonicClock& clock = *options_.clock;
  StatusSchedule schedule(
      clock.Now(), std::chrono::milliseconds(options_.config.interval_ms));
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait_for(lock, schedule.due() - clock.Now(),
                   [this] { return stopping_; });
    if (stopping_) break;
    if (clock.Now() < schedule.due()) continue;
    lane.in_flight = true;
    lock.unlock();
    const RouterPostResult result =
        lane.client.Post(BuildStatusReportBody(identity_, options_.source()));
    lock.lock();
    lane.in_flight = false;
    // A post Stop cut short is nobody's failure.
    const bool cut_short =
        stopping_ && result.outcome != RouterPostResult::Outcome::kAccepted;
    lock.unlock();
    if (!cut_short) Record(lane, result);
    if (const uint64_t skipped = schedule.Finish(clock.Now())) {
      lane.counters[kReportSkipped]->Increment(skipped);
    }
    lock.lock();
  }
  lock.unlock();
  Record(lane, lane.client.Post(
                   BuildFinalStatusReportBody(identity_, options_.source())));
}

void StatusReporter::Record(Lane& lane, const RouterPostResult& result) {
  switch (result.outcome) {
    case RouterPostResult::Outcome::kAccepted:
      lane.counters[kReportAccepted]->Increment();
      if (std::optional<std::string> line = lane.failure_log.Accepted()) {
        spdlog::info("{}", *line);
      }
      return;
    case RouterPostResult::Outcome::kRejected:
      lane.counters[kReportRejected]->Increment();
      break;
    case RouterPostResult::Outcome::kFailed:
      lane.counters[kReportFailed]->Increment();
      break;
  }
  if (std::optional<std::string> line =
          lane.failure_log.Failed(result.detail)) {
    spdlog::warn("{}", *line);
  }
}

}  // namespace kvindexer
