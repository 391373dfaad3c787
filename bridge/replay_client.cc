#include "bridge/replay_client.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "bridge/dealer_request.h"

namespace kvindexer::bridge {
namespace {

constexpr uint64_t kReplayEndMarkerSeq = ~uint64_t{0};

std::string BigEndian(uint64_t value) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  return out;
}

uint64_t ReadBigEndian(const zmq::message_t& frame) {
  const auto* bytes = static_cast<const unsigned char*>(frame.data());
  uint64_t value = 0;
  for (size_t i = 0; i < 8; ++i) value = (value << 8) | bytes[i];
  return value;
}

std::string FrameSizes(const std::vector<zmq::message_t>& frames) {
  std::string sizes;
  for (const zmq::message_t& frame : frames) {
    absl::StrAppend(&sizes, sizes.empty() ? "" : ", ", frame.size());
  }
  return sizes;
}

}  // namespace

ReplayClient::ReplayClient(zmq::context_t* context, std::string endpoint,
                           const StopRequest* shutdown,
                           std::chrono::milliseconds reply_timeout,
                           std::chrono::milliseconds page_idle)
    : context_(context),
      endpoint_(std::move(endpoint)),
      shutdown_(shutdown),
      reply_timeout_(reply_timeout),
      page_idle_(page_idle) {}

ReplayResult ReplayClient::Replay(uint64_t start,
                                  std::optional<uint64_t> through) {
  ReplayResult result;
  size_t bytes = 0;
  uint64_t next = start;
  while (true) {
    if (result.pages >= kMaxReplayPages) {
      result.problem =
          absl::StrCat("no END after ", result.pages, " requests (",
                       result.batches.size(), " replies kept)");
      return result;
    }
    const size_t kept = result.batches.size();
    const PageEnd end =
        FetchPage(next, result.pages == 0, through, result, bytes);
    ++result.pages;
    if (end == PageEnd::kEnd) {
      result.complete = true;
      result.problem.clear();
      return result;
    }
    if (end == PageEnd::kFailed) return result;
    if (result.batches.size() == kept) {
      // Cannot happen with a publisher that sends its buffer in order: a
      // page that drops its very first reply is reported as a failure.
      result.problem = absl::StrCat("request from seq ", next,
                                    " brought nothing new: ", result.problem);
      return result;
    }
    next = result.batches.back().seq + 1;
  }
}

ReplayClient::PageEnd ReplayClient::FetchPage(uint64_t start, bool first_page,
                                              std::optional<uint64_t> through,
                                              ReplayResult& result,
                                              size_t& bytes) {
  auto fail = [&result](std::string problem) {
    result.problem = std::move(problem);
    return PageEnd::kFailed;
  };
  // A fresh DEALER per request: a late reply to an earlier, abandoned
  // request (or page) goes to that request's identity and is dropped by the
  // ROUTER, instead of being read here as part of this answer.
  absl::StatusOr<std::unique_ptr<DealerRequest>> request = DealerRequest::Send(
      context_, endpoint_, {std::string(), BigEndian(start)}, shutdown_);
  if (!request.ok()) return fail(std::string(request.status().message()));
  size_t replies = 0;
  while (true) {
    const auto wait = replies == 0 ? reply_timeout_ : page_idle_;
    absl::StatusOr<std::vector<zmq::message_t>> reply =
        (*request)->Receive(DealerRequest::Clock::now() + wait);
    if (!reply.ok()) {
      if (reply.status().code() != absl::StatusCode::kDeadlineExceeded) {
        return fail(absl::StrCat(reply.status().message(), " after ",
                                 result.batches.size(), " replies"));
      }
      if (replies == 0) {
        return fail(absl::StrCat("no reply within ", wait.count(),
                                 " ms to the request from seq ", start, " (",
                                 result.batches.size(), " replies kept)"));
      }
      // The tail of the page, END included, was dropped.
      result.problem = absl::StrCat("replies stopped without END after seq ",
                                    result.batches.back().seq);
      return PageEnd::kCut;
    }
    const std::vector<zmq::message_t>& frames = *reply;
    if (frames.size() != 3 || frames[0].size() != 0 || frames[1].size() != 8) {
      return fail(absl::StrCat("malformed reply: ", frames.size(),
                               " frames of sizes [", FrameSizes(frames),
                               "] bytes; expected [0, 8, payload]"));
    }
    const uint64_t seq = ReadBigEndian(frames[1]);
    if (seq == kReplayEndMarkerSeq) {
      // The ROUTER drops only while its queue to us is full, and what fills
      // the queue is delivered: a page that lost replies brought at least
      // a queue's worth. After that many, END may follow a dropped tail
      // (the queue drained just before it), so it is confirmed by asking
      // again after the run: a fresh request's first message cannot be
      // dropped.
      if (replies >= kReplayTrustedPageReplies) {
        result.problem = absl::StrCat(
            "END after ", replies, " replies; asking again after seq ",
            result.batches.back().seq, " to confirm it");
        return PageEnd::kCut;
      }
      return PageEnd::kEnd;
    }
    if (seq < start) {
      return fail(absl::StrCat("reply seq ", seq,
                               " is below the requested start ", start));
    }
    if (replies == 0 && seq != start && !first_page) {
      // The publisher no longer holds `start` (evicted while we paged), or
      // never sends it: the run cannot be continued.
      return fail(absl::StrCat("hole in the replies: seq ", seq, " after ",
                               start - 1, " (asked again from ", start, ")"));
    }
    if (replies > 0 && seq != result.batches.back().seq + 1) {
      // Dropped replies. Nothing after the run is usable; ask again.
      result.problem = absl::StrCat("hole in the replies: seq ", seq, " after ",
                                    result.batches.back().seq);
      return PageEnd::kCut;
    }
    if (replies >= kMaxReplayBatches) {
      // Enough for one request; the rest comes with the next.
      result.problem = absl::StrCat(kMaxReplayBatches,
                                    " replies to one request; asking again");
      return PageEnd::kCut;
    }
    bytes += frames[2].size();
    if (bytes > kMaxReplayBytes) {
      return fail(absl::StrCat("more than ", kMaxReplayBytes,
                               " bytes of replayed batches"));
    }
    LiveBatch batch;
    batch.seq = seq;
    batch.payload = frames[2].to_string();
    result.batches.push_back(std::move(batch));
    ++replies;
    // Everything the caller needs is here; the rest of the page (and its
    // END) goes to a socket that is about to close.
    if (through && seq >= *through) return PageEnd::kEnd;
  }
}

}  // namespace kvindexer::bridge
