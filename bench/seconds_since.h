// SecondsSince: the seconds elapsed on the steady clock since a time point,
// the one stopwatch of the bench tools.
#ifndef KVINDEXER_BENCH_SECONDS_SINCE_H_
#define KVINDEXER_BENCH_SECONDS_SINCE_H_

#include <chrono>

namespace kvindexer::bench {

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_SECONDS_SINCE_H_
