// BackToBackPoller: an operator's tool at its most eager. A thread of its
// own repeats one OperatorReader::Read with no pause between reads, from
// construction until Stop, timing each read.
//
// Thread safety: construct, Stop and destroy on one thread. The reader is
// used only by the poller's thread until Stop returns; it must outlive the
// poller.
#ifndef KVINDEXER_BENCH_BACK_TO_BACK_POLLER_H_
#define KVINDEXER_BENCH_BACK_TO_BACK_POLLER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "latency_recorder.h"
#include "operator_reads.h"

namespace kvindexer::bench {

struct PollFigures {
  uint64_t reads_ok = 0;
  uint64_t reads_failed = 0;
  std::string first_error;  // empty when none failed
  uint64_t bytes = 0;       // over the OK reads
  LatencySummary latency;   // of the OK reads
  OperatorReadResult last;  // of the last OK read
};

class BackToBackPoller {
 public:
  BackToBackPoller(OperatorReader* reader, OperatorRead read);
  ~BackToBackPoller();
  BackToBackPoller(const BackToBackPoller&) = delete;
  BackToBackPoller& operator=(const BackToBackPoller&) = delete;

  // Lets the read in progress finish (each read is bounded by the reader's
  // deadline), joins the thread and returns what it did. Once only.
  PollFigures Stop();

 private:
  void Loop();

  OperatorReader* reader_;
  OperatorRead read_;
  std::atomic<bool> stop_{false};
  LatencyRecorder latency_;
  PollFigures figures_;  // written by the thread until it is joined
  std::thread thread_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_BACK_TO_BACK_POLLER_H_
