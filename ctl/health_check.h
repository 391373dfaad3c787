// The client side of grpc.health.v1.Health/Check for the whole server
// (service ""). Debian ships no generated health stubs, so the call goes
// through a generic stub and the two tiny messages are encoded by hand:
// the request is empty and the response is one enum field.
#ifndef KVINDEXER_CTL_HEALTH_CHECK_H_
#define KVINDEXER_CTL_HEALTH_CHECK_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

namespace kvindexer::ctl {

// Asks the server behind `channel` for its overall health. On OK,
// `serving_status` is "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or
// "UNKNOWN". A malformed response is INTERNAL.
grpc::Status CheckServerHealth(const std::shared_ptr<grpc::Channel>& channel,
                               std::chrono::milliseconds timeout,
                               std::string* serving_status);

// Decodes a HealthCheckResponse (field 1, the status enum); false when the
// bytes are not one. Exposed for tests.
bool DecodeHealthResponse(const std::string& bytes,
                          std::string* serving_status);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_HEALTH_CHECK_H_
