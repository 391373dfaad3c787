#include "server/status_reporter_config.h"

#include <fstream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server_config.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer {
namespace status_config_test {

using ::testing::HasSubstr;

using Vars = std::map<std::string, std::string, std::less<>>;

absl::StatusOr<StatusReporterConfig> Load(Vars vars) {
  return LoadStatusReporterConfig(MapEnvironment(std::move(vars)));
}

Vars On(Vars extra = {}) {
  Vars vars = {{"KV_INDEXER_ROUTER_URLS", "http://router:30000"},
               {"KV_INDEXER_ADVERTISE_ENDPOINT", "http://10.0.0.1:50051"}};
  for (auto& [k, v] : extra) vars[k] = v;
  return vars;
}

void ExpectRefused(const Vars& vars, std::string_view variable,
                   std::string_view text = "") {
  const absl::StatusOr<StatusReporterConfig> config = Load(vars);
  ASSERT_FALSE(config.ok()) << "accepted";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(variable));
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(text));
}

TEST(StatusReporterConfig, DefaultsAreOff) {
  const auto config = Load({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->enabled());
  EXPECT_EQ(config->indexer_id, "kv-indexer");
  EXPECT_EQ(config->interval_ms, 100u);
  EXPECT_TRUE(config->router_tls_ca_file.empty());
  // A list of empty items is no list.
  const auto blank = Load({{"KV_INDEXER_ROUTER_URLS", " , ,"}});
  ASSERT_TRUE(blank.ok()) << blank.status();
  EXPECT_FALSE(blank->enabled());
}

TEST(StatusReporterConfig, ParsesTheRouterList) {
  const auto config = Load(
      On({{"KV_INDEXER_ROUTER_URLS",
           " http://router-0:30000/ ,, HTTPS://[fd00::1]:8443/base//,"
           "http://10.1.2.3 , http://router-0:30000, https://r.example"}}));
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->routers.size(), 4u);
  EXPECT_EQ(config->routers[0],
            (RouterUrl{.url = "http://router-0:30000",
                       .https = false,
                       .host = "router-0",
                       .port = 30000,
                       .status_path = "/v1/kv-indexer/status"}));
  EXPECT_EQ(config->routers[1],
            (RouterUrl{.url = "https://[fd00::1]:8443/base",
                       .https = true,
                       .host = "fd00::1",
                       .port = 8443,
                       .status_path = "/base/v1/kv-indexer/status"}));
  EXPECT_EQ(config->routers[2].url, "http://10.1.2.3");
  EXPECT_EQ(config->routers[2].port, 80);
  EXPECT_EQ(config->routers[3].port, 443);
  EXPECT_TRUE(config->routers[3].https);
}

TEST(StatusReporterConfig, RefusesBadRouterUrls) {
  for (const std::string url :
       {"router:30000", "grpc://router:1", "http://", "http://:80",
        "http://router:", "http://router:0", "http://router:65536",
        "http://router:http", "http://user:pw@router", "http://router/?x=1",
        "http://router/#f", "http://[::1", "http://[zz]:1", "http://rou ter",
        "http://router/a b", "http://r\xC3\xA9"}) {
    SCOPED_TRACE(url);
    ExpectRefused(On({{"KV_INDEXER_ROUTER_URLS", "http://ok:1," + url}}),
                  "KV_INDEXER_ROUTER_URLS");
  }
  ExpectRefused(On({{"KV_INDEXER_ROUTER_URLS", "http://r\xFF"}}),
                "KV_INDEXER_ROUTER_URLS");
}

TEST(StatusReporterConfig, IndexerId) {
  auto config = Load({{"HOSTNAME", " pod-7 "}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->indexer_id, "pod-7");
  config = Load({{"HOSTNAME", "pod-7"}, {"KV_INDEXER_ID", " idx-a "}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->indexer_id, "idx-a");
  config = Load({{"HOSTNAME", " "}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->indexer_id, "kv-indexer");
  ExpectRefused({{"KV_INDEXER_ID", "  "}}, "KV_INDEXER_ID", "non-blank");
  ExpectRefused({{"KV_INDEXER_ID", "\xE3\x80\x80"}}, "KV_INDEXER_ID");
  ExpectRefused({{"KV_INDEXER_ID", "\xFF"}}, "KV_INDEXER_ID");
}

TEST(StatusReporterConfig, AdvertiseEndpointFollowsTheRouterRules) {
  // docs/contract.md behaviour 54.
  for (const std::string ok :
       {"http://10.0.0.1:50051", "https://indexer.svc:443", "unix:/tmp/i"}) {
    const auto config = Load(On({{"KV_INDEXER_ADVERTISE_ENDPOINT", ok}}));
    ASSERT_TRUE(config.ok()) << ok << ": " << config.status();
    EXPECT_EQ(config->advertise_endpoint, ok);
  }
  for (const std::string bad :
       {"10.0.0.1:50051", "indexer.svc", "grpc://10.0.0.1:50051", "http://"}) {
    SCOPED_TRACE(bad);
    ExpectRefused(On({{"KV_INDEXER_ADVERTISE_ENDPOINT", bad}}),
                  "KV_INDEXER_ADVERTISE_ENDPOINT", bad);
  }
  Vars missing = On();
  missing.erase("KV_INDEXER_ADVERTISE_ENDPOINT");
  ExpectRefused(missing, "KV_INDEXER_ADVERTISE_ENDPOINT", "is unset");
  missing["KV_INDEXER_ADVERTISE_ENDPOINT"] = " ";
  ExpectRefused(missing, "KV_INDEXER_ADVERTISE_ENDPOINT", "is unset");
  // Checked when set even while reports are off.
  ExpectRefused({{"KV_INDEXER_ADVERTISE_ENDPOINT", "indexer.svc"}},
                "KV_INDEXER_ADVERTISE_ENDPOINT");
}

TEST(StatusReporterConfig, Interval) {
  auto config = Load(On({{"KV_INDEXER_STATUS_INTERVAL_MS", "250"}}));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->interval_ms, 250u);
  config = Load(On({{"KV_INDEXER_STATUS_INTERVAL_MS", "5000"}}));
  ASSERT_TRUE(config.ok());  // accepted; the reporter warns
  EXPECT_EQ(config->interval_ms, 5000u);
  for (const std::string bad : {"0", "-1", "1.5", "fast", "99999999999"}) {
    SCOPED_TRACE(bad);
    ExpectRefused(On({{"KV_INDEXER_STATUS_INTERVAL_MS", bad}}),
                  "KV_INDEXER_STATUS_INTERVAL_MS=\"" + bad + "\"");
  }
}

TEST(StatusReporterConfig, RouterCaFile) {
  durable::TestTempDir dir;
  const std::string pem = dir.Sub("ca.pem");
  std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\nMIIB\n"
                        "-----END CERTIFICATE-----\n";
  const std::string junk = dir.Sub("junk.pem");
  std::ofstream(junk) << "not a certificate\n";
  auto config = Load(On({{"KV_INDEXER_ROUTER_TLS_CA_FILE", pem}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->router_tls_ca_file, pem);
  ExpectRefused(On({{"KV_INDEXER_ROUTER_TLS_CA_FILE", junk}}),
                "KV_INDEXER_ROUTER_TLS_CA_FILE", "no PEM certificate");
  ExpectRefused(On({{"KV_INDEXER_ROUTER_TLS_CA_FILE", dir.Sub("missing")}}),
                "KV_INDEXER_ROUTER_TLS_CA_FILE");
}

TEST(StatusReporterConfig, ServerConfigCarriesIt) {
  const auto config = LoadServerConfig(MapEnvironment(On()));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->status_reporter.enabled());
  Vars zero = On({{"KV_INDEXER_STATUS_INTERVAL_MS", "0"}});
  const auto refused = LoadServerConfig(MapEnvironment(zero));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("KV_INDEXER_STATUS_INTERVAL_MS"));
}

}  // namespace status_config_test
}  // namespace kvindexer
