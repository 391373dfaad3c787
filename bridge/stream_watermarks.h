// The watermarks of one worker stream and the classification of each live
// batch against them (docs/bridge-events.md, "Recovery > Watermarks").
//
//   applied  the last sequence number the server covers;
//   floor    the highest live sequence number handled since the last
//            INSTALL or resume (unset right after either).
//
// Project addition: after an INSTALL or resume built from replayed batches
// the watermarks remember a digest of each replayed payload. A live batch
// that falls at or below `applied` before `floor` has passed those batches
// is then an overlap only if it repeats a replayed batch byte for byte;
// anything else (a different payload at that number, or a number older than
// the replay) can only come from a new publisher incarnation and is a
// restart. This closes the window in which a restart during the replay
// would otherwise be dropped as overlap.
//
// Thread safety: not thread-safe.
#ifndef KVINDEXER_BRIDGE_STREAM_WATERMARKS_H_
#define KVINDEXER_BRIDGE_STREAM_WATERMARKS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "bridge/live_buffer.h"

namespace kvindexer::bridge {

enum class LiveVerdict : uint8_t {
  kUntracked,  // no `applied` yet (legacy start): forward as it is
  kNext,       // applied + 1
  kOverlap,    // already covered by an install, replay or resume: drop
  kGap,        // beyond applied + 1
  kRestart,    // the publisher restarted (sequence reset or new epoch)
  kStale,      // epoch-fenced stream, same epoch, at or below floor: drop
};

class StreamWatermarks {
 public:
  // Forgets everything (no applied, no floor, no epoch).
  void Clear();

  // After an INSTALL at `applied` or a resume from it. `epoch` is the
  // installed epoch; `fenced` says whether live batches carry it (mode S).
  // `replayed` are the replayed batches the install or resume was built
  // from (empty when none); see the file comment.
  void Reset(uint64_t applied, std::string epoch, bool fenced,
             std::span<const LiveBatch> replayed = {});

  // Classifies a live batch whose topic carries `topic_epoch` ("" when the
  // topic has none). Does not change the watermarks.
  LiveVerdict Classify(const LiveBatch& batch,
                       std::string_view topic_epoch) const;

  // A live batch has been handled (forwarded, dropped as overlap, or used
  // as the base of an install): raises floor.
  void MarkLive(uint64_t seq);
  // The server now covers `seq`.
  void SetApplied(uint64_t seq) { applied_ = seq; }

  std::optional<uint64_t> applied() const { return applied_; }
  std::optional<uint64_t> floor() const { return floor_; }
  const std::string& epoch() const { return epoch_; }
  bool fenced() const { return fenced_; }

 private:
  std::optional<uint64_t> applied_;
  std::optional<uint64_t> floor_;
  std::string epoch_;
  bool fenced_ = false;
  // Replay digests (see the file comment); empty once floor passed them.
  std::optional<uint64_t> replay_first_;
  std::optional<uint64_t> replay_last_;
  std::unordered_map<uint64_t, size_t> replay_digest_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_STREAM_WATERMARKS_H_
