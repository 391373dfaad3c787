#include "fleet/jetstream_snapshot_store.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace kvindexer::fleet {
namespace {

using ::kvindexer::fleet::v1::SnapshotManifest;

// Room left under the server's max_payload for the headers a part carries
// and the protocol's own framing.
constexpr size_t kHeaderMargin = 4096;
// A reading consumer left behind (its reader died) is removed by the
// server after this long.
constexpr int64_t kConsumerInactiveNanos = int64_t{60} * 1000000000;
// The most parts, and about the most bytes, one fetch asks for.
constexpr int kFetchBatch = 16;
constexpr int64_t kMaxFetchBytes = 32 << 20;

constexpr char kPartHeader[] = "Kvi-Part";
constexpr char kExpectedLastSubjectSeqHeader[] =
    "Nats-Expected-Last-Subject-Sequence";

bool ValidId(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

class JetStreamSnapshotStore final : public SnapshotStore {
 public:
  JetStreamSnapshotStore(std::shared_ptr<NatsClient> client,
                         const EventLogConfig& config)
      : client_(std::move(client)),
        js_(client_->jetstream()),
        stream_(config.stream + "_SNAPSHOTS"),
        subjects_(config.subject_prefix + ".snap.>"),
        snap_prefix_(config.subject_prefix + ".snap."),
        replicas_(config.replicas) {
    const size_t server_max = client_->max_payload();
    max_part_bytes_ =
        server_max > kHeaderMargin ? server_max - kHeaderMargin : 0;
  }

  // Creates the stream, or checks the one that is there.
  absl::Status EnsureStream();

  absl::StatusOr<std::unique_ptr<Writer>> Begin(std::string_view id) override;
  absl::StatusOr<std::vector<SnapshotManifest>> List() override;
  absl::Status ReadParts(
      const SnapshotManifest& manifest,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) override;
  absl::Status Delete(const SnapshotManifest& manifest) override;
  absl::StatusOr<size_t> RemoveAbandoned(
      const SnapshotManifest& oldest_kept) override;
  absl::StatusOr<std::unique_ptr<PayloadWriter>> BeginPayload(
      std::string_view id) override;
  absl::Status ReadPayload(
      std::string_view id, uint64_t parts,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part) override;
  absl::StatusOr<std::vector<std::string>> PayloadsStoredBefore(
      const SnapshotManifest& snapshot) override;
  absl::Status DeletePayload(std::string_view id) override;
  size_t max_part_bytes() const override { return max_part_bytes_; }

 private:
  class JetStreamWriter;
  class JetStreamPayloadWriter;
  struct Stored {
    SnapshotManifest manifest;
    uint64_t sequence = 0;  // the manifest's: commit order
  };

  std::string PartsSubject(std::string_view id) const {
    return absl::StrCat(snap_prefix_, AbslView(id), ".p");
  }
  std::string ManifestSubject(std::string_view id) const {
    return absl::StrCat(snap_prefix_, AbslView(id), ".m");
  }
  std::string PayloadSubject(std::string_view id) const {
    return absl::StrCat(snap_prefix_, AbslView(id), ".c");
  }

  absl::Status CheckStream(const jsStreamInfo& info) const;
  // The stream's subjects matching `filter` and how many messages each
  // holds.
  absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> SubjectsOf(
      const std::string& filter);
  // The id in a subject PartsSubject or ManifestSubject made.
  std::string_view IdOf(std::string_view subject) const {
    subject.remove_prefix(std::min(snap_prefix_.size(), subject.size()));
    subject.remove_suffix(std::min<size_t>(2, subject.size()));
    return subject;
  }
  // The manifest under `subject`, nullopt when there is none.
  absl::StatusOr<std::optional<Stored>> ManifestAt(const std::string& subject);
  // The stream sequence of `manifest`'s stored manifest; NOT_FOUND when it
  // is gone.
  absl::StatusOr<uint64_t> ManifestSequence(const SnapshotManifest& manifest);
  // Publishes with the per-subject fence `expected_last` (0: nothing under
  // the subject yet); the stream sequence. FAILED_PRECONDITION when the
  // fence fails.
  absl::StatusOr<uint64_t> Publish(natsMsg* msg, uint64_t expected_last);
  absl::Status Purge(const std::string& subject);
  // Publishes part number `index` under `subject`, fenced on the stream
  // sequence `last_part` of the part before it (0: none); its sequence.
  absl::StatusOr<uint64_t> PublishPart(const std::string& subject,
                                       uint64_t index, std::string_view part,
                                       uint64_t last_part);
  // Hands the `count` parts under `subject` to `on_part`, in order, checking
  // their numbers. `what` names them in errors; `gone` answers NOT_FOUND
  // when they were removed meanwhile (checked before a shortfall is blamed
  // on the server).
  absl::Status FetchParts(
      const std::string& subject, std::string_view what, uint64_t count,
      absl::FunctionRef<absl::Status()> gone,
      absl::FunctionRef<absl::Status(std::string_view part)> on_part);
  // The number of messages under `subject`.
  absl::StatusOr<uint64_t> CountOf(const std::string& subject);
  using WritingSet = std::set<std::string, std::less<>>;
  // Claims `id` for a writer of `kind` ("snapshot" or "payload"): the id
  // must be valid, not claimed in `writing` and not stored (`stored`, asked
  // under mu_); on OK it is in `writing` until its writer ends. Takes mu_.
  absl::Status Claim(std::string_view kind, std::string_view id,
                     WritingSet& writing,
                     absl::FunctionRef<absl::StatusOr<bool>()> stored);
  // The last message under `subject`, null when there is none; UNAVAILABLE
  // with `what` when the stream cannot answer.
  absl::StatusOr<NatsMsgPtr> LastMessageOf(const std::string& subject,
                                           const std::string& what);
  // The stream sequence of the last message under `subject`; nullopt when
  // there is none.
  absl::StatusOr<std::optional<uint64_t>> LastSequenceOf(
      const std::string& subject);
  // Forgets an id a writer of this object had in use.
  void Release(const std::string& id);
  void ReleasePayload(const std::string& id);

  const std::shared_ptr<NatsClient> client_;
  jsCtx* const js_;
  const std::string stream_;
  const std::string subjects_;
  const std::string snap_prefix_;
  const uint32_t replicas_;
  size_t max_part_bytes_ = 0;

  std::mutex mu_;
  // Ids of this object's writers that are not committed or abandoned yet.
  WritingSet writing_;  // guarded by mu_
  // Ids of this object's payload writers.
  WritingSet writing_payloads_;  // guarded by mu_
};

class JetStreamSnapshotStore::JetStreamWriter final
    : public SnapshotStore::Writer {
 public:
  JetStreamWriter(JetStreamSnapshotStore* store, std::string id)
      : store_(store), id_(std::move(id)) {}

  ~JetStreamWriter() override {
    if (!committed_) {
      // Best effort: a commit that failed on the way may have landed, so
      // its manifest goes first; parts left behind are never listed.
      if (commit_tried_) {
        if (absl::Status s = store_->Purge(store_->ManifestSubject(id_));
            !s.ok()) {
          spdlog::warn("abandoned snapshot {}: {}", id_, s.ToString());
        }
      }
      if (parts_tried_) {
        if (absl::Status s = store_->Purge(store_->PartsSubject(id_));
            !s.ok()) {
          spdlog::warn("abandoned snapshot {}: its parts stay: {}", id_,
                       s.ToString());
        }
      }
    }
    store_->Release(id_);
  }

  absl::Status AddPart(std::string_view part) override {
    if (committed_) {
      return absl::FailedPreconditionError("snapshot already committed");
    }
    if (part.size() > store_->max_part_bytes_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a snapshot part of ", part.size(), " bytes exceeds the limit of ",
          store_->max_part_bytes_));
    }
    parts_tried_ = true;
    absl::StatusOr<uint64_t> sequence = store_->PublishPart(
        store_->PartsSubject(id_), parts_, part, last_part_);
    if (!sequence.ok()) return sequence.status();
    last_part_ = *sequence;
    ++parts_;
    return absl::OkStatus();
  }

  absl::Status Commit(const SnapshotManifest& manifest) override {
    if (committed_) {
      return absl::FailedPreconditionError("snapshot already committed");
    }
    if (manifest.id() != id_ || manifest.parts() != parts_) {
      return absl::InvalidArgumentError(
          absl::StrCat("manifest of \"", manifest.id(), "\" with ",
                       manifest.parts(), " parts does not describe snapshot \"",
                       id_, "\" with ", parts_, " parts"));
    }
    const std::string subject = store_->ManifestSubject(id_);
    const std::string bytes = manifest.SerializeAsString();
    natsMsg* raw = nullptr;
    const natsStatus s =
        natsMsg_Create(&raw, subject.c_str(), nullptr, bytes.data(),
                       static_cast<int>(bytes.size()));
    NatsMsgPtr msg(raw);
    if (s != NATS_OK) {
      return absl::InternalError(
          absl::StrCat("cannot build a message: ", NatsErrorText(s)));
    }
    commit_tried_ = true;
    absl::StatusOr<uint64_t> sequence = store_->Publish(msg.get(), 0);
    if (!sequence.ok()) return sequence.status();
    committed_ = true;
    return absl::OkStatus();
  }

 private:
  JetStreamSnapshotStore* const store_;
  const std::string id_;
  uint64_t parts_ = 0;
  uint64_t last_part_ = 0;  // the stream sequence of the last part
  bool parts_tried_ = false;
  bool commit_tried_ = false;
  bool committed_ = false;
};

class JetStreamSnapshotStore::JetStreamPayloadWriter final
    : public SnapshotStore::PayloadWriter {
 public:
  JetStreamPayloadWriter(JetStreamSnapshotStore* store, std::string id)
      : store_(store), id_(std::move(id)) {}

  ~JetStreamPayloadWriter() override { store_->ReleasePayload(id_); }

  absl::Status AddPart(std::string_view part) override {
    if (part.size() > store_->max_part_bytes_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a payload part of ", part.size(), " bytes exceeds the limit of ",
          store_->max_part_bytes_));
    }
    absl::StatusOr<uint64_t> sequence = store_->PublishPart(
        store_->PayloadSubject(id_), parts_, part, last_part_);
    if (!sequence.ok()) return sequence.status();
    last_part_ = *sequence;
    ++parts_;
    return absl::OkStatus();
  }

 private:
  JetStreamSnapshotStore* const store_;
  const std::string id_;
  uint64_t parts_ = 0;
  uint64_t last_part_ = 0;  // the stream sequence of the last part
};

absl::Status JetStreamSnapshotStore::CheckStream(
    const jsStreamInfo& info) const {
  const jsStreamConfig* cfg = info.Config;
  if (cfg == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "stream ", stream_, " answered without its configuration"));
  }
  std::vector<std::string> subjects;
  for (int i = 0; i < cfg->SubjectsLen; ++i) {
    subjects.emplace_back(cfg->Subjects[i]);
  }
  if (subjects != std::vector<std::string>{subjects_}) {
    return absl::FailedPreconditionError(
        absl::StrCat("snapshot stream ", stream_, " (", kNatsStreamVar,
                     " with _SNAPSHOTS) exists with subjects [",
                     absl::StrJoin(subjects, ", "),
                     "], but the snapshot store needs "
                     "exactly [",
                     subjects_, "] (", kNatsSubjectPrefixVar,
                     "): choose another stream name or subject prefix"));
  }
  if (cfg->Retention != js_LimitsPolicy) {
    return absl::FailedPreconditionError(absl::StrCat(
        "snapshot stream ", stream_, " (", kNatsStreamVar,
        " with _SNAPSHOTS) does not use the limits retention policy: "
        "snapshots are kept until they are deleted"));
  }
  if (cfg->Replicas != static_cast<int64_t>(replicas_)) {
    spdlog::warn(
        "snapshot stream {} has {} replicas, not the {} of {}; keeping the "
        "stream as it is",
        stream_, cfg->Replicas, replicas_, kNatsReplicasVar);
  }
  return absl::OkStatus();
}

absl::Status JetStreamSnapshotStore::EnsureStream() {
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&raw, js_, stream_.c_str(), nullptr, &jerr);
  JsStreamInfoPtr info(raw);
  if (s == NATS_OK) return CheckStream(*info);
  if (s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
    return NatsUnavailable(absl::StrCat("cannot look up stream ", stream_), s,
                           jerr);
  }
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  const char* subjects[] = {subjects_.c_str()};
  cfg.Name = stream_.c_str();
  cfg.Subjects = subjects;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_FileStorage;
  cfg.Retention = js_LimitsPolicy;
  cfg.Replicas = replicas_;
  raw = nullptr;
  jerr = static_cast<jsErrCode>(0);
  s = js_AddStream(&raw, js_, &cfg, nullptr, &jerr);
  info.reset(raw);
  if (s == NATS_OK) {
    spdlog::info("created snapshot stream {} subjects={} replicas={}", stream_,
                 subjects_, replicas_);
    return absl::OkStatus();
  }
  if (jerr == JSStreamNameExistErr) {
    // Another process created it meanwhile: check theirs.
    raw = nullptr;
    s = js_GetStreamInfo(&raw, js_, stream_.c_str(), nullptr, &jerr);
    info.reset(raw);
    if (s == NATS_OK) return CheckStream(*info);
  }
  if (jerr != 0 && s != NATS_TIMEOUT) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create stream ", stream_, " (", kNatsStreamVar,
                     " with _SNAPSHOTS, ", kNatsReplicasVar, "=", replicas_,
                     "): ", DescribeNatsFailure(s, jerr)));
  }
  return NatsUnavailable(absl::StrCat("cannot create stream ", stream_), s,
                         jerr);
}

absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>>
JetStreamSnapshotStore::SubjectsOf(const std::string& filter) {
  jsOptions opts;
  jsOptions_Init(&opts);
  opts.Stream.Info.SubjectsFilter = filter.c_str();
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetStreamInfo(&raw, js_, stream_.c_str(), &opts, &jerr);
  JsStreamInfoPtr info(raw);
  if (s != NATS_OK) {
    return NatsUnavailable(absl::StrCat("cannot read stream ", stream_), s,
                           jerr);
  }
  std::vector<std::pair<std::string, uint64_t>> out;
  const jsStreamStateSubjects* list = info->State.Subjects;
  if (list == nullptr) return out;
  for (int i = 0; i < list->Count; ++i) {
    out.emplace_back(list->List[i].Subject, list->List[i].Msgs);
  }
  return out;
}

absl::StatusOr<std::optional<JetStreamSnapshotStore::Stored>>
JetStreamSnapshotStore::ManifestAt(const std::string& subject) {
  absl::StatusOr<NatsMsgPtr> last = LastMessageOf(
      subject,
      absl::StrCat("cannot read a snapshot manifest in stream ", stream_));
  if (!last.ok()) return last.status();
  if (*last == nullptr) return std::optional<Stored>();
  const NatsMsgPtr& msg = *last;
  Stored stored;
  stored.sequence = natsMsg_GetSequence(msg.get());
  if (!stored.manifest.ParseFromArray(natsMsg_GetData(msg.get()),
                                      natsMsg_GetDataLength(msg.get()))) {
    return absl::DataLossError(absl::StrCat("the snapshot manifest at ",
                                            subject, " in stream ", stream_,
                                            " does not parse"));
  }
  return std::optional<Stored>(std::move(stored));
}

absl::StatusOr<uint64_t> JetStreamSnapshotStore::Publish(
    natsMsg* msg, uint64_t expected_last) {
  // Set here rather than through jsPubOptions, which leaves out a zero.
  natsStatus s = natsMsgHeader_Set(msg, kExpectedLastSubjectSeqHeader,
                                   absl::StrCat(expected_last).c_str());
  if (s != NATS_OK) {
    return absl::InternalError(
        absl::StrCat("cannot set the fence header: ", NatsErrorText(s)));
  }
  jsPubOptions pub_opts;
  jsPubOptions_Init(&pub_opts);
  pub_opts.MaxWait = client_->timeout_ms();
  jsPubAck* ack_raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  s = js_PublishMsg(&ack_raw, js_, msg, &pub_opts, &jerr);
  JsPubAckPtr ack(ack_raw);
  if (s == NATS_OK && ack != nullptr) return ack->Sequence;
  if (jerr == JSStreamWrongLastSequenceErr) {
    return absl::FailedPreconditionError(
        absl::StrCat("another writer wrote under ", natsMsg_GetSubject(msg),
                     " in stream ", stream_));
  }
  return NatsUnavailable(absl::StrCat("cannot write to stream ", stream_), s,
                         jerr);
}

absl::Status JetStreamSnapshotStore::Purge(const std::string& subject) {
  jsOptions opts;
  jsOptions_Init(&opts);
  opts.Stream.Purge.Subject = subject.c_str();
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = js_PurgeStream(js_, stream_.c_str(), &opts, &jerr);
  if (s != NATS_OK) {
    return NatsUnavailable(
        absl::StrCat("cannot purge ", subject, " in stream ", stream_), s,
        jerr);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> JetStreamSnapshotStore::PublishPart(
    const std::string& subject, uint64_t index, std::string_view part,
    uint64_t last_part) {
  natsMsg* raw = nullptr;
  natsStatus s = natsMsg_Create(&raw, subject.c_str(), nullptr, part.data(),
                                static_cast<int>(part.size()));
  NatsMsgPtr msg(raw);
  if (s == NATS_OK) {
    s = natsMsgHeader_Set(msg.get(), kPartHeader, absl::StrCat(index).c_str());
  }
  if (s != NATS_OK) {
    return absl::InternalError(
        absl::StrCat("cannot build a message: ", NatsErrorText(s)));
  }
  // Fenced on the previous part: nothing else lands among the parts.
  return Publish(msg.get(), last_part);
}

absl::StatusOr<uint64_t> JetStreamSnapshotStore::CountOf(
    const std::string& subject) {
  absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> held =
      SubjectsOf(subject);
  if (!held.ok()) return held.status();
  return held->empty() ? 0 : held->front().second;
}

absl::StatusOr<std::optional<uint64_t>> JetStreamSnapshotStore::LastSequenceOf(
    const std::string& subject) {
  absl::StatusOr<NatsMsgPtr> last = LastMessageOf(
      subject, absl::StrCat("cannot read ", subject, " in stream ", stream_));
  if (!last.ok()) return last.status();
  if (*last == nullptr) return std::optional<uint64_t>();
  return std::optional<uint64_t>(natsMsg_GetSequence(last->get()));
}

absl::StatusOr<NatsMsgPtr> JetStreamSnapshotStore::LastMessageOf(
    const std::string& subject, const std::string& what) {
  natsMsg* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetLastMsg(&raw, js_, stream_.c_str(),
                                     subject.c_str(), nullptr, &jerr);
  NatsMsgPtr last(raw);
  if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) return NatsMsgPtr();
  if (s != NATS_OK) return NatsUnavailable(what, s, jerr);
  return last;
}

void JetStreamSnapshotStore::Release(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  writing_.erase(id);
}

void JetStreamSnapshotStore::ReleasePayload(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  writing_payloads_.erase(id);
}

absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>>
JetStreamSnapshotStore::Begin(std::string_view id) {
  absl::Status claimed =
      Claim("snapshot", id, writing_, [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> used =
            SubjectsOf(absl::StrCat(snap_prefix_, AbslView(id), ".*"));
        if (!used.ok()) return used.status();
        // A payload's subject is not a snapshot's.
        const std::string payload_subject = PayloadSubject(id);
        return std::any_of(used->begin(), used->end(),
                           [&](const auto& subject) {
                             return subject.first != payload_subject;
                           });
      });
  if (!claimed.ok()) return claimed;
  return std::unique_ptr<Writer>(
      std::make_unique<JetStreamWriter>(this, std::string(id)));
}

absl::Status JetStreamSnapshotStore::Claim(
    std::string_view kind, std::string_view id, WritingSet& writing,
    absl::FunctionRef<absl::StatusOr<bool>()> stored) {
  if (!ValidId(id)) {
    return absl::InvalidArgumentError(absl::StrCat(
        AbslView(kind), " id \"", AbslView(id), "\" is not [A-Za-z0-9_-]+"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (writing.count(id) != 0) {
    return absl::AlreadyExistsError(absl::StrCat(
        AbslView(kind), " \"", AbslView(id), "\" is being written"));
  }
  absl::StatusOr<bool> exists = stored();
  if (!exists.ok()) return exists.status();
  if (*exists) {
    return absl::AlreadyExistsError(
        absl::StrCat(AbslView(kind), " \"", AbslView(id), "\" exists"));
  }
  writing.emplace(id);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SnapshotManifest>> JetStreamSnapshotStore::List() {
  absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> subjects =
      SubjectsOf(absl::StrCat(snap_prefix_, "*.m"));
  if (!subjects.ok()) return subjects.status();
  std::vector<Stored> committed;
  for (const auto& [subject, count] : *subjects) {
    absl::StatusOr<std::optional<Stored>> stored = ManifestAt(subject);
    if (stored.status().code() == absl::StatusCode::kDataLoss) {
      spdlog::warn("snapshot store: {}; leaving that snapshot out",
                   stored.status().ToString());
      continue;
    }
    if (!stored.ok()) return stored.status();
    // Deleted since the subjects were read.
    if (!stored->has_value()) continue;
    committed.push_back(std::move(**stored));
  }
  std::sort(committed.begin(), committed.end(),
            [](const Stored& a, const Stored& b) {
              if (a.manifest.position() != b.manifest.position()) {
                return a.manifest.position() < b.manifest.position();
              }
              return a.sequence < b.sequence;
            });
  std::vector<SnapshotManifest> out;
  out.reserve(committed.size());
  for (Stored& stored : committed) out.push_back(std::move(stored.manifest));
  return out;
}

absl::Status JetStreamSnapshotStore::ReadParts(
    const SnapshotManifest& manifest,
    absl::FunctionRef<absl::Status(std::string_view part)> on_part) {
  const std::string& id = manifest.id();
  const auto gone = [&]() -> absl::Status {
    absl::StatusOr<std::optional<Stored>> stored =
        ManifestAt(ManifestSubject(id));
    if (!stored.ok()) return stored.status();
    if (!stored->has_value()) {
      return absl::NotFoundError(absl::StrCat("snapshot \"", id, "\" is gone"));
    }
    return absl::OkStatus();
  };
  if (!ValidId(id)) {
    return absl::NotFoundError(
        absl::StrCat("snapshot \"", id, "\" cannot exist: a bad id"));
  }
  if (absl::Status s = gone(); !s.ok()) return s;
  const std::string subject = PartsSubject(id);
  absl::StatusOr<uint64_t> count = CountOf(subject);
  if (!count.ok()) return count.status();
  if (*count != manifest.parts()) {
    if (absl::Status s = gone(); !s.ok()) return s;
    return absl::DataLossError(
        absl::StrCat("snapshot \"", id, "\" holds ", *count,
                     " parts, its manifest says ", manifest.parts()));
  }
  return FetchParts(subject, absl::StrCat("snapshot \"", id, "\""), *count,
                    gone, on_part);
}

absl::Status JetStreamSnapshotStore::FetchParts(
    const std::string& subject, std::string_view what, uint64_t count,
    absl::FunctionRef<absl::Status()> gone,
    absl::FunctionRef<absl::Status(std::string_view part)> on_part) {
  if (count == 0) return absl::OkStatus();
  jsSubOptions sub_opts;
  jsSubOptions_Init(&sub_opts);
  sub_opts.Stream = stream_.c_str();
  sub_opts.Config.DeliverPolicy = js_DeliverAll;
  sub_opts.Config.AckPolicy = js_AckNone;
  sub_opts.Config.InactiveThreshold = kConsumerInactiveNanos;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsSubscription* sub = nullptr;
  natsStatus s = js_PullSubscribe(&sub, js_, subject.c_str(), nullptr, nullptr,
                                  &sub_opts, &jerr);
  const auto close = [&] {
    if (client_->connected()) natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
  };
  if (s != NATS_OK) {
    natsSubscription_Destroy(sub);
    return NatsUnavailable(
        absl::StrCat("cannot read ", AbslView(what), " in stream ", stream_), s,
        jerr);
  }
  natsSubscription_SetPendingLimits(sub, -1, -1);

  uint64_t received = 0;
  uint64_t pending_after = 0;
  absl::Status result;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(client_->timeout_ms());
  while (result.ok() && received < count) {
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
    if (remaining.count() <= 0) {
      result = gone();
      if (result.ok()) {
        result = absl::UnavailableError(
            absl::StrCat(AbslView(what), ": part ", received, " of ", count,
                         " did not arrive in time from stream ", stream_));
      }
      break;
    }
    jsFetchRequest request;
    jsFetchRequest_Init(&request);
    request.Batch = static_cast<int>(
        std::min<uint64_t>(count - received, uint64_t{kFetchBatch}));
    request.MaxBytes = kMaxFetchBytes;
    request.Expires = remaining.count() * int64_t{1000000};
    natsMsgList list{};
    s = natsSubscription_FetchRequest(&list, sub, &request);
    if (list.Count > 0) {
      deadline = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(client_->timeout_ms());
    }
    for (int i = 0; i < list.Count && result.ok(); ++i) {
      natsMsg* msg = list.Msgs[i];
      const char* index_text = nullptr;
      uint64_t index = 0;
      bool numbered =
          natsMsgHeader_Get(msg, kPartHeader, &index_text) == NATS_OK &&
          index_text != nullptr;
      if (numbered) {
        const char* end = index_text + strlen(index_text);
        const auto [ptr, ec] = std::from_chars(index_text, end, index);
        numbered = ec == std::errc() && ptr == end;
      }
      if (!numbered || index != received) {
        result = absl::DataLossError(absl::StrCat(
            AbslView(what), ": part ", received,
            " is missing (the next part found is numbered ",
            numbered ? absl::StrCat(index) : std::string("(none)"), ")"));
        break;
      }
      jsMsgMetaData* meta_raw = nullptr;
      if (natsMsg_GetMetaData(&meta_raw, msg) == NATS_OK) {
        pending_after = meta_raw->NumPending;
      }
      jsMsgMetaData_Destroy(meta_raw);
      const char* data = natsMsg_GetData(msg);
      result = on_part(
          std::string_view(data == nullptr ? "" : data,
                           static_cast<size_t>(natsMsg_GetDataLength(msg))));
      ++received;
    }
    natsMsgList_Destroy(&list);
    if (!result.ok()) break;
    if (s != NATS_OK && s != NATS_TIMEOUT && s != NATS_NOT_FOUND) {
      result = NatsUnavailable(
          absl::StrCat("cannot read ", AbslView(what), " in stream ", stream_),
          s, static_cast<jsErrCode>(0));
    }
  }
  close();
  if (!result.ok()) return result;
  if (pending_after != 0) {
    return absl::DataLossError(absl::StrCat(
        AbslView(what), " holds more than the ", count, " parts expected"));
  }
  return absl::OkStatus();
}

absl::Status JetStreamSnapshotStore::Delete(const SnapshotManifest& manifest) {
  if (!ValidId(manifest.id())) return absl::OkStatus();  // cannot exist
  if (absl::Status s = Purge(ManifestSubject(manifest.id())); !s.ok()) {
    return s;
  }
  return Purge(PartsSubject(manifest.id()));
}

absl::StatusOr<uint64_t> JetStreamSnapshotStore::ManifestSequence(
    const SnapshotManifest& manifest) {
  absl::StatusOr<std::optional<Stored>> stored =
      ManifestAt(ManifestSubject(manifest.id()));
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) {
    return absl::NotFoundError(
        absl::StrCat("snapshot \"", manifest.id(), "\" is gone"));
  }
  return (*stored)->sequence;
}

absl::StatusOr<size_t> JetStreamSnapshotStore::RemoveAbandoned(
    const SnapshotManifest& oldest_kept) {
  absl::StatusOr<uint64_t> before = ManifestSequence(oldest_kept);
  if (!before.ok()) return before.status();
  absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> manifests =
      SubjectsOf(absl::StrCat(snap_prefix_, "*.m"));
  if (!manifests.ok()) return manifests.status();
  std::set<std::string, std::less<>> committed;
  for (const auto& [subject, count] : *manifests) {
    committed.emplace(IdOf(subject));
  }
  absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> parts =
      SubjectsOf(absl::StrCat(snap_prefix_, "*.p"));
  if (!parts.ok()) return parts.status();
  size_t removed = 0;
  for (const auto& [subject, count] : *parts) {
    const std::string_view id = IdOf(subject);
    if (committed.count(id) != 0) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (writing_.count(id) != 0) continue;
    }
    natsMsg* raw = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_GetLastMsg(&raw, js_, stream_.c_str(),
                                       subject.c_str(), nullptr, &jerr);
    NatsMsgPtr last(raw);
    if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) continue;
    if (s != NATS_OK) {
      return NatsUnavailable(
          absl::StrCat("cannot read ", subject, " in stream ", stream_), s,
          jerr);
    }
    // Written to after the oldest kept snapshot was committed: its writer
    // may still be at work.
    if (natsMsg_GetSequence(last.get()) >= *before) continue;
    if (absl::Status purged = Purge(subject); !purged.ok()) return purged;
    spdlog::info(
        "removed the {} parts of snapshot {}, abandoned before snapshot {} "
        "was committed",
        count, id, oldest_kept.id());
    ++removed;
  }
  return removed;
}

absl::StatusOr<std::unique_ptr<SnapshotStore::PayloadWriter>>
JetStreamSnapshotStore::BeginPayload(std::string_view id) {
  absl::Status claimed =
      Claim("payload", id, writing_payloads_, [&]() -> absl::StatusOr<bool> {
        absl::StatusOr<uint64_t> used = CountOf(PayloadSubject(id));
        if (!used.ok()) return used.status();
        return *used != 0;
      });
  if (!claimed.ok()) return claimed;
  return std::unique_ptr<PayloadWriter>(
      std::make_unique<JetStreamPayloadWriter>(this, std::string(id)));
}

absl::Status JetStreamSnapshotStore::ReadPayload(
    std::string_view id, uint64_t parts,
    absl::FunctionRef<absl::Status(std::string_view part)> on_part) {
  const std::string what = absl::StrCat("payload \"", AbslView(id), "\"");
  if (!ValidId(id)) {
    return absl::NotFoundError(absl::StrCat(what, " cannot exist: a bad id"));
  }
  const std::string subject = PayloadSubject(id);
  const auto gone = [&]() -> absl::Status {
    absl::StatusOr<uint64_t> held = CountOf(subject);
    if (!held.ok()) return held.status();
    if (*held == 0) return absl::NotFoundError(absl::StrCat(what, " is gone"));
    return absl::OkStatus();
  };
  absl::StatusOr<uint64_t> count = CountOf(subject);
  if (!count.ok()) return count.status();
  if (*count == 0) return absl::NotFoundError(absl::StrCat(what, " is gone"));
  if (*count != parts) {
    return absl::DataLossError(absl::StrCat(
        what, " holds ", *count, " parts, its log record says ", parts));
  }
  return FetchParts(subject, what, parts, gone, on_part);
}

absl::StatusOr<std::vector<std::string>>
JetStreamSnapshotStore::PayloadsStoredBefore(const SnapshotManifest& snapshot) {
  absl::StatusOr<uint64_t> before = ManifestSequence(snapshot);
  if (!before.ok()) return before.status();
  absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> subjects =
      SubjectsOf(absl::StrCat(snap_prefix_, "*.c"));
  if (!subjects.ok()) return subjects.status();
  std::vector<std::string> out;
  for (const auto& [subject, count] : *subjects) {
    const std::string_view id = IdOf(subject);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (writing_payloads_.count(id) != 0) continue;
    }
    absl::StatusOr<std::optional<uint64_t>> last = LastSequenceOf(subject);
    if (!last.ok()) return last.status();
    if (last->has_value() && **last < *before) out.emplace_back(id);
  }
  return out;
}

absl::Status JetStreamSnapshotStore::DeletePayload(std::string_view id) {
  if (!ValidId(id)) return absl::OkStatus();  // cannot exist
  return Purge(PayloadSubject(id));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SnapshotStore>> OpenJetStreamSnapshotStore(
    std::shared_ptr<NatsClient> client, const EventLogConfig& config) {
  auto store =
      std::make_unique<JetStreamSnapshotStore>(std::move(client), config);
  if (absl::Status ensured = store->EnsureStream(); !ensured.ok()) {
    return ensured;
  }
  return std::unique_ptr<SnapshotStore>(std::move(store));
}

}  // namespace kvindexer::fleet
