#include "ctl/ctl_options.h"

#include <charconv>
#include <cmath>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/env.h"

namespace kvindexer::ctl {
namespace {

// Bit per command: which flags a command accepts.
constexpr unsigned Bit(Command c) { return 1u << static_cast<unsigned>(c); }
constexpr unsigned kAllCommands =
    Bit(Command::kStatus) | Bit(Command::kWorkers) | Bit(Command::kExplain) |
    Bit(Command::kRemoveWorker) | Bit(Command::kTop);

struct FlagSpec {
  std::string_view name;  // without the leading "--"
  bool takes_value;
  unsigned commands;
};

constexpr FlagSpec kFlags[] = {
    {"endpoint", true, kAllCommands},
    {"timeout", true, kAllCommands},
    {"json", false, kAllCommands},
    {"tls-ca", true, kAllCommands},
    {"tls-cert", true, kAllCommands},
    {"tls-key", true, kAllCommands},
    {"tls-server-name", true, kAllCommands},
    {"token-file", true, kAllCommands},
    {"read-token-file", true, kAllCommands},
    {"max-blocks", true, Bit(Command::kExplain)},
    {"worker", true, Bit(Command::kExplain)},
    {"file", true, Bit(Command::kExplain)},
    {"stream", true, Bit(Command::kExplain)},
    {"eligible-address", true, Bit(Command::kExplain)},
    {"eligible-stream", true, Bit(Command::kExplain)},
    {"reason", true, Bit(Command::kRemoveWorker)},
    {"namespace", true, Bit(Command::kRemoveWorker)},
    {"dp-rank", true, Bit(Command::kRemoveWorker)},
    {"interval", true, Bit(Command::kTop)},
    {"iterations", true, Bit(Command::kTop)},
};

struct CommandName {
  std::string_view name;
  Command command;
};

constexpr CommandName kCommands[] = {
    {"status", Command::kStatus},   {"workers", Command::kWorkers},
    {"explain", Command::kExplain}, {"remove-worker", Command::kRemoveWorker},
    {"top", Command::kTop},         {"help", Command::kHelp},
};

absl::Status Usage(std::string_view message) {
  return absl::InvalidArgumentError(std::string(message));
}

const FlagSpec* FindFlag(std::string_view name) {
  for (const FlagSpec& spec : kFlags) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::string_view NameOf(Command command) {
  for (const CommandName& c : kCommands) {
    if (c.command == command) return c.name;
  }
  return "?";
}

// A positive number of seconds, decimals allowed, at most `max_seconds`.
absl::StatusOr<std::chrono::milliseconds> ParseSeconds(std::string_view flag,
                                                       std::string_view text,
                                                       double max_seconds) {
  double seconds = 0;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !std::isfinite(seconds) || seconds <= 0 || seconds > max_seconds) {
    return Usage(absl::StrCat("--", std::string(flag), " ", QuoteEnvValue(text),
                              " is invalid: expected seconds above 0 and at "
                              "most ",
                              max_seconds, ", for example 2 or 0.5"));
  }
  // At least 1 ms: a deadline of 0 would fail every call.
  const auto ms = static_cast<int64_t>(std::llround(seconds * 1000.0));
  return std::chrono::milliseconds(ms < 1 ? 1 : ms);
}

absl::StatusOr<uint32_t> ParseCount(std::string_view flag,
                                    std::string_view text, uint32_t min) {
  uint32_t value = 0;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value, 10);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      value < min) {
    return Usage(absl::StrCat("--", std::string(flag), " ", QuoteEnvValue(text),
                              " is invalid: expected an integer from ", min,
                              " to 4294967295"));
  }
  return value;
}

absl::Status AddWorkers(std::string_view text, std::vector<std::string>* out) {
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : comma - start);
    if (item.empty()) {
      return Usage(absl::StrCat("--worker ", QuoteEnvValue(text),
                                " is invalid: expected worker ids separated "
                                "by commas, none empty"));
    }
    out->emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return absl::OkStatus();
}

// NAMESPACE/WORKER/RANK: the namespace is what comes before the first
// slash and the rank what follows the last, so a worker id may hold
// slashes; the namespace may be empty, the worker id may not.
absl::StatusOr<StreamArg> ParseStream(std::string_view flag,
                                      std::string_view text) {
  const auto invalid = [&] {
    return Usage(absl::StrCat(
        "--", std::string(flag), " ", QuoteEnvValue(text),
        " is invalid: expected NAMESPACE/WORKER/RANK, for example ns/w-a/0 "
        "(an empty namespace is the legacy one: /w-a/1)"));
  };
  const size_t first = text.find('/');
  const size_t last = text.rfind('/');
  if (first == std::string_view::npos || first == last) return invalid();
  StreamArg stream;
  stream.ns = std::string(text.substr(0, first));
  stream.worker_id = std::string(text.substr(first + 1, last - first - 1));
  const std::string_view rank = text.substr(last + 1);
  auto [ptr, ec] = std::from_chars(rank.data(), rank.data() + rank.size(),
                                   stream.dp_rank, 10);
  if (stream.worker_id.empty() || rank.empty() || ec != std::errc() ||
      ptr != rank.data() + rank.size()) {
    return invalid();
  }
  return stream;
}

absl::Status ApplyFlag(std::string_view name, const std::string& value,
                       CtlOptions* options) {
  if (name == "endpoint") {
    if (value.empty()) return Usage("--endpoint needs a non-empty value");
    options->endpoint = value;
  } else if (name == "timeout") {
    absl::StatusOr<std::chrono::milliseconds> t =
        ParseSeconds(name, value, 3600);
    if (!t.ok()) return t.status();
    options->timeout = *t;
  } else if (name == "json") {
    options->json = true;
  } else if (name == "tls-ca") {
    options->tls_ca_file = value;
  } else if (name == "tls-cert") {
    options->tls_cert_file = value;
  } else if (name == "tls-key") {
    options->tls_key_file = value;
  } else if (name == "tls-server-name") {
    options->tls_server_name = value;
  } else if (name == "token-file") {
    options->token_file = value;
  } else if (name == "read-token-file") {
    options->read_token_file = value;
  } else if (name == "max-blocks") {
    absl::StatusOr<uint32_t> n = ParseCount(name, value, 0);
    if (!n.ok()) return n.status();
    options->max_blocks = *n;
  } else if (name == "worker") {
    return AddWorkers(value, &options->extra_workers);
  } else if (name == "file") {
    if (value.empty()) return Usage("--file needs a path, or - for stdin");
    options->hash_file = value;
  } else if (name == "stream" || name == "eligible-stream") {
    absl::StatusOr<StreamArg> stream = ParseStream(name, value);
    if (!stream.ok()) return stream.status();
    (name == "stream" ? options->extra_streams : options->eligible_streams)
        .push_back(*std::move(stream));
  } else if (name == "eligible-address") {
    if (value.empty()) return Usage("--eligible-address needs an address");
    options->eligible_addresses.push_back(value);
  } else if (name == "reason") {
    options->reason = value;
  } else if (name == "namespace") {
    options->ns = value;
  } else if (name == "dp-rank") {
    absl::StatusOr<uint32_t> n = ParseCount(name, value, 0);
    if (!n.ok()) return n.status();
    options->dp_rank = *n;
  } else if (name == "interval") {
    absl::StatusOr<std::chrono::milliseconds> t =
        ParseSeconds(name, value, 3600);
    if (!t.ok()) return t.status();
    options->interval = *t;
  } else if (name == "iterations") {
    absl::StatusOr<uint32_t> n = ParseCount(name, value, 1);
    if (!n.ok()) return n.status();
    options->iterations = *n;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CtlOptions> ParseCtlArgs(const std::vector<std::string>& args) {
  std::vector<std::pair<const FlagSpec*, std::string>> flags;
  std::vector<std::string> positionals;
  bool help = false;
  bool only_positionals = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (only_positionals || arg == "-" || arg.empty() || arg[0] != '-') {
      positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positionals = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      // A negative hash such as -42 is a value, not a flag.
      if (arg.size() > 1 && arg[1] >= '0' && arg[1] <= '9') {
        positionals.push_back(arg);
        continue;
      }
      return Usage(absl::StrCat("unknown flag ", QuoteEnvValue(arg),
                                " (flags are spelled --name)"));
    }
    const size_t eq = arg.find('=');
    const std::string name =
        arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const FlagSpec* spec = FindFlag(name);
    if (spec == nullptr) {
      return Usage(absl::StrCat("unknown flag --", name));
    }
    std::string value;
    if (eq != std::string::npos) {
      if (!spec->takes_value) {
        return Usage(absl::StrCat("--", name, " takes no value"));
      }
      value = arg.substr(eq + 1);
    } else if (spec->takes_value) {
      if (i + 1 >= args.size()) {
        return Usage(absl::StrCat("--", name, " needs a value"));
      }
      value = args[++i];
    }
    flags.emplace_back(spec, std::move(value));
  }

  CtlOptions options;
  if (help) return options;  // Command::kHelp
  if (positionals.empty()) {
    return Usage(
        "no command given (status, workers, explain, remove-worker, top)");
  }
  bool known = false;
  for (const CommandName& c : kCommands) {
    if (c.name == positionals[0]) {
      options.command = c.command;
      known = true;
    }
  }
  if (!known) {
    return Usage(absl::StrCat("unknown command ", QuoteEnvValue(positionals[0]),
                              " (status, workers, explain, remove-worker, "
                              "top, help)"));
  }
  if (options.command == Command::kHelp) return options;
  for (const auto& [spec, value] : flags) {
    if ((spec->commands & Bit(options.command)) == 0) {
      return Usage(absl::StrCat("--", std::string(spec->name),
                                " does not apply to ",
                                std::string(NameOf(options.command))));
    }
    absl::Status applied = ApplyFlag(spec->name, value, &options);
    if (!applied.ok()) return applied;
  }

  std::vector<std::string> rest(positionals.begin() + 1, positionals.end());
  switch (options.command) {
    case Command::kExplain:
      if (rest.empty() && !options.hash_file) {
        return Usage(
            "explain needs hashes: as arguments, - for stdin, or --file PATH");
      }
      options.hash_args = std::move(rest);
      break;
    case Command::kRemoveWorker:
      if (rest.size() != 1) {
        return Usage("remove-worker takes exactly one worker id");
      }
      if (rest[0].empty()) return Usage("remove-worker: empty worker id");
      options.worker_id = rest[0];
      break;
    default:
      if (!rest.empty()) {
        return Usage(absl::StrCat(std::string(NameOf(options.command)),
                                  " takes no arguments, got ",
                                  QuoteEnvValue(rest[0])));
      }
      break;
  }
  return options;
}

}  // namespace kvindexer::ctl
