#include "replica/log_follower.h"

#include <pthread.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "common/log_text.h"
#include "core/stream_log_fields.h"
#include "fmt/format.h"
#include "replica/commit_payload.h"
#include "replica/record_applier.h"
#include "spdlog/spdlog.h"

namespace kvindexer::replica {

LogFollower::LogFollower(fleet::EventLog& log, Indexer& indexer,
                         LogFollowerOptions options)
    : log_(log),
      indexer_(indexer),
      options_(std::move(options)),
      applied_(options_.start_position - 1),
      log_last_(options_.start_position - 1),
      silence_(options_.max_silence, options_.clock->Now()),
      next_(options_.start_position),
      retry_delay_(options_.retry_initial) {}

LogFollower::~LogFollower() { Stop(); }

void LogFollower::Start() {
  silence_.Heard(options_.clock->Now());
  thread_ = std::thread([this] { Run(); });
  if (silence_.enabled()) watch_thread_ = std::thread([this] { Watch(); });
}

void LogFollower::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
}

bool LogFollower::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

uint64_t LogFollower::lag() const {
  // log_last_ first: it only grows and is at least applied_ when stored, so
  // reading applied_ second can only make the difference smaller.
  const uint64_t last = log_last_.load(std::memory_order_acquire);
  const uint64_t applied = applied_.load(std::memory_order_acquire);
  return last > applied ? last - applied : 0;
}

bool LogFollower::caught_up() const {
  return !reloading_.load(std::memory_order_acquire) &&
         awaiting_payload_.load(std::memory_order_acquire) == 0 &&
         !silence_.Exceeded(options_.clock->Now()) &&
         reached_target_.load(std::memory_order_acquire) &&
         lag() <= options_.max_lag_records;
}

std::optional<std::string> LogFollower::NotReadyReason() const {
  return ReasonAt(options_.clock->Now());
}

std::optional<std::string> LogFollower::ReasonAt(
    MonotonicClock::TimePoint now) const {
  // A reload does not ask the log: while it runs, that is the reason.
  if (reloading_.load(std::memory_order_acquire)) {
    return fmt::format(
        "reloading the newest fleet snapshot: records after position {} "
        "were trimmed from the fleet event log before this replica read them",
        applied_position());
  }
  if (const uint64_t awaited =
          awaiting_payload_.load(std::memory_order_acquire)) {
    return fmt::format(
        "waiting for the payload of fleet event log record {} (a staged "
        "snapshot commit whose placements are kept in the snapshot store), "
        "which cannot be fetched yet",
        awaited);
  }
  // Position and lag are as of the last answer: say why they cannot be
  // trusted before what they say.
  if (std::optional<std::string> silent = silence_.Reason(now)) {
    return silent;
  }
  if (!reached_target_.load(std::memory_order_acquire)) {
    return fmt::format(
        "catching up with the fleet event log: applied position {} of {}",
        applied_position(), log_last_position());
  }
  const uint64_t behind = lag();
  if (behind > options_.max_lag_records) {
    return fmt::format(
        "behind the fleet event log by {} records, more than {}={}", behind,
        kFleetMaxLagRecordsVar, options_.max_lag_records);
  }
  return std::nullopt;
}

LogFollowerCounts LogFollower::counts() const {
  return LogFollowerCounts{
      .applied = applied_count_.load(std::memory_order_relaxed),
      .refused = refused_count_.load(std::memory_order_relaxed),
      .undecodable = undecodable_.total(),
      .trimmed = trimmed_count_.load(std::memory_order_relaxed),
      .read_failures = read_failures_.load(std::memory_order_relaxed),
      .reloads = reloads_.load(std::memory_order_relaxed),
      .reload_failures = reload_failures_.load(std::memory_order_relaxed),
      .payload_failures = payload_failures_.load(std::memory_order_relaxed),
  };
}

uint64_t LogFollower::refused_with(absl::StatusCode code) const {
  const size_t i = static_cast<size_t>(code);
  return i < refused_by_code_.size()
             ? refused_by_code_[i].load(std::memory_order_relaxed)
             : 0;
}

void LogFollower::Watch() {
  pthread_setname_np(pthread_self(), "kvidx-log-watch");
  const std::chrono::milliseconds tick = std::clamp<std::chrono::milliseconds>(
      options_.max_silence / 10, std::chrono::milliseconds(10),
      std::chrono::milliseconds(250));
  std::unique_lock<std::mutex> lock(mu_);
  // Scheduling, not synchronisation: the timeout is the tick.
  while (!wake_.wait_for(lock, tick, [this] { return stopping_; })) {
    lock.unlock();
    Report();
    lock.lock();
  }
}

void LogFollower::Run() {
  pthread_setname_np(pthread_self(), "kvidx-follower");
  spdlog::info(
      "following the fleet event log from position {} max_lag_records={} "
      "max_silence_ms={}",
      next_, options_.max_lag_records, options_.max_silence.count());
  Report();
  while (!stopping()) {
    if (Step()) {
      in_contact_.store(true, std::memory_order_release);
      if (options_.after_pass) {
        options_.after_pass(applied_position(),
                            caught_up() && lag() <= options_.batch_records);
      }
      retry_delay_ = options_.retry_initial;
      if (failure_streak_ > 0) {
        spdlog::info(
            "the fleet event log answers again after {} failed "
            "calls; following from position {}",
            failure_streak_, next_);
        failure_streak_ = 0;
      }
    }
  }
}

bool LogFollower::Step() {
  absl::StatusOr<fleet::LogBounds> bounds = log_.Bounds();
  if (!bounds.ok()) {
    WaitToRetry(bounds.status());
    return false;
  }
  Heard(options_.clock->Now());
  if (!catch_up_target_.has_value()) {
    catch_up_target_ = bounds->last;
    spdlog::info(
        "the fleet event log holds positions {} to {}; serving "
        "once this replica has applied up to {}",
        bounds->first, bounds->last, bounds->last);
  }
  // Records gone with nothing after them: Read would answer nothing, so
  // the skip shows only in the bounds.
  if (bounds->first > next_ && bounds->last < bounds->first &&
      CloseGap(bounds->first) == GapOutcome::kReloadFailed) {
    return false;
  }
  ObserveLast(bounds->last);
  Report();

  absl::StatusOr<std::vector<fleet::LoggedRecord>> records =
      log_.Read(next_, options_.batch_records, options_.read_wait);
  if (!records.ok()) {
    WaitToRetry(records.status());
    return false;
  }
  // An answer without records is an answer all the same.
  Heard(options_.clock->Now());
  for (const fleet::LoggedRecord& record : *records) {
    if (stopping()) break;
    if (record.position > next_) {
      const GapOutcome gap = CloseGap(record.position);
      if (gap == GapOutcome::kReloadFailed) return false;
      // The snapshot may cover records of this batch, or not reach them:
      // the next pass reads on from the position after it.
      if (gap == GapOutcome::kReloaded) break;
    }
    const TakeOutcome taken = Take(record);
    if (taken == TakeOutcome::kFailed) return false;
    if (taken == TakeOutcome::kReadAgain) break;
  }
  ObserveLast(0);
  Report();
  return true;
}

LogFollower::TakeOutcome LogFollower::Take(const fleet::LoggedRecord& record) {
  // The log answers in order from next_; anything earlier was seen already.
  if (record.position < next_) return TakeOutcome::kTaken;
  ::kvindexer::fleet::v1::LogRecord decoded;
  std::optional<RecordResult> taken;
  if (!decoded.ParseFromString(record.payload)) {
    taken = ApplyLogRecord(indexer_, record);  // its undecodable answer
  } else if (IsPayloadCommit(decoded) && options_.payloads != nullptr) {
    absl::StatusOr<::kvindexer::fleet::v1::LogRecord> fetched =
        FetchCommitPayload(*options_.payloads, decoded);
    if (absl::IsDataLoss(fetched.status())) {
      taken = RecordResult{RecordOutcome::kUndecodable, fetched.status(), {}};
    } else if (!fetched.ok()) {
      return PayloadUnavailable(record, fetched.status());
    } else {
      decoded = *std::move(fetched);
    }
  }
  if (awaiting_payload_.exchange(0, std::memory_order_acq_rel) != 0) {
    spdlog::info(
        "fetched the payload of fleet event log record {} after {} failed "
        "fetches",
        record.position, payload_streak_);
    Report();
  }
  payload_streak_ = 0;
  const RecordResult result =
      taken.has_value()
          ? *std::move(taken)
          : ApplyDecodedRecord(indexer_, record.worker_id, decoded);
  switch (result.outcome) {
    case RecordOutcome::kApplied:
      applied_count_.fetch_add(1, std::memory_order_relaxed);
      break;
    case RecordOutcome::kRefused: {
      refused_count_.fetch_add(1, std::memory_order_relaxed);
      const size_t code = static_cast<size_t>(result.status.code());
      if (code < refused_by_code_.size()) {
        refused_by_code_[code].fetch_add(1, std::memory_order_relaxed);
      }
      if (const uint64_t total = refusals_logged_.Count()) {
        spdlog::warn(
            "the index refused fleet event log record {} of {}, as every "
            "replica does; skipped ({} refused so far): {}",
            record.position, StreamLogFields(record.worker_id), total,
            LogText(result.status.ToString(), kLogMessageBytes));
      }
      break;
    }
    case RecordOutcome::kUndecodable:
      if (const uint64_t total = undecodable_.Count()) {
        spdlog::error(
            "fleet event log record {} of {} cannot be applied; skipped ({} "
            "so far): {}",
            record.position, StreamLogFields(record.worker_id), total,
            LogText(result.status.ToString(), kLogMessageBytes));
      }
      break;
  }
  next_ = record.position + 1;
  applied_.store(record.position, std::memory_order_release);
  if (options_.outcomes != nullptr) {
    options_.outcomes->Applied(record.position, result);
  }
  return TakeOutcome::kTaken;
}

LogFollower::TakeOutcome LogFollower::PayloadUnavailable(
    const fleet::LoggedRecord& record, const absl::Status& failure) {
  // Gone because the log was trimmed past the record (the snapshot holder
  // removes such payloads): the positions up to the log's first are a gap
  // like any other.
  if (absl::IsNotFound(failure)) {
    absl::StatusOr<fleet::LogBounds> bounds = log_.Bounds();
    if (bounds.ok() && bounds->first > record.position) {
      awaiting_payload_.store(0, std::memory_order_release);
      payload_streak_ = 0;
      return CloseGap(bounds->first) == GapOutcome::kReloadFailed
                 ? TakeOutcome::kFailed
                 : TakeOutcome::kReadAgain;
    }
  }
  payload_failures_.fetch_add(1, std::memory_order_relaxed);
  ++payload_streak_;
  if (awaiting_payload_.exchange(record.position, std::memory_order_acq_rel) !=
          record.position ||
      IsPowerOfTwo(payload_streak_)) {
    spdlog::warn(
        "cannot fetch the payload of fleet event log record {} of {} ({} "
        "failed fetches in a row); NOT_SERVING, retrying in {} ms: {}",
        record.position, StreamLogFields(record.worker_id), payload_streak_,
        retry_delay_.count(), failure.ToString());
  }
  Report();
  Backoff();
  return TakeOutcome::kFailed;
}

LogFollower::GapOutcome LogFollower::CloseGap(uint64_t position) {
  if (!options_.reload) {
    SkipTrimmed(position);
    return GapOutcome::kSkipped;
  }
  if (!reloading_.exchange(true, std::memory_order_acq_rel)) {
    spdlog::warn(
        "fleet event log positions {} to {} were trimmed before this replica "
        "read them; reloading the newest fleet snapshot (NOT_SERVING until "
        "it is loaded)",
        next_, position - 1);
    Report();
  }
  absl::StatusOr<std::optional<uint64_t>> loaded = options_.reload();
  if (!loaded.ok()) {
    reload_failures_.fetch_add(1, std::memory_order_relaxed);
    WaitToRetry(loaded.status());
    return GapOutcome::kReloadFailed;
  }
  if (!loaded->has_value()) {
    reloading_.store(false, std::memory_order_release);
    spdlog::warn("no fleet snapshot to reload; skipping the trimmed records");
    SkipTrimmed(position);
    return GapOutcome::kSkipped;
  }
  const uint64_t covered = **loaded;
  // The fleet's NATS answered the whole reload.
  Heard(options_.clock->Now());
  reloads_.fetch_add(1, std::memory_order_relaxed);
  spdlog::info(
      "reloaded the newest fleet snapshot at position {}; following the log "
      "from {}",
      covered, covered + 1);
  next_ = covered + 1;
  // May go back: the index is now the snapshot's, whatever it held before.
  applied_.store(covered, std::memory_order_release);
  if (options_.outcomes != nullptr) options_.outcomes->Reloaded(covered);
  // Positions the snapshot does not reach are gone all the same: without
  // this a snapshot older than the gap would be reloaded again and again.
  if (next_ < position) SkipTrimmed(position);
  reloading_.store(false, std::memory_order_release);
  return GapOutcome::kReloaded;
}

void LogFollower::SkipTrimmed(uint64_t position) {
  const uint64_t skipped = position - next_;
  trimmed_count_.fetch_add(skipped, std::memory_order_relaxed);
  spdlog::warn(
      "fleet event log positions {} to {} were trimmed before this replica "
      "read them; continuing at {} without their {} records (this replica "
      "may now differ from the others)",
      next_, position - 1, position, skipped);
  next_ = position;
  applied_.store(position - 1, std::memory_order_release);
  if (options_.outcomes != nullptr) options_.outcomes->Skipped(position - 1);
}

void LogFollower::Heard(MonotonicClock::TimePoint now) {
  if (silence_.Exceeded(now)) {
    // Whatever was appended meanwhile is what this replica missed: it is
    // not current until it has read up to the end the log has now (the
    // next Bounds sets the target), however short the lag looks.
    spdlog::info(
        "the fleet event log answers again after {} ms; serving once this "
        "replica has caught up with it",
        silence_.Since(now).count());
    reached_target_.store(false, std::memory_order_release);
    catch_up_target_.reset();
  }
  silence_.Heard(now);
}

void LogFollower::ObserveLast(uint64_t last) {
  const uint64_t applied = applied_.load(std::memory_order_relaxed);
  const uint64_t seen = log_last_.load(std::memory_order_relaxed);
  log_last_.store(std::max({last, applied, seen}), std::memory_order_release);
  if (catch_up_target_.has_value() && applied >= *catch_up_target_ &&
      !reached_target_.load(std::memory_order_relaxed)) {
    reached_target_.store(true, std::memory_order_release);
    spdlog::info("caught up with the fleet event log at position {}", applied);
  }
}

void LogFollower::Report() {
  std::lock_guard<std::mutex> lock(report_mu_);
  const MonotonicClock::TimePoint now = options_.clock->Now();
  const bool silent = silence_.Exceeded(now);
  const bool silence_began = silent && !silence_logged_;
  silence_logged_ = silent;
  if (silence_began) {
    spdlog::warn(
        "{}; health is NOT_SERVING until the log answers and this replica "
        "has caught up with it (reads are still answered from the index as "
        "it is)",
        *silence_.Reason(now));
  }
  std::optional<std::string> behind = ReasonAt(now);
  const bool ready = !behind.has_value();
  if (reported_ready_ == ready) return;
  if (ready && ever_ready_) {
    spdlog::info(
        "current with the fleet event log again at position {}; health is "
        "SERVING",
        applied_position());
  } else if (!ready && ever_ready_ && !silence_began) {
    spdlog::warn(
        "{}; health is NOT_SERVING until this replica is current again "
        "(reads are still answered from the index as it is)",
        *behind);
  }
  reported_ready_ = ready;
  ever_ready_ = ever_ready_ || ready;
  if (options_.on_readiness) options_.on_readiness(std::move(behind));
}

void LogFollower::WaitToRetry(const absl::Status& failure) {
  read_failures_.fetch_add(1, std::memory_order_relaxed);
  in_contact_.store(false, std::memory_order_release);
  ++failure_streak_;
  if (IsPowerOfTwo(failure_streak_)) {
    spdlog::warn(
        "cannot read the fleet event log ({} failed calls in a row); "
        "retrying in {} ms: {}",
        failure_streak_, retry_delay_.count(), failure.ToString());
  }
  Backoff();
}

void LogFollower::Backoff() {
  const std::chrono::milliseconds delay = retry_delay_;
  retry_delay_ = std::min(retry_delay_ * 2, options_.retry_cap);
  std::unique_lock<std::mutex> lock(mu_);
  // Scheduling, not synchronisation: the timeout is the retry delay.
  wake_.wait_for(lock, delay, [this] { return stopping_; });
}

}  // namespace kvindexer::replica
