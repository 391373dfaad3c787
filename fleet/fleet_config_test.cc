// The fleet-mode variables (fleet/fleet_config.h): defaults, every accepted
// form, and an error naming the variable for each bad value.
#include "fleet/fleet_config.h"

#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::fleet {
namespace fleet_config_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<EventLogConfig> Parse(std::map<std::string, std::string> vars) {
  return ParseEventLogConfig(MapEnvironment({vars.begin(), vars.end()}));
}

void ExpectError(std::map<std::string, std::string> vars,
                 const std::string& variable) {
  absl::StatusOr<EventLogConfig> config = Parse(std::move(vars));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr(variable));
}

// A regular file that exists for the length of a test.
class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/kvindexer-fleet-config-XXXXXX";
    int fd = ::mkstemp(name);
    EXPECT_GE(fd, 0);
    ::close(fd);
    path_ = name;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(FleetConfigTest, DefaultsWithOneUrl) {
  auto config = Parse({{"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->nats.urls, ElementsAre("nats://127.0.0.1:4222"));
  EXPECT_EQ(config->stream, "KVINDEXER_EVENTS");
  EXPECT_EQ(config->subject_prefix, "kvindexer");
  EXPECT_EQ(config->replicas, 1u);
  EXPECT_EQ(config->dedup_window_ms, 120000u);
  EXPECT_EQ(config->nats.timeout_ms, 5000u);
  EXPECT_TRUE(config->nats.creds_file.empty());
  EXPECT_TRUE(config->nats.tls_ca_file.empty());
}

TEST(FleetConfigTest, UrlIsRequired) {
  ExpectError({}, "KV_INDEXER_NATS_URL");
  ExpectError({{"KV_INDEXER_NATS_URL", "  "}}, "KV_INDEXER_NATS_URL");
}

TEST(FleetConfigTest, SeveralUrlsAreTrimmed) {
  auto config = Parse({{"KV_INDEXER_NATS_URL",
                        " nats://127.0.0.1:4222 , tls://[::1]:4223,"
                        "nats://127.0.0.1:4224"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->nats.urls,
              ElementsAre("nats://127.0.0.1:4222", "tls://[::1]:4223",
                          "nats://127.0.0.1:4224"));
}

TEST(FleetConfigTest, BadUrlsNameTheVariable) {
  ExpectError({{"KV_INDEXER_NATS_URL", "127.0.0.1:4222"}},
              "KV_INDEXER_NATS_URL");
  ExpectError({{"KV_INDEXER_NATS_URL", "nats://a:1,,nats://b:2"}},
              "empty item");
  ExpectError({{"KV_INDEXER_NATS_URL", "http://127.0.0.1:4222"}},
              "not a nats://");
  ExpectError({{"KV_INDEXER_NATS_URL", "nats://"}}, "KV_INDEXER_NATS_URL");
}

TEST(FleetConfigTest, ReadsEveryVariable) {
  TempFile ca, cert, key, token;
  auto config = Parse({{"KV_INDEXER_NATS_URL", "tls://127.0.0.1:4222"},
                       {"KV_INDEXER_NATS_TOKEN_FILE", token.path()},
                       {"KV_INDEXER_NATS_TLS_CA_FILE", ca.path()},
                       {"KV_INDEXER_NATS_TLS_CERT_FILE", cert.path()},
                       {"KV_INDEXER_NATS_TLS_KEY_FILE", key.path()},
                       {"KV_INDEXER_NATS_STREAM", "PROD_EVENTS-1"},
                       {"KV_INDEXER_NATS_SUBJECT_PREFIX", "prod.kvi"},
                       {"KV_INDEXER_NATS_REPLICAS", "3"},
                       {"KV_INDEXER_NATS_DEDUP_WINDOW_MS", "60000"},
                       {"KV_INDEXER_NATS_TIMEOUT_MS", "2500"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->nats.token_file, token.path());
  EXPECT_EQ(config->nats.tls_ca_file, ca.path());
  EXPECT_EQ(config->nats.tls_cert_file, cert.path());
  EXPECT_EQ(config->nats.tls_key_file, key.path());
  EXPECT_EQ(config->stream, "PROD_EVENTS-1");
  EXPECT_EQ(config->subject_prefix, "prod.kvi");
  EXPECT_EQ(config->replicas, 3u);
  EXPECT_EQ(config->dedup_window_ms, 60000u);
  EXPECT_EQ(config->nats.timeout_ms, 2500u);
}

TEST(FleetConfigTest, FilesMustExist) {
  const std::map<std::string, std::string> base = {
      {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"}};
  for (const char* var :
       {"KV_INDEXER_NATS_CREDS_FILE", "KV_INDEXER_NATS_TOKEN_FILE",
        "KV_INDEXER_NATS_TLS_CA_FILE", "KV_INDEXER_NATS_TLS_CERT_FILE",
        "KV_INDEXER_NATS_TLS_KEY_FILE"}) {
    auto vars = base;
    vars[var] = "/nonexistent/kvindexer/file";
    ExpectError(vars, var);
    vars[var] = "/tmp";  // a directory is not a file
    ExpectError(vars, var);
  }
}

TEST(FleetConfigTest, CertificateAndKeyComeTogether) {
  TempFile cert;
  ExpectError({{"KV_INDEXER_NATS_URL", "tls://127.0.0.1:4222"},
               {"KV_INDEXER_NATS_TLS_CERT_FILE", cert.path()}},
              "KV_INDEXER_NATS_TLS_CERT_FILE is set without "
              "KV_INDEXER_NATS_TLS_KEY_FILE");
  ExpectError({{"KV_INDEXER_NATS_URL", "tls://127.0.0.1:4222"},
               {"KV_INDEXER_NATS_TLS_KEY_FILE", cert.path()}},
              "KV_INDEXER_NATS_TLS_KEY_FILE is set without");
}

TEST(FleetConfigTest, CredsAndTokenExcludeEachOther) {
  TempFile creds, token;
  ExpectError({{"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
               {"KV_INDEXER_NATS_CREDS_FILE", creds.path()},
               {"KV_INDEXER_NATS_TOKEN_FILE", token.path()}},
              "KV_INDEXER_NATS_CREDS_FILE and KV_INDEXER_NATS_TOKEN_FILE");
}

TEST(FleetConfigTest, BadNumbersNameTheirVariable) {
  const std::map<std::string, std::string> base = {
      {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"}};
  const std::map<std::string, std::vector<std::string>> bad = {
      {"KV_INDEXER_NATS_REPLICAS", {"0", "6", "three", "-1"}},
      {"KV_INDEXER_NATS_DEDUP_WINDOW_MS", {"999", "86400001", "1e3"}},
      {"KV_INDEXER_NATS_TIMEOUT_MS", {"99", "600001", ""}}};
  for (const auto& [var, values] : bad) {
    for (const std::string& value : values) {
      if (value.empty()) continue;  // blank means unset
      auto vars = base;
      vars[var] = value;
      SCOPED_TRACE(var + "=" + value);
      ExpectError(vars, var);
    }
  }
}

TEST(FleetConfigTest, BadNamesNameTheirVariable) {
  for (const char* stream : {"a.b", "a b", "a*", "a>", "x/y", ""}) {
    if (std::string(stream).empty()) continue;
    ExpectError({{"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                 {"KV_INDEXER_NATS_STREAM", stream}},
                "KV_INDEXER_NATS_STREAM");
  }
  for (const char* prefix : {"a..b", ".a", "a.", "a.*", "a.>", "a b"}) {
    ExpectError({{"KV_INDEXER_NATS_URL", "nats://127.0.0.1:4222"},
                 {"KV_INDEXER_NATS_SUBJECT_PREFIX", prefix}},
                "KV_INDEXER_NATS_SUBJECT_PREFIX");
  }
}

TEST(FleetConfigTest, LoggedUrlsHideCredentials) {
  EXPECT_EQ(RedactedNatsUrls({"nats://127.0.0.1:4222"}),
            "nats://127.0.0.1:4222");
  EXPECT_EQ(RedactedNatsUrls({"nats://alice:s3cret@n1:4222",
                              "tls://tok3n@n2:4222", "n3:4222"}),
            "nats://***@n1:4222,tls://***@n2:4222,n3:4222");
  EXPECT_EQ(RedactedNatsUrls({"nats://n1:4222/x@y"}), "nats://n1:4222/x@y");
}

}  // namespace fleet_config_test
}  // namespace kvindexer::fleet
