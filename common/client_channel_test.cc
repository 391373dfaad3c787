// ClientSecurity (common/client_channel.h) and the file readers of
// common/env_file.h: every bad value names its variable, the token never
// appears in a message, and the token metadata.
#include "common/client_channel.h"

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
  auto security = LoadClientSecurity(MapEnvironment(
      {{"KV_INDEXER_TLS_CA_FILE", File("ca", "CA")},
       {"KV_INDEXER_TLS_CLIENT_CERT_FILE", File("c", "CERT")},
       {"KV_INDEXER_TLS_CLIENT_KEY_FILE", File("k", "KEY")},
       {"KV_INDEXER_TLS_SERVER_NAME", " indexer.internal "},
       {"KV_INDEXER_WRITE_TOKEN_FILE", File("t", "  tok_1\n")}}));
  ASSERT_TRUE(security.ok()) << security.status();
  EXPECT_TRUE(security->tls);
  EXPECT_EQ(security->root_certs_pem, "CA");
  EXPECT_EQ(security->client_cert_pem, "CERT");
  EXPECT_EQ(security->client_key_pem, "KEY");
  EXPECT_EQ(security->server_name, "indexer.internal");
  EXPECT_EQ(security->write_token, "tok_1");
  EXPECT_NE(MakeChannelCredentials(*security, false), nullptr);
}

TEST_F(ClientSecurityTest, TokenAloneKeepsPlaintext) {
  auto security = LoadClientSecurity(
      MapEnvironment({{"KV_INDEXER_WRITE_TOKEN_FILE", File("t", "x")}}));
  ASSERT_TRUE(security.ok());
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
  auto ok = ReadTokenFile("V", File("t", "abc\n"));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "abc");
}

}  // namespace
}  // namespace kvindexer::client_channel_test
