#include "bridge/snapshot_client.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {
namespace {

constexpr absl::string_view kHeader = "header";
constexpr absl::string_view kChunk = "chunk";
constexpr absl::string_view kEnd = "end";
constexpr absl::string_view kError = "error";
// How much of a provider's error message is quoted.
constexpr size_t kMaxErrorMessage = 1024;
// Records reserved from a header's claim before they arrive.
constexpr uint64_t kMaxReserve = uint64_t{1} << 20;

absl::Status Fail(uint32_t version, absl::string_view why) {
  return absl::UnavailableError(absl::StrCat("snapshot-v", version, ": ", why));
}

absl::string_view View(const zmq::message_t& frame) {
  return {static_cast<const char*>(frame.data()), frame.size()};
}

// The records of one fetch, in the layout of its protocol.
class Records {
 public:
  explicit Records(uint32_t version) : version_(version) {}

  // `compare_v2_rank` false: a v2 header's rank is reported in its
  // fields, not compared.
  absl::StatusOr<SnapshotHeader> ParseHeader(absl::string_view payload,
                                             uint32_t rank,
                                             bool compare_v2_rank) const {
    if (version_ != 2) return ParseSnapshotV1Header(payload, rank);
    return ParseSnapshotV2Header(payload, compare_v2_rank
                                              ? std::optional<uint32_t>(rank)
                                              : std::nullopt);
  }
  absl::Status AppendChunk(absl::string_view payload, SnapshotHeader* header) {
    PublisherSnapshot& s = header->snapshot;
    return version_ == 2 ? AppendSnapshotV2Chunk(payload, header->record_count,
                                                 &received_, &s.blocks)
                         : AppendSnapshotV1Chunk(payload, header->record_count,
                                                 &received_, &s.hashes);
  }
  uint64_t received() const { return received_; }

 private:
  const uint32_t version_;
  uint64_t received_ = 0;
};

}  // namespace

std::string_view SnapshotProtocolName(SnapshotProtocol protocol) {
  switch (protocol) {
    case SnapshotProtocol::kAuto:
      return "auto";
    case SnapshotProtocol::kV2:
      return "2";
    case SnapshotProtocol::kV1:
      return "1";
  }
  return "auto";
}

SnapshotClient::SnapshotClient(zmq::context_t* context, std::string endpoint,
                               uint32_t replica_rank,
                               const StopRequest* shutdown,
                               std::chrono::milliseconds fetch_timeout,
                               SnapshotProtocol protocol, bool compare_v2_rank)
    : context_(context),
      endpoint_(std::move(endpoint)),
      replica_rank_(replica_rank),
      shutdown_(shutdown),
      fetch_timeout_(fetch_timeout),
      protocol_(protocol),
      compare_v2_rank_(compare_v2_rank) {}

absl::StatusOr<PublisherSnapshot> SnapshotClient::Fetch() {
  const auto deadline = DealerRequest::Clock::now() + fetch_timeout_;
  if (protocol_ == SnapshotProtocol::kV1) return FetchV1(deadline);
  // snapshot-v2 first every time: a refusal costs one round trip, and a
  // transient error of a v2 publisher, or an upgrade of a v1 one, never
  // leaves the bridge on the tier-blind protocol for longer than a fetch.
  Attempt v2 = FetchVersion(2, deadline);
  if (!v2.refused || protocol_ == SnapshotProtocol::kV2) {
    return std::move(v2.snapshot);
  }
  spdlog::info(
      "{}; asking for snapshot-v1 instead",
      LogText(std::string(v2.snapshot.status().message()), kLogMessageBytes));
  return FetchV1(deadline);
}

absl::StatusOr<PublisherSnapshot> SnapshotClient::FetchV1(
    DealerRequest::Clock::time_point deadline) {
  absl::StatusOr<PublisherSnapshot> v1 = FetchVersion(1, deadline).snapshot;
  if (!v1.ok()) return v1;
  if (!warned_tier_blind_) {
    warned_tier_blind_ = true;
    spdlog::warn(
        "the snapshot publisher at \"{}\" is read with snapshot-v1, which is "
        "tier-blind: every block is installed at HBM, so the index may report "
        "blocks at HBM that the worker holds only in host or disk tiers, or "
        "in EXTERNAL storage",
        endpoint_);
  }
  return v1;
}

SnapshotClient::Attempt SnapshotClient::FetchVersion(
    uint32_t version, DealerRequest::Clock::time_point deadline) {
  Attempt attempt{Fail(version, "not attempted")};
  absl::StatusOr<std::unique_ptr<DealerRequest>> request = DealerRequest::Send(
      context_, endpoint_, {std::string(), absl::StrCat("snapshot-v", version)},
      shutdown_);
  if (!request.ok()) {
    attempt.snapshot = Fail(version, request.status().message());
    return attempt;
  }
  auto fail = [&attempt, version](absl::string_view why) {
    attempt.snapshot = Fail(version, why);
    return std::move(attempt);
  };

  Records records(version);
  std::optional<SnapshotHeader> header;
  while (true) {
    absl::StatusOr<std::vector<zmq::message_t>> reply =
        (*request)->Receive(deadline);
    if (!reply.ok()) {
      if (reply.status().code() == absl::StatusCode::kDeadlineExceeded) {
        return fail(absl::StrCat("no complete snapshot from \"", endpoint_,
                                 "\" within ", fetch_timeout_.count(), " ms"));
      }
      return fail(reply.status().message());
    }
    const std::vector<zmq::message_t>& frames = *reply;
    if (frames.size() != 3 || frames[0].size() != 0) {
      return fail(absl::StrCat("malformed reply of ", frames.size(),
                               " frames; expected [empty, kind, payload]"));
    }
    const absl::string_view kind = View(frames[1]);
    const absl::string_view payload = View(frames[2]);
    if (kind == kError) {
      attempt.refused = !header.has_value();
      return fail(absl::StrCat(
          "the provider answered an error: ",
          payload.substr(0, std::min(payload.size(), kMaxErrorMessage))));
    }
    if (!header.has_value()) {
      if (kind != kHeader) {
        return fail(absl::StrCat("the first reply is \"", kind.substr(0, 32),
                                 "\", not a header"));
      }
      absl::StatusOr<SnapshotHeader> parsed =
          records.ParseHeader(payload, replica_rank_, compare_v2_rank_);
      if (!parsed.ok()) return fail(parsed.status().message());
      header = *std::move(parsed);
      // The claim is only trusted so far before the records arrive.
      const uint64_t reserve = std::min(header->record_count, kMaxReserve);
      if (version == 2) {
        header->snapshot.blocks.reserve(reserve);
      } else {
        header->snapshot.hashes.reserve(reserve);
      }
      continue;
    }
    if (kind == kChunk) {
      absl::Status appended = records.AppendChunk(payload, &*header);
      if (!appended.ok()) return fail(appended.message());
      continue;
    }
    if (kind != kEnd) {
      return fail(
          absl::StrCat("unexpected reply kind \"", kind.substr(0, 32), "\""));
    }
    if (!payload.empty()) {
      return fail(absl::StrCat("the end reply carries ", payload.size(),
                               " payload bytes; expected none"));
    }
    if (records.received() != header->record_count) {
      return fail(absl::StrCat("received ", records.received(),
                               " records; the header declared ",
                               header->record_count));
    }
    attempt.snapshot = std::move(header->snapshot);
    return attempt;
  }
}

}  // namespace kvindexer::bridge
