#include "bridge/replay_client.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "bridge/dealer_request.h"

namespace kvindexer::bridge {
namespace {

constexpr uint64_t kEndMarkerSeq = ~uint64_t{0};

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

ReplayResult Incomplete(ReplayResult result, std::string problem) {
  result.complete = false;
  result.problem = std::move(problem);
  return result;
}

}  // namespace

ReplayClient::ReplayClient(zmq::context_t* context, std::string endpoint,
                           const ShutdownSignal* shutdown,
                           std::chrono::milliseconds reply_timeout)
    : context_(context),
      endpoint_(std::move(endpoint)),
      shutdown_(shutdown),
      reply_timeout_(reply_timeout) {}

ReplayResult ReplayClient::Replay(uint64_t start) {
  ReplayResult result;
  // A fresh DEALER per request: a late reply to an earlier, abandoned
  // request goes to that request's identity and is dropped by the ROUTER,
  // instead of being read here as part of this answer.
  absl::StatusOr<std::unique_ptr<DealerRequest>> request = DealerRequest::Send(
      context_, endpoint_, {std::string(), BigEndian(start)}, shutdown_);
  if (!request.ok()) {
    return Incomplete(std::move(result),
                      std::string(request.status().message()));
  }
  while (true) {
    absl::StatusOr<std::vector<zmq::message_t>> reply =
        (*request)->Receive(DealerRequest::Clock::now() + reply_timeout_);
    if (!reply.ok()) {
      if (reply.status().code() == absl::StatusCode::kDeadlineExceeded) {
        return Incomplete(
            std::move(result),
            absl::StrCat("no reply within ", reply_timeout_.count(),
                         " ms after ", result.batches.size(),
                         " replies (END marker missing)"));
      }
      return Incomplete(std::move(result),
                        absl::StrCat(reply.status().message(), " after ",
                                     result.batches.size(), " replies"));
    }
    const std::vector<zmq::message_t>& frames = *reply;
    if (frames.size() != 3 || frames[0].size() != 0 || frames[1].size() != 8) {
      std::string sizes;
      for (const zmq::message_t& frame : frames) {
        absl::StrAppend(&sizes, sizes.empty() ? "" : ", ", frame.size());
      }
      return Incomplete(
          std::move(result),
          absl::StrCat("malformed reply: ", frames.size(), " frames of sizes [",
                       sizes, "] bytes; expected [0, 8, payload]"));
    }
    const uint64_t seq = ReadBigEndian(frames[1]);
    if (seq == kEndMarkerSeq) break;
    if (seq < start) {
      return Incomplete(std::move(result),
                        absl::StrCat("reply seq ", seq,
                                     " is below the requested start ", start));
    }
    if (!result.batches.empty() && seq != result.batches.back().seq + 1) {
      const uint64_t previous = result.batches.back().seq;
      return Incomplete(
          std::move(result),
          absl::StrCat("hole in the replies: seq ", seq, " after ", previous));
    }
    if (result.batches.size() >= kMaxReplayBatches) {
      return Incomplete(
          std::move(result),
          absl::StrCat("more than ", kMaxReplayBatches, " replies"));
    }
    LiveBatch batch;
    batch.seq = seq;
    batch.payload = frames[2].to_string();
    result.batches.push_back(std::move(batch));
  }
  result.complete = true;
  return result;
}

}  // namespace kvindexer::bridge
