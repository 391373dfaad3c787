// FidelityHeader: what the `kv-indexer-fidelity` request metadata of one
// ApplyExternalKvBatch or ReplaceExternalKvSnapshot says about how faithful
// the sending bridge's feed of its worker is (docs/admin-api.md, "The
// fidelity header").
//
// The value is `exact`, or `degraded` optionally followed by `; <reason>`
// (the bridge's short reason, e.g. `degraded; no_history`). It is advisory:
// the server shows it to the operator (ListWorkers, ExplainPrefix) and never
// acts on it, and it is not written to the data directory. The service reads
// the metadata and hands the parsed form to the Indexer, which stays free of
// transport types.
//
// Thread safety: plain value types and pure functions.
#ifndef KVINDEXER_COMMON_FIDELITY_HEADER_H_
#define KVINDEXER_COMMON_FIDELITY_HEADER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace kvindexer {

// The metadata key (gRPC keys are lower case).
inline constexpr std::string_view kFidelityHeader = "kv-indexer-fidelity";

// How faithful a worker's feed is, as its bridge last said.
enum class Fidelity : uint8_t {
  kUnknown,   // no bridge has said since this process started
  kExact,     // the index holds what the worker holds
  kDegraded,  // a safe lower bound
};

struct FidelityHeader {
  enum class Kind {
    kAbsent,     // no header: the feed says nothing (a seed-era client)
    kValid,      // `fidelity` (kExact or kDegraded) and `reason`
    kMalformed,  // present but neither form: ignored (and logged)
  };

  // The longest reason kept, and the longest prefix of a malformed value
  // kept for the log line.
  static constexpr size_t kMaxReasonBytes = 128;
  static constexpr size_t kMaxKeptValueBytes = 64;

  // Parses the value of a header that is present. Surrounding spaces are
  // ignored; the words are case-sensitive. A reason longer than
  // kMaxReasonBytes is cut; one with control characters is malformed.
  static FidelityHeader Parse(std::string_view value);
  // The value a bridge sends: "exact" for an empty reason, else
  // "degraded; <reason>" (a reason never makes the value malformed: it is
  // cut to kMaxReasonBytes and its control characters become '?'). Inline,
  // so that the bridge uses it without linking the core library.
  static std::string Format(std::string_view degraded_reason) {
    if (degraded_reason.empty()) return "exact";
    std::string out = "degraded; ";
    for (const char c : degraded_reason.substr(0, kMaxReasonBytes)) {
      const auto u = static_cast<unsigned char>(c);
      out += (u < 0x20 || u == 0x7f) ? '?' : c;
    }
    return out;
  }

  Kind kind = Kind::kAbsent;
  Fidelity fidelity = Fidelity::kUnknown;
  std::string reason;  // when kValid and kDegraded; may be empty
  std::string value;   // when kMalformed, cut to the limit
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_FIDELITY_HEADER_H_
