#include "bridge/kv_events_descriptor.h"

#include <cctype>
#include <cmath>
#include <string>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/absl_view.h"
#include "common/env.h"

namespace kvindexer::bridge {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::Status BadUrl(std::string_view address, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "worker_address ", QuoteEnvValue(address), " ", AbslView(why)));
}

absl::Status Refused(std::string_view why) {
  return absl::FailedPreconditionError(
      absl::StrCat("/server_info refused: ", AbslView(why)));
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// A decimal port 1..65535, or 0 when `text` is not one.
uint32_t ParsePort(std::string_view text) {
  if (text.empty() || text.size() > 5) return 0;
  uint32_t port = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  return port <= 65535 ? port : 0;
}

// The integer field `key` of `kv_events`, in [min, max].
absl::Status ReadUint32(const Struct& object, std::string_view key,
                        uint32_t min, uint32_t max, uint32_t* out) {
  auto it = object.fields().find(std::string(key));
  if (it == object.fields().end() ||
      it->second.kind_case() == Value::kNullValue) {
    return Refused(absl::StrCat("kv_events lacks \"", AbslView(key), "\""));
  }
  const double number = it->second.number_value();
  if (it->second.kind_case() != Value::kNumberValue ||
      std::floor(number) != number || number < min || number > max) {
    return Refused(absl::StrCat("kv_events \"", AbslView(key),
                                "\" must be an integer in ", min, "..", max));
  }
  *out = static_cast<uint32_t>(number);
  return absl::OkStatus();
}

absl::Status ReadString(const Struct& object, std::string_view key,
                        bool optional, std::string* out) {
  auto it = object.fields().find(std::string(key));
  if (it == object.fields().end() ||
      it->second.kind_case() == Value::kNullValue) {
    if (optional) return absl::OkStatus();
    return Refused(absl::StrCat("kv_events lacks \"", AbslView(key), "\""));
  }
  if (it->second.kind_case() != Value::kStringValue) {
    return Refused(
        absl::StrCat("kv_events \"", AbslView(key), "\" must be a string"));
  }
  *out = it->second.string_value();
  return absl::OkStatus();
}

// `host` without the brackets of an IPv6 literal.
std::string_view Unbracketed(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

}  // namespace

absl::StatusOr<WorkerUrl> ParseWorkerUrl(std::string_view address) {
  WorkerUrl url;
  std::string_view rest = address;
  if (const size_t sep = rest.find("://"); sep != std::string_view::npos) {
    const std::string_view scheme = rest.substr(0, sep);
    if (EqualsIgnoringCase(scheme, "https")) {
      url.https = true;
    } else if (!EqualsIgnoringCase(scheme, "http")) {
      return BadUrl(address, "has a scheme other than http or https");
    }
    rest.remove_prefix(sep + 3);
  }
  const size_t authority_end = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view path =
      authority_end == std::string_view::npos ? "" : rest.substr(authority_end);
  path = path.substr(0, path.find_first_of("?#"));
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  std::string_view host;
  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return BadUrl(address, "has an unterminated IPv6 literal");
    }
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return BadUrl(address, "has text after its IPv6 literal");
      }
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const size_t colon = authority.find(':');
    if (colon != std::string_view::npos &&
        authority.find(':', colon + 1) != std::string_view::npos) {
      return BadUrl(address, "has an IPv6 literal without brackets");
    }
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = authority.substr(colon + 1);
    }
  }
  if (host.empty()) return BadUrl(address, "has no host");
  if (has_port) {
    const uint32_t port = ParsePort(port_text);
    if (port == 0) return BadUrl(address, "has a port outside 1..65535");
    url.port = static_cast<uint16_t>(port);
  } else {
    url.port = url.https ? 443 : 80;
  }
  url.host = std::string(host);
  url.path_prefix = std::string(path);
  return url;
}

std::string ServerInfoPath(const WorkerUrl& url) {
  return url.path_prefix + "/server_info";
}

absl::StatusOr<KvEventsDescriptor> ParseKvEventsDescriptor(
    std::string_view server_info_body) {
  Value root;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(server_info_body.data(),
                                    server_info_body.size()),
      &root);
  if (!parsed.ok()) return Refused("the answer is not JSON");
  if (root.kind_case() != Value::kStructValue) {
    return Refused("the answer is not a JSON object");
  }
  const auto& fields = root.struct_value().fields();
  auto it = fields.find("kv_events");
  if (it == fields.end() || it->second.kind_case() == Value::kNullValue) {
    return Refused(
        "kv_events is null or missing: the worker publishes no KV events "
        "(start it with --kv-events-config naming a zmq publisher)");
  }
  if (it->second.kind_case() != Value::kStructValue) {
    return Refused("kv_events is not an object");
  }
  const Struct& object = it->second.struct_value();
  KvEventsDescriptor descriptor;
  for (absl::Status status : {
           ReadString(object, "publisher", false, &descriptor.publisher),
           ReadString(object, "endpoint_host", false,
                      &descriptor.endpoint_host),
           ReadUint32(object, "endpoint_port_base", 1, 65535,
                      &descriptor.endpoint_port_base),
           ReadString(object, "topic", true, &descriptor.topic),
           ReadUint32(object, "block_size", 1, 0xffffffffu,
                      &descriptor.block_size),
           ReadUint32(object, "dp_size", 1, 0xffffffffu, &descriptor.dp_size),
       }) {
    if (!status.ok()) return status;
  }
  return descriptor;
}

bool IsWildcardHost(std::string_view host) {
  const std::string_view bare = Unbracketed(host);
  return bare.empty() || bare == "*" || bare == "0.0.0.0" || bare == "::";
}

absl::StatusOr<WorkerEntry> ApplyKvEventsDescriptor(
    const WorkerEntry& entry, const KvEventsDescriptor& descriptor,
    std::string_view worker_host) {
  if (descriptor.publisher != "zmq") {
    return Refused(absl::StrCat("kv_events publisher is ",
                                QuoteEnvValue(descriptor.publisher),
                                "; only \"zmq\" can be followed"));
  }
  if (entry.dp_rank >= descriptor.dp_size) {
    return Refused(absl::StrCat("the entry's dp_rank ", entry.dp_rank,
                                " is not below the advertised dp_size ",
                                descriptor.dp_size));
  }
  if (entry.page_size_set && entry.page_size != descriptor.block_size) {
    return Refused(
        absl::StrCat("the advertised block_size ", descriptor.block_size,
                     " differs from the entry's page_size ", entry.page_size,
                     " (leave page_size out to adopt the advertised value)"));
  }
  const uint64_t port =
      uint64_t{descriptor.endpoint_port_base} + uint64_t{entry.dp_rank};
  if (port > 65535) {
    return Refused(absl::StrCat("endpoint_port_base ",
                                descriptor.endpoint_port_base, " + dp_rank ",
                                entry.dp_rank, " is above 65535"));
  }
  WorkerEntry followed = entry;
  if (followed.event_endpoint.empty()) {
    const std::string_view host = IsWildcardHost(descriptor.endpoint_host)
                                      ? worker_host
                                      : Unbracketed(descriptor.endpoint_host);
    const bool ipv6 = host.find(':') != std::string_view::npos;
    followed.event_endpoint = absl::StrCat(
        "tcp://", ipv6 ? "[" : "", AbslView(host), ipv6 ? "]" : "", ":", port);
  }
  followed.event_topic = descriptor.topic;
  followed.page_size = descriptor.block_size;
  return followed;
}

}  // namespace kvindexer::bridge
