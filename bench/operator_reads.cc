#include "operator_reads.h"

#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"

namespace kvindexer::bench {
namespace {

namespace admin_v1 = ::kvindexer::admin::v1;

// A walk that has not ended after this many pages is refused: the server
// bounds workers at far fewer (KV_INDEXER_MAX_WORKERS).
constexpr uint64_t kMaxPages = 1'000'000;

absl::Status RpcError(absl::string_view what, const grpc::Status& s) {
  return absl::UnavailableError(absl::StrCat(what, ": code ",
                                             static_cast<int>(s.error_code()),
                                             ": ", s.error_message()));
}

}  // namespace

const char* OperatorReadName(OperatorRead read) {
  switch (read) {
    case OperatorRead::kHealth:
      return "Health";
    case OperatorRead::kGetStats:
      return "GetStats";
    case OperatorRead::kListWorkers:
      return "ListWorkers";
    case OperatorRead::kScrape:
      return "scrape";
  }
  return "?";
}

bool CountsWorkers(OperatorRead read) { return read != OperatorRead::kHealth; }

OperatorReader::OperatorReader(std::shared_ptr<grpc::Channel> channel,
                               int metrics_port, uint32_t page_size,
                               std::chrono::milliseconds deadline)
    : channel_(std::move(channel)),
      stub_(admin_v1::KvIndexerAdmin::NewStub(channel_)),
      metrics_port_(metrics_port),
      page_size_(page_size),
      deadline_(deadline) {}

absl::StatusOr<OperatorReadResult> OperatorReader::Read(OperatorRead read) {
  switch (read) {
    case OperatorRead::kHealth:
      return Health();
    case OperatorRead::kGetStats:
      return GetStats();
    case OperatorRead::kListWorkers:
      return WalkWorkers();
    case OperatorRead::kScrape:
      return Scrape();
  }
  return absl::InvalidArgumentError("unknown read");
}

absl::StatusOr<OperatorReadResult> OperatorReader::Health() {
  const test_support::HealthAnswer answer =
      test_support::CheckHealth(channel_, "", deadline_);
  if (answer.code != grpc::StatusCode::OK) {
    return absl::UnavailableError(
        absl::StrCat("Health/Check: code ", static_cast<int>(answer.code)));
  }
  if (answer.status != test_support::kHealthServing) {
    return absl::UnavailableError(
        absl::StrCat("Health/Check: serving status ", answer.status));
  }
  // HealthCheckResponse{status: SERVING} is 2 bytes.
  return OperatorReadResult{.bytes = 2, .parts = 1, .workers = 0};
}

absl::StatusOr<OperatorReadResult> OperatorReader::GetStats() {
  admin_v1::GetStatsResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline_);
  const grpc::Status s =
      stub_->GetStats(&context, admin_v1::GetStatsRequest(), &response);
  if (!s.ok()) return RpcError("GetStats", s);
  return OperatorReadResult{.bytes = response.ByteSizeLong(),
                            .parts = 1,
                            .workers = response.workers_total()};
}

absl::StatusOr<OperatorReadResult> OperatorReader::WalkWorkers() {
  OperatorReadResult result;
  admin_v1::ListWorkersRequest request;
  request.set_page_size(page_size_);
  std::optional<std::string> last_id;
  for (;;) {
    if (result.parts == kMaxPages) {
      return absl::InternalError(
          absl::StrCat("ListWorkers: no last page after ", kMaxPages));
    }
    admin_v1::ListWorkersResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + deadline_);
    const grpc::Status s = stub_->ListWorkers(&context, request, &response);
    if (!s.ok()) {
      return RpcError(absl::StrCat("ListWorkers page ", result.parts + 1), s);
    }
    ++result.parts;
    result.bytes += response.ByteSizeLong();
    for (const admin_v1::WorkerInfo& w : response.workers()) {
      if (last_id.has_value() && w.worker_id() <= *last_id) {
        return absl::InternalError(absl::StrCat(
            "ListWorkers page ", result.parts, ": worker '", w.worker_id(),
            "' after '", *last_id, "' (ids must rise)"));
      }
      last_id = w.worker_id();
      ++result.workers;
    }
    if (response.next_page_token().empty()) return result;
    request.set_page_token(response.next_page_token());
  }
}

absl::StatusOr<OperatorReadResult> OperatorReader::Scrape() {
  absl::StatusOr<test_support::HttpResponse> http =
      test_support::HttpGet(metrics_port_, "/metrics", deadline_);
  if (!http.ok()) return http.status();
  if (http->status != 200) {
    return absl::UnavailableError(
        absl::StrCat("GET /metrics: status ", http->status));
  }
  OperatorReadResult result;
  result.bytes = http->body.size();
  std::string_view rest = http->body;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    if (!line.empty() && line.front() != '#') ++result.parts;
    rest = end == std::string_view::npos ? std::string_view()
                                         : rest.substr(end + 1);
  }
  const std::optional<double> workers =
      test_support::ScrapedValue(http->body, "kvindexer_workers");
  if (!workers.has_value()) {
    return absl::InternalError("GET /metrics: no kvindexer_workers sample");
  }
  result.workers = static_cast<uint64_t>(*workers);
  return result;
}

}  // namespace kvindexer::bench
