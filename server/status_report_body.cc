#include "server/status_report_body.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "fmt/format.h"

namespace kvindexer {
namespace {

// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), 0 when there is
// none.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) -> unsigned {
    return i + k < text.size() ? static_cast<unsigned char>(text[i + k])
                               : 0x100u;
  };
  const auto continuation = [&](size_t k, unsigned lo = 0x80,
                                unsigned hi = 0xBF) {
    const unsigned b = byte(k);
    return b >= lo && b <= hi;
  };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return continuation(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) && continuation(3) ? 4
                                                                         : 0;
  }
  return 0;
}

// `text` with each byte of an ill-formed UTF-8 sequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

auto StreamKey(const ReportedStream& s) {
  return std::tie(s.ns, s.worker_id, s.dp_rank);
}

// What the router may call ready: covered, and a namespaced stream with
// its epoch and generation.
bool ReadyEntry(const ReportedStream& s) {
  return s.covered && (s.ns.empty() || (!s.worker_epoch.empty() &&
                                        !s.worker_generation.empty()));
}

// The streams as reported: strings made valid UTF-8, records without a
// worker_id dropped, sorted by key, one per key.
std::vector<ReportedStream> NormalizeStreams(
    const std::vector<ReportedStream>& in) {
  std::vector<ReportedStream> out;
  out.reserve(in.size());
  for (const ReportedStream& s : in) {
    if (s.worker_id.empty()) continue;
    ReportedStream copy{
        .ns = ValidUtf8(s.ns),
        .worker_id = ValidUtf8(s.worker_id),
        .dp_rank = s.dp_rank,
        .worker_address = ValidUtf8(s.worker_address),
        .covered = s.covered,
        .worker_epoch = ValidUtf8(s.worker_epoch),
        .watermark = s.watermark,
        .worker_generation = ValidUtf8(s.worker_generation),
    };
    out.push_back(std::move(copy));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ReportedStream& a, const ReportedStream& b) {
                     return StreamKey(a) < StreamKey(b);
                   });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const ReportedStream& a, const ReportedStream& b) {
                          return StreamKey(a) == StreamKey(b);
                        }),
            out.end());
  return out;
}

std::string BuildBody(const StatusReportIdentity& identity,
                      const StatusInputs& inputs, bool final_report) {
  const bool indexer_ready =
      !final_report && inputs.serving && inputs.replica_caught_up;
  std::vector<ReportedStream> streams;
  uint64_t total = 0;
  uint64_t ready_workers = 0;
  if (inputs.counts.has_value()) {
    total = inputs.counts->total;
    ready_workers = std::min(inputs.counts->covered, total);
  } else {
    streams = NormalizeStreams(inputs.streams);
    total = streams.size();
    ready_workers = static_cast<uint64_t>(
        std::count_if(streams.begin(), streams.end(), ReadyEntry));
    if (streams.size() > kMaxReportedStreams) streams.clear();
  }
  if (!indexer_ready) ready_workers = 0;
  const bool ready = indexer_ready && total > 0 && ready_workers == total;

  std::string out;
  out.reserve(256 + streams.size() * 192);
  out += "{\"indexer_id\":";
  AppendJsonString(out, ValidUtf8(identity.indexer_id));
  out += ",\"endpoint\":";
  AppendJsonString(out, ValidUtf8(identity.endpoint));
  out += ready ? ",\"ready\":true" : ",\"ready\":false";
  out += fmt::format(
      ",\"normalized_load\":{},\"total_workers\":{},\"ready_workers\":{}",
      NormalizedLoad(inputs.permits_held, inputs.permits_capacity), total,
      ready_workers);
  out += ",\"streams\":[";
  bool first = true;
  for (const ReportedStream& s : streams) {
    if (!first) out += ',';
    first = false;
    out += "{\"namespace\":";
    AppendJsonString(out, s.ns);
    out += ",\"worker_id\":";
    AppendJsonString(out, s.worker_id);
    out += fmt::format(",\"dp_rank\":{},\"worker_address\":", s.dp_rank);
    AppendJsonString(out, s.worker_address);
    out +=
        indexer_ready && ReadyEntry(s) ? ",\"ready\":true" : ",\"ready\":false";
    out += ",\"worker_epoch\":";
    AppendJsonString(out, s.worker_epoch);
    out += fmt::format(",\"watermark\":{},\"worker_generation\":", s.watermark);
    AppendJsonString(out, s.worker_generation);
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace

std::string BuildStatusReportBody(const StatusReportIdentity& identity,
                                  const StatusInputs& inputs) {
  return BuildBody(identity, inputs, /*final_report=*/false);
}

std::string BuildFinalStatusReportBody(const StatusReportIdentity& identity,
                                       const StatusInputs& inputs) {
  return BuildBody(identity, inputs, /*final_report=*/true);
}

double NormalizedLoad(uint32_t held, uint32_t capacity) {
  if (capacity == 0) return held > 0 ? 1.0 : 0.0;
  const double load = static_cast<double>(held) / capacity;
  if (!std::isfinite(load)) return 0.0;
  return std::clamp(load, 0.0, 1.0);
}

void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (byte < 0x20) {
          out += fmt::format("\\u{:04x}", byte);
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace kvindexer
