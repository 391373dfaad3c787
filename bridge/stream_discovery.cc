#include "bridge/stream_discovery.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

StreamDiscovery::StreamDiscovery(WorkerEntry entry, StopRequest* stop,
                                 Fetch fetch, Backoff backoff)
    : entry_(std::move(entry)),
      stop_(stop),
      fetch_(std::move(fetch)),
      initial_backoff_(backoff) {}

absl::StatusOr<WorkerEntry> StreamDiscovery::FetchOnce() {
  absl::StatusOr<WorkerUrl> url = ParseWorkerUrl(entry_.worker_address);
  if (!url.ok()) {
    // Refused at start-up for a discover entry; kept as a refusal here.
    return absl::FailedPreconditionError(url.status().message());
  }
  absl::StatusOr<KvEventsDescriptor> descriptor = fetch_(*url);
  if (!descriptor.ok()) return descriptor.status();
  dp_size_.store(descriptor->dp_size);
  return ApplyKvEventsDescriptor(entry_, *descriptor, url->host);
}

absl::StatusOr<WorkerEntry> StreamDiscovery::Resolve() {
  Backoff backoff = initial_backoff_;
  while (!stop_->triggered()) {
    absl::StatusOr<WorkerEntry> followed = FetchOnce();
    if (followed.ok() ||
        followed.status().code() != absl::StatusCode::kUnavailable) {
      return followed;
    }
    const auto delay = backoff.NextDelay();
    spdlog::warn("stream {}: discovery: {}; retrying in {} ms",
                 DescribeStreamKey(entry_),
                 LogText(followed.status().ToString(), kLogMessageBytes),
                 delay.count());
    if (stop_->WaitFor(delay)) break;
  }
  return absl::CancelledError("stopping");
}

absl::Status StreamDiscovery::Recheck(const WorkerEntry& following) {
  absl::StatusOr<WorkerEntry> now = FetchOnce();
  if (!now.ok()) {
    if (now.status().code() != absl::StatusCode::kUnavailable) {
      return now.status();
    }
    spdlog::warn(
        "stream {}: discovery before resynchronising: {}; going on "
        "with {}",
        DescribeStreamKey(entry_),
        LogText(now.status().ToString(), kLogMessageBytes),
        following.event_endpoint);
    return absl::OkStatus();
  }
  if (now->event_endpoint == following.event_endpoint &&
      now->event_topic == following.event_topic &&
      now->page_size == following.page_size) {
    return absl::OkStatus();
  }
  return absl::AbortedError(absl::StrCat(
      "the worker now advertises ", now->event_endpoint, " (topic \"",
      now->event_topic, "\", block_size ", now->page_size, ") instead of ",
      following.event_endpoint, " (topic \"", following.event_topic,
      "\", block_size ", following.page_size, ")"));
}

}  // namespace kvindexer::bridge
