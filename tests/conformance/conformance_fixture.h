// The value-parameterised fixture every per-backend test uses. The parameter
// is one loaded backend library; each test gets a fresh IndexBackend created
// through the library's descriptor (and destroyed through it afterwards), and
// an Indexer over it, so tests exercise the shared rule engine and the
// backend together.
//
// Each capability file declares its own suite:
//   class PrefixRulesTest : public ConformanceTest {};
//   KVINDEXER_INSTANTIATE_CONFORMANCE(PrefixRulesTest);
#ifndef KVINDEXER_TESTS_CONFORMANCE_CONFORMANCE_FIXTURE_H_
#define KVINDEXER_TESTS_CONFORMANCE_CONFORMANCE_FIXTURE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "backend_registry.h"
#include "core/indexer.h"
#include "gtest/gtest.h"
#include "kvindexer/backend.h"
#include "response_order.h"
#include "tests/support/prefix_response.h"
#include "tests/support/requests.h"

namespace kvindexer::conformance {

// The shared request builders and the server's prefix query path, by their
// short names in every suite.
using test_support::Batch;
using test_support::Hashes;
using test_support::HitCountsRequest;
using test_support::Masks;
using test_support::MatchPrefix;
using test_support::MatchRequest;
using test_support::PrefixRequest;
using test_support::Range;
using test_support::Spec;

// One backend instance, created and destroyed through a descriptor.
// OWNERSHIP: owns the instance; the descriptor's library must outlive it.
class BackendInstance {
 public:
  explicit BackendInstance(const BackendDescriptor& descriptor);
  ~BackendInstance();
  BackendInstance(const BackendInstance&) = delete;
  BackendInstance& operator=(const BackendInstance&) = delete;

  IndexBackend* get() const { return backend_; }
  // Empty on success; otherwise create()'s reason.
  const std::string& error() const { return error_; }

 private:
  const BackendDescriptor& descriptor_;
  IndexBackend* backend_ = nullptr;
  std::string error_;
};

class ConformanceTest
    : public ::testing::TestWithParam<const BackendUnderTest*> {
 protected:
  void SetUp() override;
  void TearDown() override;

  const BackendDescriptor& descriptor() const {
    return GetParam()->loaded->descriptor();
  }
  // The ABI minor the host uses with the backend under test
  // (LoadedBackend::abi_minor: its descriptor's, lowered past a call it
  // leaves to the header's default). The Indexers of the tests get it.
  uint32_t abi_minor() const { return GetParam()->loaded->abi_minor(); }
  // True when abi_minor() >= `minor`, so that what that minor added may be
  // called (backend.h).
  bool SupportsAbiMinor(uint32_t minor) const {
    return GetParam()->loaded->SupportsAbiMinor(minor);
  }
  // "ABI 1.<abi_minor()>", and what the descriptor says when that differs:
  // for the messages of tests skipped below a minor.
  std::string AbiInUse() const;
  IndexBackend* backend() const { return instance_->get(); }
  Indexer& indexer() { return *indexer_; }

  // Thin wrappers. The response-returning ones EXPECT an OK status and check
  // the fixed response orders; Match and Prefix return canonical order.
  [[nodiscard]] absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req);
  void ApplyOk(const v1::ApplyExternalKvBatchRequest& req);
  v1::MatchExternalKvResponse Match(const Hashes& hashes,
                                    bool count_as_hit = false);
  v1::MatchExternalKvPrefixResponse Prefix(const Hashes& hashes,
                                           uint32_t max_blocks = 0);
  // Hash -> count, for the hashes that have an entry.
  std::map<int64_t, uint64_t> Hits(const Hashes& hashes);

  // Tiers at which `worker` holds `hash` (any worker when empty), ascending.
  std::vector<int> Tiers(int64_t hash, const std::string& worker = "");
  // worker_id -> matched_prefix_blocks of a prefix response.
  static std::map<std::string, uint32_t> Prefixes(
      const v1::MatchExternalKvPrefixResponse& resp);
  // Canonical text of everything observable about `universe`: a
  // non-counting match, the hit counts and a prefix query over it.
  std::string Observe(const Hashes& universe);

 private:
  std::unique_ptr<BackendInstance> instance_;
  std::unique_ptr<Indexer> indexer_;
};

// Element i of a repeated field, or a default value plus a test failure when
// it is out of range, so that a broken backend fails tests instead of
// crashing the suite.
template <typename Repeated>
const auto& At(const Repeated& r, int i) {
  using T = std::remove_cvref_t<decltype(r.Get(0))>;
  static const T kEmpty{};
  if (i >= 0 && i < r.size()) return r.Get(i);
  ADD_FAILURE() << "response has no element " << i << " (size " << r.size()
                << ")";
  return kEmpty;
}

std::string BackendLabel(
    const ::testing::TestParamInfo<const BackendUnderTest*>& info);

}  // namespace kvindexer::conformance

#define KVINDEXER_INSTANTIATE_CONFORMANCE(suite)                          \
  GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(suite);                   \
  INSTANTIATE_TEST_SUITE_P(                                               \
      Backends, suite,                                                    \
      ::testing::ValuesIn(::kvindexer::conformance::BackendsUnderTest()), \
      ::kvindexer::conformance::BackendLabel)

#endif  // KVINDEXER_TESTS_CONFORMANCE_CONFORMANCE_FIXTURE_H_
