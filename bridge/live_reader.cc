#include "bridge/live_reader.h"

#include <chrono>
#include <cstring>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "bridge/frame_parser.h"

namespace kvindexer::bridge {
namespace {

// How long one poll may block: bounds how late Stop() is noticed.
constexpr std::chrono::milliseconds kReaderPollSlice{25};

// The live END marker of SGLang's publisher, which the bridge skips.
constexpr uint64_t kEndMarkerSeq = ~uint64_t{0};

// Matches SGLang's publisher high-water mark so that the subscriber side is
// not the tighter bound.
constexpr int kReceiveHighWaterMark = 100000;

std::atomic<uint64_t> next_monitor_id{0};

}  // namespace

LiveReader::LiveReader(zmq::context_t* context, std::string endpoint,
                       std::string topic, LiveBuffer* buffer)
    : context_(context),
      endpoint_(std::move(endpoint)),
      topic_(std::move(topic)),
      buffer_(buffer) {}

LiveReader::~LiveReader() { Stop(); }

absl::Status LiveReader::Start() {
  monitor_endpoint_ = absl::StrCat("inproc://kvindexer-live-reader-monitor-",
                                   next_monitor_id.fetch_add(1));
  try {
    auto sub =
        std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::sub);
    sub->set(zmq::sockopt::linger, 0);
    sub->set(zmq::sockopt::rcvhwm, kReceiveHighWaterMark);
    sub->set(zmq::sockopt::subscribe, topic_);
    // The monitor must be attached, and its reading end connected, before
    // the SUB socket connects, or the first connection event is lost.
    if (zmq_socket_monitor(
            sub->handle(), monitor_endpoint_.c_str(),
            ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) != 0) {
      throw zmq::error_t();
    }
    auto monitor =
        std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::pair);
    monitor->set(zmq::sockopt::linger, 0);
    monitor->connect(monitor_endpoint_);
    sub->connect(endpoint_);
    sub_ = std::move(sub);
    monitor_ = std::move(monitor);
  } catch (const zmq::error_t& e) {
    monitor_.reset();
    sub_.reset();
    return absl::UnavailableError(absl::StrCat(
        "cannot connect ZMQ SUB socket to \"", endpoint_, "\": ", e.what()));
  }
  // The sockets move to the reader thread; starting a thread is the full
  // memory barrier ZMQ asks for when a socket changes threads.
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void LiveReader::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (sub_) zmq_socket_monitor(sub_->handle(), nullptr, 0);
  monitor_.reset();
  sub_.reset();
}

LiveReader::Stats LiveReader::stats() const {
  Stats s;
  s.batches = batches_.load();
  s.malformed = malformed_.load();
  s.end_markers = end_markers_.load();
  s.disconnects = disconnects_.load();
  return s;
}

void LiveReader::Run() {
  while (!stop_.load()) {
    zmq::pollitem_t items[] = {{monitor_->handle(), 0, ZMQ_POLLIN, 0},
                               {sub_->handle(), 0, ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, kReaderPollSlice);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      Fail(absl::StrCat("ZMQ poll failed: ", e.what()));
      return;
    }
    // Connection events first: a disconnect is reported before anything
    // read after it was noticed.
    if ((items[0].revents & ZMQ_POLLIN) != 0 && !HandleMonitorEvent()) return;
    if ((items[1].revents & ZMQ_POLLIN) != 0) DrainSubscriber();
  }
}

bool LiveReader::HandleMonitorEvent() {
  std::vector<zmq::message_t> frames;
  try {
    while (true) {
      zmq::message_t frame;
      if (!monitor_->recv(frame, zmq::recv_flags::dontwait)) break;
      const bool more = frame.more();
      frames.push_back(std::move(frame));
      if (!more) break;
    }
  } catch (const zmq::error_t& e) {
    Fail(absl::StrCat("ZMQ socket monitor failed: ", e.what()));
    return false;
  }
  // Frame 0: a 16-bit event id and a 32-bit value; frame 1: the address.
  if (frames.empty() || frames[0].size() < sizeof(uint16_t)) return true;
  uint16_t event = 0;
  std::memcpy(&event, frames[0].data(), sizeof(event));
  // "Connected" is the completed ZMTP handshake, after which the
  // subscription is on its way; a TCP connection that never completes one
  // (not a ZMQ peer) is reported as neither.
  if (event == ZMQ_EVENT_DISCONNECTED && connected_) {
    // The marker goes first: once the disconnect is known, a message read
    // from the SUB socket may already come from the next connection (a
    // new publisher incarnation), so none may precede the marker. The old
    // connection's last messages may follow it; the engine then treats them
    // as possibly new (docs/bridge-events.md, "Recovery > Watermarks").
    connected_ = false;
    disconnects_.fetch_add(1);
    PushMarker(LiveItem::Kind::kDisconnected);
  } else if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED && !connected_) {
    connected_ = true;
    PushMarker(LiveItem::Kind::kConnected);
  }
  return true;
}

void LiveReader::DrainSubscriber() {
  std::vector<zmq::message_t> frames;
  while (!stop_.load()) {
    frames.clear();
    try {
      // All frames of a multipart message are available together.
      while (true) {
        zmq::message_t frame;
        if (!sub_->recv(frame, zmq::recv_flags::dontwait)) break;
        const bool more = frame.more();
        frames.push_back(std::move(frame));
        if (!more) break;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) {
        spdlog::warn("live reader: ZMQ receive failed: {}", e.what());
      }
      return;
    }
    if (frames.empty()) return;
    PushBatch(frames);
  }
}

void LiveReader::PushBatch(const std::vector<zmq::message_t>& frames) {
  std::vector<std::string_view> views;
  views.reserve(frames.size());
  for (const zmq::message_t& frame : frames) {
    views.emplace_back(static_cast<const char*>(frame.data()), frame.size());
  }
  absl::StatusOr<LiveMessage> message =
      ParseLiveMessage(std::span<const std::string_view>(views));
  LiveItem item;
  if (!message.ok()) {
    item.kind = LiveItem::Kind::kMalformed;
    item.frame_count = frames.size();
    item.detail = std::string(message.status().message());
    malformed_.fetch_add(1);
    buffer_->Push(std::move(item));
    return;
  }
  if (message->seq == kEndMarkerSeq) {
    end_markers_.fetch_add(1);
    return;
  }
  item.kind = LiveItem::Kind::kBatch;
  item.batch.seq = message->seq;
  item.batch.topic = std::string(message->topic);
  item.batch.payload = std::string(message->payload);
  batches_.fetch_add(1);
  buffer_->Push(std::move(item));
}

void LiveReader::Fail(std::string detail) {
  spdlog::error("live reader stopped: {}", detail);
  LiveItem item;
  item.kind = LiveItem::Kind::kReaderFailed;
  item.detail = std::move(detail);
  buffer_->Push(std::move(item));
}

void LiveReader::PushMarker(LiveItem::Kind kind) {
  LiveItem item;
  item.kind = kind;
  buffer_->Push(std::move(item));
}

}  // namespace kvindexer::bridge
