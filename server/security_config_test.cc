// SecurityConfig (server/security_config.h): every bad value names its
// variable; the loopback test and the startup warning.
#include "server/security_config.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server_config.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::security_config_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using Vars = std::map<std::string, std::string, std::less<>>;

class SecurityConfigTest : public ::testing::Test {
 protected:
  std::string File(const std::string& name, const std::string& content) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  static absl::StatusOr<SecurityConfig> Load(Vars vars) {
    return LoadSecurityConfig(MapEnvironment(std::move(vars)));
  }
  static std::string Error(Vars vars) {
    auto config = Load(std::move(vars));
    EXPECT_FALSE(config.ok());
    if (config.ok()) return "";
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(config.status().message());
  }

  durable::TestTempDir dir_;
};

TEST_F(SecurityConfigTest, UnsetIsPlaintextAndOpen) {
  auto config = Load({});
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->tls());
  EXPECT_FALSE(config->mutual_tls());
  EXPECT_FALSE(config->has_write_token());
  // Blank counts as unset.
  config = Load(
      {{"KV_INDEXER_TLS_CERT_FILE", " "}, {"KV_INDEXER_WRITE_TOKEN_FILE", ""}});
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->tls());
}

TEST_F(SecurityConfigTest, ReadsEverything) {
  const std::string cert = File("cert.pem", "CERT");
  const std::string key = File("key.pem", "KEY");
  const std::string ca = File("ca.pem", "CA");
  const std::string token = File("token", "abc.DEF-123-4567890\n");
  auto config = Load({{"KV_INDEXER_TLS_CERT_FILE", cert},
                      {"KV_INDEXER_TLS_KEY_FILE", key},
                      {"KV_INDEXER_TLS_CLIENT_CA_FILE", ca},
                      {"KV_INDEXER_WRITE_TOKEN_FILE", token}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->tls());
  EXPECT_TRUE(config->mutual_tls());
  EXPECT_EQ(config->cert_pem, "CERT");
  EXPECT_EQ(config->key_pem, "KEY");
  EXPECT_EQ(config->client_ca_pem, "CA");
  EXPECT_EQ(config->write_token, "abc.DEF-123-4567890");
  const std::string summary = SecuritySummary(*config);
  EXPECT_THAT(summary, HasSubstr("tls=on mutual_tls=on write_token=required"));
  EXPECT_THAT(summary, Not(HasSubstr("abc.DEF-123")));
}

TEST_F(SecurityConfigTest, ReadsTheAdminReadToken) {
  const std::string write = File("write", "write-3f9a1c77e0b24d5e\n");
  const std::string read = File("read", "  read-77e0b24d5e3f9a1c \n");
  auto config = Load({{"KV_INDEXER_WRITE_TOKEN_FILE", write},
                      {"KV_INDEXER_ADMIN_READ_TOKEN_FILE", read}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->has_admin_read_token());
  EXPECT_EQ(config->admin_read_token, "read-77e0b24d5e3f9a1c");
  EXPECT_EQ(config->read_token_file, read);
  const std::string summary = SecuritySummary(*config);
  EXPECT_THAT(summary, HasSubstr("admin_read_token=required"));
  EXPECT_THAT(summary, HasSubstr("read_token_file=" + read));
  EXPECT_THAT(summary, Not(HasSubstr("read-77e0b24d5e")));
  // Without the variable admin calls stay open.
  auto open = Load({});
  ASSERT_TRUE(open.ok());
  EXPECT_FALSE(open->has_admin_read_token());
  EXPECT_THAT(SecuritySummary(*open), HasSubstr("admin_read_token=off"));
}

TEST_F(SecurityConfigTest, TheAdminReadTokenFollowsTheTokenRules) {
  EXPECT_THAT(
      Error({{"KV_INDEXER_ADMIN_READ_TOKEN_FILE", File("short", "tooshort")}}),
      AllOf(HasSubstr("KV_INDEXER_ADMIN_READ_TOKEN_FILE="),
            HasSubstr("at least 16")));
  EXPECT_THAT(
      Error({{"KV_INDEXER_ADMIN_READ_TOKEN_FILE", dir_.path() + "/missing"}}),
      AllOf(HasSubstr("KV_INDEXER_ADMIN_READ_TOKEN_FILE="),
            HasSubstr("cannot read the file")));
  const std::string writable = File("writable", "read-77e0b24d5e3f9a1c");
  ASSERT_EQ(chmod(writable.c_str(), 0666), 0);
  EXPECT_THAT(Error({{"KV_INDEXER_ADMIN_READ_TOKEN_FILE", writable}}),
              HasSubstr("writable by its group or by others"));
}

TEST_F(SecurityConfigTest, TheAdminReadTokenMustDifferFromTheWriteToken) {
  const std::string write = File("write", "same-3f9a1c77e0b24d5e\n");
  const std::string read = File("read", "same-3f9a1c77e0b24d5e");
  const std::string error = Error({{"KV_INDEXER_WRITE_TOKEN_FILE", write},
                                   {"KV_INDEXER_ADMIN_READ_TOKEN_FILE", read}});
  EXPECT_THAT(error,
              AllOf(HasSubstr("KV_INDEXER_ADMIN_READ_TOKEN_FILE="),
                    HasSubstr("same token as KV_INDEXER_WRITE_TOKEN_FILE")));
  EXPECT_THAT(error, Not(HasSubstr("same-3f9a")));
}

TEST_F(SecurityConfigTest, CertificateAndKeyGoTogether) {
  const std::string pem = File("x.pem", "X");
  EXPECT_THAT(Error({{"KV_INDEXER_TLS_CERT_FILE", pem}}),
              AllOf(HasSubstr("KV_INDEXER_TLS_KEY_FILE is unset"),
                    HasSubstr("KV_INDEXER_TLS_CERT_FILE is set")));
  EXPECT_THAT(Error({{"KV_INDEXER_TLS_KEY_FILE", pem}}),
              HasSubstr("KV_INDEXER_TLS_CERT_FILE is unset"));
  EXPECT_THAT(Error({{"KV_INDEXER_TLS_CLIENT_CA_FILE", pem}}),
              AllOf(HasSubstr("KV_INDEXER_TLS_CLIENT_CA_FILE is set"),
                    HasSubstr("TLS is off")));
}

TEST_F(SecurityConfigTest, UnreadableAndEmptyFilesNameVariableAndPath) {
  const std::string pem = File("x.pem", "X");
  const std::string empty = File("empty.pem", "");
  const std::string missing = dir_.path() + "/missing.pem";
  const Vars base = {{"KV_INDEXER_TLS_CERT_FILE", pem},
                     {"KV_INDEXER_TLS_KEY_FILE", pem},
                     {"KV_INDEXER_TLS_CLIENT_CA_FILE", pem}};
  for (const char* var :
       {"KV_INDEXER_TLS_CERT_FILE", "KV_INDEXER_TLS_KEY_FILE",
        "KV_INDEXER_TLS_CLIENT_CA_FILE", "KV_INDEXER_WRITE_TOKEN_FILE"}) {
    SCOPED_TRACE(var);
    Vars vars = base;
    vars[var] = missing;
    EXPECT_THAT(Error(vars),
                AllOf(HasSubstr(std::string(var) + "=\""), HasSubstr(missing),
                      HasSubstr("cannot read the file")));
    vars[var] = empty;
    EXPECT_THAT(Error(vars), AllOf(HasSubstr(var), HasSubstr(empty),
                                   HasSubstr("the file is empty")));
    vars[var] = dir_.path();
    EXPECT_THAT(Error(vars), AllOf(HasSubstr(var), HasSubstr("not a regular")));
  }
}

TEST_F(SecurityConfigTest, BadTokensAreRefusedWithoutQuotingThem) {
  const std::string blank = File("blank", " \n\t\n");
  EXPECT_THAT(Error({{"KV_INDEXER_WRITE_TOKEN_FILE", blank}}),
              AllOf(HasSubstr("KV_INDEXER_WRITE_TOKEN_FILE"),
                    HasSubstr("only whitespace")));
  const std::string inner = File("inner", "secret part\n");
  const std::string message = Error({{"KV_INDEXER_WRITE_TOKEN_FILE", inner}});
  EXPECT_THAT(message,
              AllOf(HasSubstr("KV_INDEXER_WRITE_TOKEN_FILE"),
                    HasSubstr("visible ASCII"), Not(HasSubstr("secret"))));
  const std::string binary = File("binary", std::string("ab\xff", 3));
  EXPECT_THAT(Error({{"KV_INDEXER_WRITE_TOKEN_FILE", binary}}),
              HasSubstr("visible ASCII"));
  // One trailing newline (or CRLF) is trimmed.
  auto config = Load(
      {{"KV_INDEXER_WRITE_TOKEN_FILE", File("t", "tok-0123456789abcdef\r\n")}});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->write_token, "tok-0123456789abcdef");
}

TEST_F(SecurityConfigTest, LoadServerConfigCarriesItAndItsErrors) {
  auto config = LoadServerConfig(MapEnvironment(
      {{"KV_INDEXER_WRITE_TOKEN_FILE", File("t", "tok-0123456789abcdef")}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->security.write_token, "tok-0123456789abcdef");
  auto bad = LoadServerConfig(
      MapEnvironment({{"KV_INDEXER_TLS_KEY_FILE", File("k", "K")}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("KV_INDEXER_TLS_CERT_FILE"));
  EXPECT_THAT(UsageText("kv-indexer-server"),
              AllOf(HasSubstr("KV_INDEXER_TLS_CLIENT_CA_FILE"),
                    HasSubstr("KV_INDEXER_WRITE_TOKEN_FILE")));
}

TEST(LoopbackTest, Addresses) {
  for (const char* addr : {"127.0.0.1:50051", "127.255.0.9:1", "[::1]:50051",
                           "[::1]:0", "localhost:50051"}) {
    EXPECT_TRUE(IsLoopbackListenAddr(addr)) << addr;
  }
  for (const char* addr : {"0.0.0.0:50051", "[::]:50051", "10.0.0.1:50051",
                           "128.0.0.1:1", "[::2]:1", "[fe80::1]:1"}) {
    EXPECT_FALSE(IsLoopbackListenAddr(addr)) << addr;
  }
  // The default stays loopback.
  EXPECT_TRUE(IsLoopbackListenAddr(kDefaultListenAddr));
}

TEST(LoopbackTest, Warning) {
  SecurityConfig open;
  EXPECT_FALSE(BeyondLoopbackWarning("127.0.0.1:1", open).has_value());
  const auto both = BeyondLoopbackWarning("0.0.0.0:50051", open);
  ASSERT_TRUE(both.has_value());
  EXPECT_THAT(*both, AllOf(HasSubstr("0.0.0.0:50051"), HasSubstr("TLS"),
                           HasSubstr("KV_INDEXER_WRITE_TOKEN_FILE"),
                           HasSubstr("any peer"), HasSubstr("read every")));
  SecurityConfig tls_only;
  tls_only.cert_pem = "C";
  const auto no_token = BeyondLoopbackWarning("[::]:1", tls_only);
  ASSERT_TRUE(no_token.has_value());
  EXPECT_THAT(*no_token, AllOf(HasSubstr("write token"),
                               Not(HasSubstr("(KV_INDEXER_TLS_CERT_FILE"))));
  SecurityConfig token_only;
  token_only.write_token = "t";
  const auto no_tls = BeyondLoopbackWarning("[::]:1", token_only);
  ASSERT_TRUE(no_tls.has_value());
  EXPECT_THAT(*no_tls, AllOf(HasSubstr("without TLS"),
                             HasSubstr("including the write token")));
  SecurityConfig both_on = tls_only;
  both_on.write_token = "t";
  EXPECT_FALSE(BeyondLoopbackWarning("[::]:1", both_on).has_value());
}

}  // namespace
}  // namespace kvindexer::security_config_test
