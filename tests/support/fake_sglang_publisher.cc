#include "tests/support/fake_sglang_publisher.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/support/msgpack_builders.h"

namespace kvindexer::bridge::testing {
namespace {

constexpr char kEpochPrefix[] = "sgl-kv-epoch=";
constexpr char kSnapshotPrefix[] = "sgl-kv-snapshot=";
constexpr size_t kSnapshotChunkRecords = 4096;
// How long one poll of the ROUTER sockets may block; bounds the latency of
// a request and of the destructor.
constexpr std::chrono::milliseconds kPollInterval{10};

// `sndhwm` 0 is unlimited. A ROUTER whose queue to a peer is full drops
// what it is given silently, whatever its send timeout.
zmq::socket_t BindRouter(zmq::context_t& context, std::string* endpoint,
                         int sndhwm) {
  zmq::socket_t socket(context, zmq::socket_type::router);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, sndhwm);
  socket.bind("tcp://127.0.0.1:*");
  *endpoint = socket.get(zmq::sockopt::last_endpoint);
  return socket;
}

std::string EndMarker() { return std::string(8, '\xff'); }

// Receives one whole multipart message without blocking; empty if none.
std::vector<zmq::message_t> ReceiveAll(zmq::socket_t& socket) {
  std::vector<zmq::message_t> frames;
  while (true) {
    zmq::message_t frame;
    const auto got = socket.recv(frame, zmq::recv_flags::dontwait);
    if (!got) break;
    const bool more = frame.more();
    frames.push_back(std::move(frame));
    if (!more) break;
  }
  return frames;
}

void SendFrames(zmq::socket_t& socket, const std::vector<std::string>& frames,
                zmq::send_flags flags = zmq::send_flags::none) {
  for (size_t i = 0; i < frames.size(); ++i) {
    socket.send(zmq::buffer(frames[i]), i + 1 < frames.size()
                                            ? flags | zmq::send_flags::sndmore
                                            : flags);
  }
}

}  // namespace

FakeSglangPublisher::FakeSglangPublisher(Options options)
    : options_(std::move(options)), epoch_(options_.epoch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    BindPubLocked();
    pub_endpoint_ = pub_->get(zmq::sockopt::last_endpoint);
  }
  if (options_.replay) {
    replay_ = BindRouter(context_, &replay_endpoint_, options_.replay_sndhwm);
  }
  // The snapshot ROUTER keeps libzmq's default high-water mark (SGLang sets
  // only a send timeout on it); a whole snapshot is never dropped here.
  if (options_.snapshot) {
    snapshot_ = BindRouter(context_, &snapshot_endpoint_, 0);
  }
  server_ = std::thread([this] { ServeLoop(); });
}

FakeSglangPublisher::~FakeSglangPublisher() {
  stop_ = true;
  server_.join();
}

void FakeSglangPublisher::BindPubLocked() {
  zmq::socket_t socket(context_, zmq::socket_type::xpub);
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::xpub_verbose, 1);
  socket.set(zmq::sockopt::sndhwm, options_.pub_hwm);
  if (pub_endpoint_.empty()) {
    socket.bind("tcp://127.0.0.1:*");
  } else {
    // The old listener is closed asynchronously by ZMQ's I/O thread; the
    // port may still be taken for a moment. Bounded retry.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
      try {
        socket.bind(pub_endpoint_);
        break;
      } catch (const zmq::error_t&) {
        if (std::chrono::steady_clock::now() > deadline) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
  pub_.emplace(std::move(socket));
}

std::string FakeSglangPublisher::LiveTopicLocked() const {
  std::string topic = options_.topic;
  if (epoch_) {
    topic += '\0';
    topic += kEpochPrefix;
    topic += *epoch_;
  }
  return topic;
}

std::string FakeSglangPublisher::LiveTopic() const {
  std::lock_guard<std::mutex> lock(mu_);
  return LiveTopicLocked();
}

std::string FakeSglangPublisher::BarrierTopic(
    const std::string& barrier_id) const {
  std::string topic = LiveTopic();
  topic += '\0';
  topic += kSnapshotPrefix;
  topic += barrier_id;
  return topic;
}

void FakeSglangPublisher::SendLiveLocked(const std::string& topic, uint64_t seq,
                                         const std::string& payload) {
  if (!pub_) return;
  SendFrames(*pub_, {topic, SeqFrame(seq), payload});
}

uint64_t FakeSglangPublisher::AppendLocked(const std::string& payload,
                                           bool send_live,
                                           const std::string& topic) {
  const uint64_t seq = next_seq_++;
  buffer_.push_back({seq, payload});
  if (options_.snapshot) mirror_.Apply(payload);
  while (buffer_.size() > options_.buffer_steps) buffer_.pop_front();
  if (send_live) SendLiveLocked(topic, seq, payload);
  return seq;
}

uint64_t FakeSglangPublisher::Publish(const std::string& payload) {
  std::lock_guard<std::mutex> lock(mu_);
  return AppendLocked(payload, /*send_live=*/true, LiveTopicLocked());
}

uint64_t FakeSglangPublisher::BufferOnly(const std::string& payload) {
  std::lock_guard<std::mutex> lock(mu_);
  return AppendLocked(payload, /*send_live=*/false, LiveTopicLocked());
}

bool FakeSglangPublisher::Resend(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Buffered& b : buffer_) {
    if (b.seq == seq) {
      SendLiveLocked(LiveTopicLocked(), b.seq, b.payload);
      return true;
    }
  }
  return false;
}

uint64_t FakeSglangPublisher::next_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_seq_;
}

void FakeSglangPublisher::SetNextSeq(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  next_seq_ = seq;
}

void FakeSglangPublisher::Restart(std::optional<std::string> new_epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  next_seq_ = 0;
  buffer_.clear();
  mirror_.Clear();
  if (new_epoch) epoch_ = std::move(new_epoch);
}

void FakeSglangPublisher::SetEpoch(std::optional<std::string> epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  epoch_ = std::move(epoch);
}

void FakeSglangPublisher::StopLive() {
  std::lock_guard<std::mutex> lock(mu_);
  DrainSubscriptionsLocked();
  pub_.reset();
}

void FakeSglangPublisher::StartLive() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pub_) BindPubLocked();
}

void FakeSglangPublisher::DrainSubscriptionsLocked() {
  if (!pub_) return;
  while (true) {
    zmq::message_t message;
    if (!pub_->recv(message, zmq::recv_flags::dontwait)) return;
    const auto* bytes = static_cast<const unsigned char*>(message.data());
    if (message.size() > 0 && bytes[0] == 1) ++subscriptions_;
  }
}

size_t FakeSglangPublisher::subscriptions() {
  std::lock_guard<std::mutex> lock(mu_);
  DrainSubscriptionsLocked();
  return subscriptions_;
}

bool FakeSglangPublisher::live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pub_.has_value();
}

void FakeSglangPublisher::OmitFromReplay(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  omitted_.insert(seq);
}

void FakeSglangPublisher::ClearReplayOmissions() {
  std::lock_guard<std::mutex> lock(mu_);
  omitted_.clear();
}

void FakeSglangPublisher::EvictBelow(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  while (!buffer_.empty() && buffer_.front().seq < seq) buffer_.pop_front();
}

void FakeSglangPublisher::SetSnapshotError(std::optional<std::string> message) {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_error_ = std::move(message);
}

void FakeSglangPublisher::SetSnapshotRecords(
    std::vector<SnapshotRecord> records) {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_records_ = std::move(records);
}

std::vector<uint64_t> FakeSglangPublisher::replay_starts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return replay_starts_;
}

std::vector<FakeSglangPublisher::ReplayTiming>
FakeSglangPublisher::replay_timings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return replay_timings_;
}

std::vector<SnapshotRecord> FakeSglangPublisher::SnapshotV1Mirror() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mirror_.V1();
}

std::vector<SnapshotV2Record> FakeSglangPublisher::SnapshotV2Mirror() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mirror_.V2();
}

size_t FakeSglangPublisher::snapshot_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_requests_;
}

size_t FakeSglangPublisher::refused_snapshot_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_snapshot_requests_;
}

size_t FakeSglangPublisher::malformed_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return malformed_requests_;
}

std::vector<uint64_t> FakeSglangPublisher::buffered_seqs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> seqs;
  for (const Buffered& b : buffer_) seqs.push_back(b.seq);
  return seqs;
}

void FakeSglangPublisher::ServeLoop() {
  std::vector<zmq::pollitem_t> items;
  if (replay_) items.push_back({replay_->handle(), 0, ZMQ_POLLIN, 0});
  if (snapshot_) items.push_back({snapshot_->handle(), 0, ZMQ_POLLIN, 0});
  while (!stop_) {
    if (items.empty()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        DrainSubscriptionsLocked();
      }
      std::this_thread::sleep_for(kPollInterval);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      DrainSubscriptionsLocked();
    }
    zmq::poll(items.data(), items.size(), kPollInterval);
    for (const zmq::pollitem_t& item : items) {
      if (!(item.revents & ZMQ_POLLIN)) continue;
      if (replay_ && item.socket == replay_->handle()) ServeReplay();
      if (snapshot_ && item.socket == snapshot_->handle()) ServeSnapshot();
    }
  }
}

void FakeSglangPublisher::ServeReplay() {
  std::vector<zmq::message_t> request = ReceiveAll(*replay_);
  if (request.size() != 3 || request[1].size() != 0 || request[2].size() != 8) {
    std::lock_guard<std::mutex> lock(mu_);
    ++malformed_requests_;
    std::fprintf(stderr,
                 "fake publisher: ignored a replay request of %zu frames\n",
                 request.size());
    return;
  }
  const auto received = std::chrono::steady_clock::now();
  const std::string identity = request[0].to_string();
  uint64_t start = 0;
  const auto* bytes = static_cast<const unsigned char*>(request[2].data());
  for (int i = 0; i < 8; ++i) start = (start << 8) | bytes[i];

  std::vector<Buffered> replies;
  {
    std::lock_guard<std::mutex> lock(mu_);
    replay_starts_.push_back(start);
    for (const Buffered& b : buffer_) {
      if (b.seq >= start && omitted_.count(b.seq) == 0) replies.push_back(b);
    }
  }
  // SGLang's loop: every reply handed to the ROUTER as fast as it goes,
  // never waiting; what does not fit its queue to the client is dropped
  // (the END marker included) without a word.
  for (const Buffered& b : replies) {
    SendFrames(*replay_, {identity, "", SeqFrame(b.seq), b.payload},
               zmq::send_flags::dontwait);
  }
  SendFrames(*replay_, {identity, "", EndMarker(), ""},
             zmq::send_flags::dontwait);
  std::lock_guard<std::mutex> lock(mu_);
  replay_timings_.push_back(
      {received, std::chrono::steady_clock::now(), replies.size()});
}

void FakeSglangPublisher::ServeSnapshot() {
  std::vector<zmq::message_t> request = ReceiveAll(*snapshot_);
  if (request.empty()) return;
  const std::string identity = request[0].to_string();
  const std::string command =
      request.size() == 3 ? request[2].to_string() : std::string();
  const bool v2 = command == "snapshot-v2" &&
                  options_.snapshot_protocols == SnapshotProtocols::kV1AndV2;
  if (request.size() != 3 || request[1].size() != 0 ||
      (command != "snapshot-v1" && !v2)) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++(command == "snapshot-v2" ? refused_snapshot_requests_
                                  : malformed_requests_);
    }
    // What a v1-only SGLang answers every other command with.
    SendFrames(*snapshot_,
               {identity, "", "error", "invalid snapshot-v1 request"});
    return;
  }

  std::optional<std::string> error;
  SnapshotCapture capture;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++snapshot_requests_;
    error = snapshot_error_;
    if (!error && !epoch_) error = "snapshot requires a worker epoch";
    if (!error) {
      capture.epoch = *epoch_;
      capture.barrier_id = "b" + std::to_string(++barriers_);
      std::string topic = LiveTopicLocked();
      topic += '\0';
      topic += kSnapshotPrefix;
      topic += capture.barrier_id;
      capture.barrier_seq =
          AppendLocked(PackBatch({}), /*send_live=*/true, topic);
      if (v2) {
        capture.v2_records = mirror_.V2();
      } else {
        capture.v1_records = snapshot_records_.value_or(mirror_.V1());
      }
    }
  }
  if (error) {
    SendFrames(*snapshot_, {identity, "", "error", *error});
    return;
  }
  std::vector<std::string> payloads =
      v2 ? SnapshotV2Payloads(capture) : SnapshotV1Payloads(capture);
  SendFrames(*snapshot_, {identity, "", "header", payloads[0]});
  for (size_t i = 1; i < payloads.size(); ++i) {
    SendFrames(*snapshot_, {identity, "", "chunk", payloads[i]});
  }
  SendFrames(*snapshot_, {identity, "", "end", ""});
}

std::vector<std::string> FakeSglangPublisher::SnapshotV1Payloads(
    const SnapshotCapture& capture) const {
  const std::vector<SnapshotRecord>& records = capture.v1_records;
  MpArray header = {Mp(int64_t{1}),
                    Mp(capture.epoch),
                    Mp(options_.replica_rank),
                    Mp(capture.barrier_seq + 1),
                    Mp(capture.barrier_seq),
                    Mp(capture.barrier_id),
                    Mp(static_cast<uint64_t>(records.size()))};
  std::vector<std::string> payloads = {Pack(Mp(std::move(header)))};
  for (size_t begin = 0; begin < records.size();
       begin += kSnapshotChunkRecords) {
    const size_t end = std::min(records.size(), begin + kSnapshotChunkRecords);
    MpArray chunk;
    for (size_t i = begin; i < end; ++i) {
      chunk.push_back(
          MpArray{records[i].parent ? Mp(*records[i].parent) : Mp(nullptr),
                  MpArray{Mp(records[i].hash)}});
    }
    payloads.push_back(Pack(Mp(std::move(chunk))));
  }
  return payloads;
}

std::vector<std::string> FakeSglangPublisher::SnapshotV2Payloads(
    const SnapshotCapture& capture) const {
  const std::vector<SnapshotV2Record>& records = capture.v2_records;
  const bool alternate = options_.v2_alternate_keys;
  MpMap header = {
      {Mp("version"), Mp(int64_t{2})},
      {Mp("namespace"), Mp("default")},
      {Mp("model"), Mp("fake-model")},
      {Mp("worker_id"), Mp("fake-worker")},
      {Mp(alternate ? "replica_rank" : "dp_rank"), Mp(options_.replica_rank)},
      {Mp(alternate ? "epoch" : "worker_epoch"), Mp(capture.epoch)},
      {Mp("hash_schema_version"), Mp(int64_t{1})},
      {Mp("page_size"),
       Mp(int64_t{records.empty() ? 1 : records.front().block_size})},
      {Mp("is_bigram"), Mp(false)},
      {Mp("barrier_seq"), Mp(capture.barrier_seq)},
      {Mp("resume_seq"), Mp(capture.barrier_seq + 1)},
      {Mp("barrier_id"), Mp(capture.barrier_id)},
      {Mp("record_count"), Mp(static_cast<uint64_t>(records.size()))},
      {Mp("cache_spec"), Mp(nullptr)},
  };
  if (options_.v2_worker_generation) {
    header.push_back(
        {Mp("worker_generation"), Mp(*options_.v2_worker_generation)});
  } else if (alternate) {
    header.push_back({Mp("worker_generation"), Mp(int64_t{1})});
  }
  std::vector<std::string> payloads = {Pack(Mp(std::move(header)))};
  for (size_t begin = 0; begin < records.size();
       begin += kSnapshotChunkRecords) {
    const size_t end = std::min(records.size(), begin + kSnapshotChunkRecords);
    MpArray chunk;
    for (size_t i = begin; i < end; ++i) {
      const SnapshotV2Record& r = records[i];
      chunk.push_back(MpMap{
          {Mp("block_hash"), Mp(r.hash)},
          {Mp("parent_block_hash"), r.parent ? Mp(*r.parent) : Mp(nullptr)},
          {Mp("block_size"), Mp(uint64_t{r.block_size})},
          {Mp("tier"), Mp(r.tier)},
          {Mp("component_mask"), Mp(uint64_t{r.component_mask})},
      });
    }
    payloads.push_back(Pack(Mp(std::move(chunk))));
  }
  return payloads;
}

}  // namespace kvindexer::bridge::testing
