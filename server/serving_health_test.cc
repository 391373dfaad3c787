// ServingHealth's decision for a failed state log, through a health service
// that records what it is told.
#include "server/serving_health.h"

#include <map>
#include <mutex>
#include <string>

#include "gtest/gtest.h"

namespace kvindexer {
namespace serving_health_test {

class RecordedHealth final : public grpc::HealthCheckServiceInterface {
 public:
  void SetServingStatus(const std::string& name, bool serving) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_[name] = serving;
  }
  void SetServingStatus(bool serving) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, s] : status_) s = serving;
  }
  void Shutdown() override {}
  std::map<std::string, bool> status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, bool> status_;
};

TEST(ServingHealthLogFailureTest, AFailedLogIsNotServingForGood) {
  RecordedHealth service;
  ServingHealth health(&service, {"", "a.B"});
  health.Listening();
  EXPECT_TRUE(health.serving());

  health.LogFailed("fdatasync: Input/output error (/d/wal-1.log)");
  EXPECT_FALSE(health.serving());
  EXPECT_EQ(service.status(),
            (std::map<std::string, bool>{{"", false}, {"a.B", false}}));
  EXPECT_EQ(health.reason(), "fdatasync: Input/output error (/d/wal-1.log)");
  // The first failure is the reason; a replica's log catching up does not
  // bring the server back.
  health.LogFailed("another");
  health.LogFollowing(std::nullopt);
  EXPECT_FALSE(health.serving());
  EXPECT_EQ(health.reason(), "fdatasync: Input/output error (/d/wal-1.log)");
  EXPECT_EQ(service.status().at(""), false);

  // The backend's failure, when there is one too, is named first.
  health.BackendFailed("apply of worker w failed: boom");
  EXPECT_EQ(health.reason(), "apply of worker w failed: boom");
  health.ShuttingDown();
  EXPECT_FALSE(health.serving());
}

TEST(ServingHealthLogFailureTest, AFailureBeforeListeningHoldsAfterwards) {
  RecordedHealth service;
  ServingHealth health(&service, {""});
  health.LogFailed("fdatasync: Input/output error (/d/wal-1.log)");
  EXPECT_EQ(health.reason(), std::nullopt);  // not listening yet
  health.Listening();
  EXPECT_FALSE(health.serving());
  EXPECT_EQ(service.status(), (std::map<std::string, bool>{{"", false}}));
  EXPECT_EQ(health.reason(), "fdatasync: Input/output error (/d/wal-1.log)");
}

}  // namespace serving_health_test
}  // namespace kvindexer
