// Fixed admin responses shared by the rendering and command tests.
#ifndef KVINDEXER_CTL_TESTS_SAMPLE_RESPONSES_H_
#define KVINDEXER_CTL_TESTS_SAMPLE_RESPONSES_H_

#include "kvindexer_admin.pb.h"

namespace kvindexer::ctl::testing {

// Version 0.1.0, up 3723 s, SERVING, backend robin 1.2.0 (ABI 1.2) with 120
// blocks and 300 placements, data dir /var/lib/kvi.
::kvindexer::admin::v1::GetStatsResponse SampleStats();

// "w-a": sequenced epoch e1 seq 42, exact, hbm 100 dram 20, applied 1.5 s
// ago, heartbeating (ttl 10 s, 2 s ago). "w-b": invalid, degraded
// ("replay gap"), counts unknown, no apply, no heartbeat, no address.
::kvindexer::admin::v1::ListWorkersResponse SampleWorkers();

// hashes [1,2,3]: w-a matched 2 (stopped at block 2, missing), w-b excluded
// (empty address).
::kvindexer::admin::v1::ExplainPrefixResponse SampleExplain();

}  // namespace kvindexer::ctl::testing

#endif  // KVINDEXER_CTL_TESTS_SAMPLE_RESPONSES_H_
