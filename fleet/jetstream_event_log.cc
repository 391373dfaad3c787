#include "fleet/jetstream_event_log.h"

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace kvindexer::fleet {
namespace {

// Room left under the server's max_payload for the headers Append adds and
// the protocol's own framing.
constexpr size_t kHeaderMargin = 4096;
// A consumer nobody fetches from for this long is removed by the server;
// the next Read then makes a fresh one.
constexpr int64_t kConsumerInactiveNanos = int64_t{5} * 60 * 1000000000;
// The shortest a fetch waits for the server's answer, also for reads that
// do not wait for records to arrive.
constexpr std::chrono::milliseconds kMinFetchWait(50);
// The most records, and about the most bytes, one fetch asks for.
constexpr size_t kMaxFetchBatch = 1024;
constexpr int64_t kMaxFetchBytes = 16 << 20;

constexpr char kMsgIdHeader[] = "Nats-Msg-Id";
constexpr char kExpectedLastSubjectSeqHeader[] =
    "Nats-Expected-Last-Subject-Sequence";
constexpr char kWrongLastSequenceText[] = "wrong last sequence: ";

// The position in "wrong last sequence: <n>", the stream's answer to a
// failed fence.
std::optional<uint64_t> PositionInFenceError(std::string_view text) {
  const size_t at = text.find(kWrongLastSequenceText);
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = text.data() + at + strlen(kWrongLastSequenceText);
  const char* end = text.data() + text.size();
  uint64_t position = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, position);
  if (ec != std::errc() || ptr == begin) return std::nullopt;
  return position;
}

class JetStreamEventLog final : public EventLog {
 public:
  JetStreamEventLog(EventLogConfig config, std::shared_ptr<NatsClient> client)
      : config_(std::move(config)),
        client_(std::move(client)),
        nc_(client_->connection()),
        js_(client_->jetstream()),
        subjects_(config_.subject_prefix + ".w.>"),
        worker_subject_prefix_(config_.subject_prefix + ".w.") {
    const size_t server_max = client_->max_payload();
    max_payload_bytes_ =
        server_max > kHeaderMargin ? server_max - kHeaderMargin : 0;
  }

  ~JetStreamEventLog() override { DropConsumer(); }

  // Creates the stream, or checks the one that is there.
  absl::Status EnsureStream();

  absl::StatusOr<AppendAck> Append(
      std::string_view worker_id, std::string_view payload,
      std::string_view dedup_id,
      std::optional<uint64_t> expected_last) override;
  absl::StatusOr<uint64_t> LastPositionOf(std::string_view worker_id) override;
  absl::StatusOr<std::vector<LoggedRecord>> Read(
      uint64_t from, size_t max_records,
      std::chrono::milliseconds wait) override;
  absl::StatusOr<LogBounds> Bounds() override;
  absl::Status TrimBefore(uint64_t position) override;
  size_t max_payload_bytes() const override { return max_payload_bytes_; }
  // The stream's name, the subject prefix and the creation time the stream
  // reported when it was opened.
  std::optional<LogIdentity> identity() const override {
    return LogIdentity{.stream = config_.stream,
                       .subject_prefix = config_.subject_prefix,
                       .created_unix_ns = created_unix_ns_};
  }

 private:
  std::string SubjectOf(std::string_view worker_id) const {
    return absl::StrCat(worker_subject_prefix_,
                        absl::BytesToHexString(AbslView(worker_id)));
  }
  // The worker a subject belongs to; empty when the subject is not one
  // SubjectOf makes.
  std::string WorkerOf(std::string_view subject) const;

  // Also records the stream's replicas.
  absl::Status CheckStream(const jsStreamInfo& info);
  // REQUIRES: read_mu_ held.
  absl::Status StartConsumer(uint64_t from);
  void DropConsumer();
  // One attempt at Read's work; `retry` is set when the consumer was lost
  // and a fresh one may succeed. REQUIRES: read_mu_ held.
  absl::StatusOr<std::vector<LoggedRecord>> ReadLocked(
      uint64_t from, size_t max_records, std::chrono::milliseconds wait,
      bool& retry);
  // After a read that found nothing: true when the stream's leader holds
  // records from next_ on that a last short fetch does not deliver either,
  // so the consumer is stuck (it is gone, or lives on a node that died).
  // Records that fetch does deliver are added to `out`. UNAVAILABLE when
  // the leader does not answer: the fetch's timeout then says nothing
  // about the stream.
  absl::StatusOr<bool> ConsumerIsStuck(std::vector<LoggedRecord>& out);
  // Fetches into `out`; NATS_TIMEOUT and NATS_NOT_FOUND mean "nothing".
  natsStatus Fetch(jsFetchRequest& request, std::vector<LoggedRecord>& out,
                   jsErrCode& jerr);

  const EventLogConfig config_;
  const std::shared_ptr<NatsClient> client_;
  natsConnection* const nc_;
  jsCtx* const js_;
  const std::string subjects_;
  const std::string worker_subject_prefix_;
  size_t max_payload_bytes_ = 0;
  // The replicas of the stream as it is (EnsureStream): the reader's
  // consumer gets as many, so that it outlives a node of an R=3 stream.
  int64_t stream_replicas_ = 1;
  // The stream's creation time as it reported it (EnsureStream).
  int64_t created_unix_ns_ = 0;

  // The highest position TrimBefore was called with.
  std::atomic<uint64_t> trimmed_below_{0};
  std::mutex read_mu_;
  // The pull consumer of the last Read and the position it delivers next.
  natsSubscription* sub_ = nullptr;  // guarded by read_mu_
  uint64_t next_ = 0;                // guarded by read_mu_
  uint64_t delivered_ = 0;  // the consumer's last delivery; by read_mu_
};

std::string JetStreamEventLog::WorkerOf(std::string_view subject) const {
  if (!subject.starts_with(worker_subject_prefix_)) return "";
  const std::string_view hex = subject.substr(worker_subject_prefix_.size());
  if (hex.empty() || hex.size() % 2 != 0) return "";
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  }
  return absl::HexStringToBytes(AbslView(hex));
}

absl::Status JetStreamEventLog::CheckStream(const jsStreamInfo& info) {
  const jsStreamConfig* cfg = info.Config;
  if (cfg == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "stream ", config_.stream, " answered without its configuration"));
  }
  std::vector<std::string> subjects;
  for (int i = 0; i < cfg->SubjectsLen; ++i) {
    subjects.emplace_back(cfg->Subjects[i]);
  }
  if (subjects != std::vector<std::string>{subjects_}) {
    return absl::FailedPreconditionError(
        absl::StrCat("stream ", config_.stream, " (", kNatsStreamVar,
                     ") exists with subjects [", absl::StrJoin(subjects, ", "),
                     "], but the event log needs exactly [", subjects_, "] (",
                     kNatsSubjectPrefixVar, "=", config_.subject_prefix,
                     "): choose another stream name or subject prefix"));
  }
  if (cfg->Retention != js_LimitsPolicy) {
    return absl::FailedPreconditionError(absl::StrCat(
        "stream ", config_.stream, " (", kNatsStreamVar,
        ") does not use the limits retention policy: the event log keeps "
        "records until they are trimmed, not until they are consumed"));
  }
  stream_replicas_ = std::max<int64_t>(cfg->Replicas, 1);
  created_unix_ns_ = info.Created;
  if (cfg->Replicas != static_cast<int64_t>(config_.replicas)) {
    spdlog::warn(
        "event log stream {} has {} replicas, not the {} of {}; keeping the "
        "stream as it is",
        config_.stream, cfg->Replicas, config_.replicas, kNatsReplicasVar);
  }
  const int64_t window_ns = int64_t{config_.dedup_window_ms} * 1000000;
  if (cfg->Duplicates != window_ns) {
    spdlog::warn(
        "event log stream {} de-duplicates over {} ms, not the {} ms of {}; "
        "keeping the stream as it is",
        config_.stream, cfg->Duplicates / 1000000, config_.dedup_window_ms,
        kNatsDedupWindowVar);
  }
  return absl::OkStatus();
}

absl::Status JetStreamEventLog::EnsureStream() {
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s =
      js_GetStreamInfo(&raw, js_, config_.stream.c_str(), nullptr, &jerr);
  JsStreamInfoPtr info(raw);
  if (s == NATS_OK) return CheckStream(*info);
  if (s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
    return NatsUnavailable(
        absl::StrCat("cannot look up stream ", config_.stream), s, jerr);
  }
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  const char* subjects[] = {subjects_.c_str()};
  cfg.Name = config_.stream.c_str();
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_FileStorage;
  cfg.Retention = js_LimitsPolicy;
  cfg.Replicas = config_.replicas;
  cfg.Duplicates = int64_t{config_.dedup_window_ms} * 1000000;
  raw = nullptr;
  jerr = static_cast<jsErrCode>(0);
  s = js_AddStream(&raw, js_, &cfg, nullptr, &jerr);
  info.reset(raw);
  if (s == NATS_OK) {
    stream_replicas_ = std::max<int64_t>(config_.replicas, 1);
    created_unix_ns_ = info->Created;
    spdlog::info("created event log stream {} subjects={} replicas={}",
                 config_.stream, subjects_, config_.replicas);
    return absl::OkStatus();
  }
  if (jerr == JSStreamNameExistErr) {
    // Another process created it meanwhile: check theirs.
    raw = nullptr;
    s = js_GetStreamInfo(&raw, js_, config_.stream.c_str(), nullptr, &jerr);
    info.reset(raw);
    if (s == NATS_OK) return CheckStream(*info);
  }
  if (jerr != 0 && s != NATS_TIMEOUT) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create stream ", config_.stream, " (",
                     kNatsStreamVar, ", ", kNatsReplicasVar, "=",
                     config_.replicas, "): ", DescribeNatsFailure(s, jerr)));
  }
  return NatsUnavailable(absl::StrCat("cannot create stream ", config_.stream),
                         s, jerr);
}

absl::StatusOr<AppendAck> JetStreamEventLog::Append(
    std::string_view worker_id, std::string_view payload,
    std::string_view dedup_id, std::optional<uint64_t> expected_last) {
  if (worker_id.empty()) {
    return absl::InvalidArgumentError("an empty worker id cannot be logged");
  }
  if (payload.size() > max_payload_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a record of ", payload.size(), " bytes is above the log's limit of ",
        max_payload_bytes_));
  }
  const std::string subject = SubjectOf(worker_id);
  natsMsg* raw = nullptr;
  natsStatus s = natsMsg_Create(&raw, subject.c_str(), nullptr, payload.data(),
                                static_cast<int>(payload.size()));
  NatsMsgPtr msg(raw);
  if (s != NATS_OK) {
    return absl::InternalError(
        absl::StrCat("cannot build a message: ", NatsErrorText(s)));
  }
  if (!dedup_id.empty()) {
    s = natsMsgHeader_Set(msg.get(), kMsgIdHeader,
                          std::string(dedup_id).c_str());
    if (s != NATS_OK) {
      return absl::InvalidArgumentError(
          absl::StrCat("unusable dedup id: ", NatsErrorText(s)));
    }
  }
  if (expected_last.has_value()) {
    // Set here rather than through jsPubOptions, which leaves out a zero
    // ("nothing under this worker yet").
    s = natsMsgHeader_Set(msg.get(), kExpectedLastSubjectSeqHeader,
                          absl::StrCat(*expected_last).c_str());
    if (s != NATS_OK) {
      return absl::InternalError(
          absl::StrCat("cannot set the fence header: ", NatsErrorText(s)));
    }
  }
  jsPubOptions pub_opts;
  jsPubOptions_Init(&pub_opts);
  pub_opts.MaxWait = client_->timeout_ms();
  jsPubAck* ack_raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  s = js_PublishMsg(&ack_raw, js_, msg.get(), &pub_opts, &jerr);
  JsPubAckPtr ack(ack_raw);
  if (s == NATS_OK && ack != nullptr) {
    return AppendAck{.position = ack->Sequence, .duplicate = ack->Duplicate};
  }
  if (jerr == JSStreamWrongLastSequenceErr) {
    const std::string text = NatsErrorText(s);
    std::optional<uint64_t> found = PositionInFenceError(text);
    if (!found.has_value()) {
      absl::StatusOr<uint64_t> last = LastPositionOf(worker_id);
      if (last.ok()) found = *last;
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", absl::CHexEscape(AbslView(worker_id)),
        "'s last record is at ",
        found.has_value() ? absl::StrCat(*found) : std::string("(unknown)"),
        ", not at ", expected_last.value_or(0),
        ": another writer appended for this worker"));
  }
  return NatsUnavailable(absl::StrCat("append to stream ", config_.stream), s,
                         jerr);
}

absl::StatusOr<uint64_t> JetStreamEventLog::LastPositionOf(
    std::string_view worker_id) {
  natsMsg* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetLastMsg(&raw, js_, config_.stream.c_str(),
                    SubjectOf(worker_id).c_str(), nullptr, &jerr);
  NatsMsgPtr msg(raw);
  if (s == NATS_OK) return natsMsg_GetSequence(msg.get());
  if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) return uint64_t{0};
  return NatsUnavailable(
      absl::StrCat("cannot read the last record of a worker in stream ",
                   config_.stream),
      s, jerr);
}

absl::StatusOr<LogBounds> JetStreamEventLog::Bounds() {
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetStreamInfo(&raw, js_, config_.stream.c_str(), nullptr, &jerr);
  JsStreamInfoPtr info(raw);
  if (s != NATS_OK) {
    return NatsUnavailable(absl::StrCat("cannot read stream ", config_.stream),
                           s, jerr);
  }
  const jsStreamState& state = info->State;
  // An empty stream reports first == last + 1, except one that never held
  // anything, which reports 0 and 0.
  if (state.Msgs == 0) {
    return LogBounds{.first = state.LastSeq + 1, .last = state.LastSeq};
  }
  return LogBounds{.first = state.FirstSeq, .last = state.LastSeq};
}

absl::Status JetStreamEventLog::TrimBefore(uint64_t position) {
  // Purging up to sequence 0 would purge everything; below 2 there is
  // nothing to remove.
  if (position <= 1) return absl::OkStatus();
  jsOptions opts;
  jsOptions_Init(&opts);
  opts.Stream.Purge.Sequence = position;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_PurgeStream(js_, config_.stream.c_str(), &opts, &jerr);
  if (s != NATS_OK) {
    return NatsUnavailable(absl::StrCat("cannot trim stream ", config_.stream),
                           s, jerr);
  }
  uint64_t seen = trimmed_below_.load();
  while (seen < position &&
         !trimmed_below_.compare_exchange_weak(seen, position)) {
  }
  return absl::OkStatus();
}

void JetStreamEventLog::DropConsumer() {
  if (sub_ == nullptr) return;
  // Unsubscribing removes the ephemeral consumer; without a connection the
  // server drops it by itself once it sits idle.
  if (natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED) {
    natsSubscription_Unsubscribe(sub_);
  }
  natsSubscription_Destroy(sub_);
  sub_ = nullptr;
  next_ = 0;
  delivered_ = 0;
}

absl::Status JetStreamEventLog::StartConsumer(uint64_t from) {
  DropConsumer();
  jsSubOptions sub_opts;
  jsSubOptions_Init(&sub_opts);
  sub_opts.Stream = config_.stream.c_str();
  sub_opts.Config.DeliverPolicy = js_DeliverByStartSequence;
  sub_opts.Config.OptStartSeq = from;
  sub_opts.Config.AckPolicy = js_AckNone;
  sub_opts.Config.InactiveThreshold = kConsumerInactiveNanos;
  // An ephemeral consumer is a single copy unless asked otherwise, and one
  // made while a node is down may even be placed on that node (nats-server
  // before 2.12): as many copies as the stream keeps it alive through the
  // loss of a node. Its state is only what it delivered, so memory does.
  sub_opts.Config.Replicas = stream_replicas_;
  sub_opts.Config.MemoryStorage = stream_replicas_ > 1;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsSubscription* sub = nullptr;
  const natsStatus s = js_PullSubscribe(&sub, js_, subjects_.c_str(), nullptr,
                                        nullptr, &sub_opts, &jerr);
  if (s != NATS_OK) {
    natsSubscription_Destroy(sub);
    return NatsUnavailable(
        absl::StrCat("cannot start reading stream ", config_.stream), s, jerr);
  }
  // Fetches bound what each delivers; the client holds whatever arrives.
  natsSubscription_SetPendingLimits(sub, -1, -1);
  sub_ = sub;
  next_ = from;
  delivered_ = 0;
  return absl::OkStatus();
}

natsStatus JetStreamEventLog::Fetch(jsFetchRequest& request,
                                    std::vector<LoggedRecord>& out,
                                    jsErrCode& jerr) {
  natsMsgList list{};
  jerr = static_cast<jsErrCode>(0);
  const natsStatus s = natsSubscription_FetchRequest(&list, sub_, &request);
  bool lost = false;
  for (int i = 0; i < list.Count && !lost; ++i) {
    natsMsg* msg = list.Msgs[i];
    jsMsgMetaData* meta_raw = nullptr;
    lost = natsMsg_GetMetaData(&meta_raw, msg) != NATS_OK;
    JsMetaDataPtr meta(meta_raw);
    // The consumer numbers its deliveries 1, 2, ...: a gap is a delivery
    // lost on the way, which would look like a trim, and a server that
    // restarted can number them anew. Stop before either; a new consumer
    // reads on from the next position.
    if (lost || meta->Sequence.Consumer != delivered_ + 1) {
      lost = true;
      break;
    }
    delivered_ = meta->Sequence.Consumer;
    const uint64_t position = meta->Sequence.Stream;
    next_ = position + 1;
    // A fetch the client gave up on stays open on the server until it
    // expires, and what it gets then waits here for the next Read: it may
    // have been trimmed meanwhile. Trims made through this object are
    // honoured; one made elsewhere in that window is not seen.
    if (position < trimmed_below_.load()) continue;
    const char* data = natsMsg_GetData(msg);
    out.push_back(LoggedRecord{
        .position = position,
        .worker_id = WorkerOf(natsMsg_GetSubject(msg)),
        .payload =
            std::string(data == nullptr ? "" : data,
                        static_cast<size_t>(natsMsg_GetDataLength(msg)))});
  }
  natsMsgList_Destroy(&list);
  if (lost) {
    spdlog::warn(
        "event log stream {}: deliveries out of sequence (one lost on the "
        "way, or the server restarted); reading on from position {} with a "
        "new consumer",
        config_.stream, next_);
    const uint64_t resume = next_;
    DropConsumer();
    next_ = resume;
  }
  return s;
}

absl::StatusOr<bool> JetStreamEventLog::ConsumerIsStuck(
    std::vector<LoggedRecord>& out) {
  // A consumer Fetch dropped is replaced by the next Read anyway.
  if (sub_ == nullptr) return false;
  // The stream's leader answers for the stream, whichever node the
  // consumer lives on. Without an answer the connection is at fault, and a
  // new consumer would not fare better.
  absl::StatusOr<LogBounds> bounds = Bounds();
  if (!bounds.ok()) return bounds.status();
  if (bounds->last < bounds->first || bounds->last < next_) return false;
  // Records may have arrived since the fetch gave up: one last short fetch
  // tells those apart from a consumer that delivers nothing.
  jsFetchRequest request;
  jsFetchRequest_Init(&request);
  request.Batch = 1;
  request.NoWait = true;
  request.Expires = kMinFetchWait.count() * int64_t{1000000};
  jsErrCode jerr = static_cast<jsErrCode>(0);
  Fetch(request, out, jerr);
  return out.empty() && sub_ != nullptr;
}

absl::StatusOr<std::vector<LoggedRecord>> JetStreamEventLog::ReadLocked(
    uint64_t from, size_t max_records, std::chrono::milliseconds wait,
    bool& retry) {
  retry = false;
  if (sub_ == nullptr || from != next_) {
    if (absl::Status started = StartConsumer(from); !started.ok()) {
      return started;
    }
  }
  std::vector<LoggedRecord> out;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = NATS_OK;
  // A no-wait pull with an expiry: the server sends what it holds at once
  // (up to the batch), or the first record that arrives before the
  // expiry, and then ends the request.
  //
  // The client gives up on a fetch when its own clock says so, which can
  // be before the server has ended the request: that request stays open on
  // the server until its expiry, and a record arriving meanwhile goes to
  // it, followed by the request's end notice. Both wait in the
  // subscription. A fetch takes queued records first and drops queued
  // notices; one that asks for a batch then sends a request for the rest
  // and waits for that request's end, up to the whole wait, while one that
  // asks for one record and finds it queued sends nothing. So only the
  // first fetch, which waits at most kMinFetchWait, asks for a batch; the
  // fetches after it ask for one record. A fetch can also end early on an
  // earlier request's notice: fetch again until the deadline.
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::max<std::chrono::milliseconds>(wait, kMinFetchWait);
  for (bool first = true;; first = false) {
    auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (remaining.count() <= 0) break;
    // Fetch dropped a consumer that lost a delivery: start where it was.
    // A new consumer has no stale request, and a batch is safe again.
    if (sub_ == nullptr) {
      if (absl::Status started = StartConsumer(next_); !started.ok()) {
        return started;
      }
      first = true;
    }
    jsFetchRequest request;
    jsFetchRequest_Init(&request);
    request.Batch = 1;
    if (first) {
      request.Batch = static_cast<int>(std::min(max_records, kMaxFetchBatch));
      remaining = std::min(remaining, kMinFetchWait);
    }
    request.MaxBytes = kMaxFetchBytes;
    request.NoWait = true;
    request.Expires = remaining.count() * int64_t{1000000};
    s = Fetch(request, out, jerr);
    if (!out.empty()) return out;
    if (s != NATS_OK && s != NATS_NOT_FOUND && s != NATS_TIMEOUT) break;
  }
  if (s == NATS_OK || s == NATS_NOT_FOUND || s == NATS_TIMEOUT) {
    // A fetch that timed out may have reached no server: an empty answer
    // only once the stream's leader has answered (fleet/event_log.h).
    absl::StatusOr<bool> stuck = ConsumerIsStuck(out);
    if (!stuck.ok()) return stuck.status();
    if (!*stuck) return out;
    // Nothing arrived although the stream holds records for this reader:
    // the consumer is gone, or lives on a node that died. Read on with a
    // new one.
    spdlog::warn(
        "event log stream {}: the reader's consumer is gone or stalled; "
        "reading on from position {} with a new consumer",
        config_.stream, next_);
    DropConsumer();
    retry = true;
    return absl::UnavailableError(absl::StrCat(
        "stream ", config_.stream, ": the reader's consumer was lost"));
  }
  // The consumer is gone (the server removed it, or restarted without it)
  // or the connection failed: a fresh consumer may do better.
  DropConsumer();
  retry = true;
  return NatsUnavailable(absl::StrCat("cannot read stream ", config_.stream), s,
                         jerr);
}

absl::StatusOr<std::vector<LoggedRecord>> JetStreamEventLog::Read(
    uint64_t from, size_t max_records, std::chrono::milliseconds wait) {
  from = std::max<uint64_t>(from, 1);
  max_records = std::max<size_t>(max_records, 1);
  std::lock_guard lock(read_mu_);
  bool retry = false;
  absl::StatusOr<std::vector<LoggedRecord>> records =
      ReadLocked(from, max_records, wait, retry);
  if (retry) records = ReadLocked(from, max_records, wait, retry);
  return records;
}

}  // namespace

absl::StatusOr<std::unique_ptr<EventLog>> OpenJetStreamEventLogOn(
    std::shared_ptr<NatsClient> client, const EventLogConfig& config) {
  auto log = std::make_unique<JetStreamEventLog>(config, std::move(client));
  if (absl::Status ensured = log->EnsureStream(); !ensured.ok()) {
    return ensured;
  }
  return log;
}

absl::StatusOr<std::unique_ptr<EventLog>> OpenJetStreamEventLog(
    const EventLogConfig& config) {
  absl::StatusOr<std::shared_ptr<NatsClient>> client =
      NatsClient::Connect(config.nats);
  if (!client.ok()) return client.status();
  return OpenJetStreamEventLogOn(*std::move(client), config);
}

}  // namespace kvindexer::fleet
