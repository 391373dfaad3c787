// ClientSecurity (common/client_channel.h) and the file readers of
// common/env_file.h: every bad value names its variable, the token never
// appears in a message, and the token metadata.
#include "common/client_channel.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <string>

#include "common/env_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer::client_channel_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using Vars = std::map<std::string, std::string, std::less<>>;

class ClientSecurityTest : public ::testing::Test {
 protected:
  std::string File(const std::string& name, const std::string& content) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  static std::string Error(Vars vars) {
    auto security = LoadClientSecurity(MapEnvironment(std::move(vars)));
    EXPECT_FALSE(security.ok());
    if (security.ok()) return "";
    EXPECT_EQ(security.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(security.status().message());
  }

  durable::TestTempDir dir_;
};

TEST_F(ClientSecurityTest, UnsetIsPlaintextWithoutToken) {
  auto security = LoadClientSecurity(MapEnvironment({}));
  ASSERT_TRUE(security.ok());
  EXPECT_FALSE(security->tls);
  EXPECT_FALSE(security->has_write_token());
  grpc::ClientContext context;
  AddWriteToken(*security, &context);  // adds nothing, must not crash
}

TEST_F(ClientSecurityTest, ReadsEverything) {
  auto security = LoadClientSecurity(
      MapEnvironment({{"KV_INDEXER_TLS_CA_FILE", File("ca", "CA")},
                      {"KV_INDEXER_TLS_CLIENT_CERT_FILE", File("c", "CERT")},
                      {"KV_INDEXER_TLS_CLIENT_KEY_FILE", File("k", "KEY")},
                      {"KV_INDEXER_TLS_SERVER_NAME", " indexer.internal "},
                      {"KV_INDEXER_WRITE_TOKEN_FILE",
                       File("t", "  tok_1-0123456789abcdef\n")}}));
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_TRUE(security->tls);
  EXPECT_EQ(security->root_certs_pem, "CA");
  EXPECT_EQ(security->client_cert_pem, "CERT");
  EXPECT_EQ(security->client_key_pem, "KEY");
  EXPECT_EQ(security->server_name, "indexer.internal");
  EXPECT_EQ(security->write_token, "tok_1-0123456789abcdef");
  EXPECT_NE(MakeChannelCredentials(*security, false), nullptr);
}

TEST_F(ClientSecurityTest, TokenAloneKeepsPlaintext) {
  auto security = LoadClientSecurity(MapEnvironment(
      {{"KV_INDEXER_WRITE_TOKEN_FILE", File("t", "x-0123456789abcdef")}}));
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_FALSE(security->tls);
  EXPECT_TRUE(security->has_write_token());
}

TEST_F(ClientSecurityTest, BadValuesNameTheVariable) {
  const std::string pem = File("x.pem", "X");
  const std::string empty = File("empty", "");
  const std::string missing = dir_.path() + "/missing";
  EXPECT_THAT(Error({{"KV_INDEXER_TLS_CLIENT_CERT_FILE", pem}}),
              HasSubstr("KV_INDEXER_TLS_CLIENT_KEY_FILE is unset"));
  EXPECT_THAT(Error({{"KV_INDEXER_TLS_CLIENT_KEY_FILE", pem}}),
              HasSubstr("KV_INDEXER_TLS_CLIENT_CERT_FILE is unset"));
  EXPECT_THAT(Error({{"KV_INDEXER_TLS_SERVER_NAME", "a"}}),
              AllOf(HasSubstr("KV_INDEXER_TLS_SERVER_NAME=\"a\""),
                    HasSubstr("TLS, which is off")));
  EXPECT_THAT(Error({{"KV_INDEXER_TLS_CA_FILE", pem},
                     {"KV_INDEXER_TLS_SERVER_NAME", "a b"}}),
              HasSubstr("KV_INDEXER_TLS_SERVER_NAME"));
  for (const char* var :
       {"KV_INDEXER_TLS_CA_FILE", "KV_INDEXER_TLS_CLIENT_CERT_FILE",
        "KV_INDEXER_TLS_CLIENT_KEY_FILE", "KV_INDEXER_WRITE_TOKEN_FILE"}) {
    SCOPED_TRACE(var);
    Vars vars = {{"KV_INDEXER_TLS_CLIENT_CERT_FILE", pem},
                 {"KV_INDEXER_TLS_CLIENT_KEY_FILE", pem}};
    vars[var] = missing;
    EXPECT_THAT(Error(vars), AllOf(HasSubstr(var), HasSubstr(missing),
                                   HasSubstr("No such file")));
    vars[var] = empty;
    EXPECT_THAT(Error(vars), AllOf(HasSubstr(var), HasSubstr("empty")));
  }
}

TEST_F(ClientSecurityTest, TokenErrorsNeverShowTheToken) {
  const auto token_error = [&](const std::string& content) {
    auto token =
        ReadTokenFile("KV_INDEXER_WRITE_TOKEN_FILE", File("t", content));
    EXPECT_FALSE(token.ok());
    return std::string(token.status().message());
  };
  EXPECT_THAT(token_error("hunter2 hunter3"),
              AllOf(HasSubstr("KV_INDEXER_WRITE_TOKEN_FILE"),
                    Not(HasSubstr("hunter"))));
  EXPECT_THAT(token_error("hunter2\nsecond line"), Not(HasSubstr("hunter")));
  EXPECT_THAT(token_error("\n\n"), HasSubstr("only whitespace"));
  auto ok = ReadTokenFile("V", File("t", "abc-0123456789abc\n"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, "abc-0123456789abc");
}

TEST_F(ClientSecurityTest, ShortTokensAndWritableFilesAreRefused) {
  auto short_token = ReadTokenFile("V", File("t", "x\n"));
  ASSERT_FALSE(short_token.ok());
  EXPECT_THAT(short_token.status().message(),
              AllOf(HasSubstr("V="), HasSubstr("1 characters"),
                    HasSubstr("at least 16")));
  auto just_enough = ReadTokenFile("V", File("t", "0123456789abcdef"));
  EXPECT_TRUE(just_enough.ok()) << just_enough.status();

  const std::string writable = File("w", "0123456789abcdef-token\n");
  ASSERT_EQ(::chmod(writable.c_str(), 0662), 0);
  auto refused = ReadTokenFile("V", writable);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(),
              AllOf(HasSubstr("writable by its group or by others"),
                    HasSubstr("0662")));
  ASSERT_EQ(::chmod(writable.c_str(), 0600), 0);
  EXPECT_TRUE(ReadTokenFile("V", writable).ok());
}

TEST(PlaintextTokenWarningTest, OnlyATokenInClearBeyondLoopback) {
  ClientSecurity token_only;
  token_only.write_token = "0123456789abcdef";
  const auto warn = [&](const std::string& target, bool use_tls,
                        const ClientSecurity& security) {
    return PlaintextTokenWarning(GrpcTarget{target, use_tls}, security);
  };
  const std::optional<std::string> far =
      warn("10.0.0.7:50051", false, token_only);
  ASSERT_TRUE(far.has_value());
  EXPECT_THAT(*far,
              AllOf(HasSubstr("10.0.0.7:50051"), HasSubstr("clear text")));
  EXPECT_TRUE(warn("indexer.internal:50051", false, token_only).has_value());
  EXPECT_EQ(warn("127.0.0.1:50051", false, token_only), std::nullopt);
  EXPECT_EQ(warn("[::1]:50051", false, token_only), std::nullopt);
  EXPECT_EQ(warn("localhost:50051", false, token_only), std::nullopt);
  EXPECT_EQ(warn("unix:/run/kv.sock", false, token_only), std::nullopt);
  EXPECT_EQ(warn("10.0.0.7:443", true, token_only), std::nullopt);
  ClientSecurity tls = token_only;
  tls.tls = true;
  EXPECT_EQ(warn("10.0.0.7:50051", false, tls), std::nullopt);
  EXPECT_EQ(warn("10.0.0.7:50051", false, ClientSecurity{}), std::nullopt);
}

}  // namespace
}  // namespace kvindexer::client_channel_test
