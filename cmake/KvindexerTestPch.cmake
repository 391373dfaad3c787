# KVINDEXER_TEST_PCH=ON precompiles, once, the third-party headers that
# nearly every test source parses (the standard library's common headers,
# GoogleTest and gMock, gRPC, abseil's status and strings, the protobuf
# and gRPC headers that generated code includes, cppzmq), and every test
# executable reuses that one precompiled header.
# Parsing those headers is about three quarters of a test file's compile
# time at -O0, and a unity batch still parses them once per batch; a test
# program of one file (most end-to-end tests) gets nothing from batches.
# scripts/test.sh turns it on with the unity batches (docs/testing.md); it
# stays off by default, so that a developer's build proves each file
# includes what it uses.
#
# One header serves every target only when they compile alike: it is built
# by kvindexer_test_pch with the flags of the test executables
# (KVINDEXER_TEST_CXX_FLAGS included), and only the targets those flags
# reach reuse it (kvindexer_test_executables()). It names no macro that one
# test target defines and another does not (spdlog, fmt and msgpack stay
# out). Should a target still differ in a way GCC checks, the compiler
# says "not used because" and parses the headers as text, which works here
# because every one of them is found in the system's include directory;
# the warning is not an error. kvindexer_backend_kit_tests does not take the
# header: it checks that the installed backend kit includes what it uses.
option(KVINDEXER_TEST_PCH
  "Test executables share one precompiled header of third-party headers" OFF)

function(kvindexer_test_pch_finish)
  if(NOT KVINDEXER_TEST_PCH OR NOT KVINDEXER_BUILD_TESTS)
    return()
  endif()
  add_library(kvindexer_test_pch STATIC
    ${PROJECT_SOURCE_DIR}/tests/support/test_pch_anchor.cc)
  target_link_libraries(kvindexer_test_pch PRIVATE
    GTest::gmock GTest::gtest gRPC::grpc++ protobuf::libprotobuf cppzmq
    absl::status absl::statusor absl::strings absl::str_format)
  kvindexer_warnings(kvindexer_test_pch)
  kvindexer_test_cxx_flags(flags)
  target_compile_options(kvindexer_test_pch PRIVATE ${flags} -pthread)
  target_precompile_headers(kvindexer_test_pch PRIVATE
    <algorithm> <atomic> <chrono> <cstdint> <functional> <map> <memory>
    <mutex> <optional> <set> <string> <string_view> <thread> <utility>
    <vector>
    <gmock/gmock.h> <gtest/gtest.h> <grpcpp/grpcpp.h>
    <grpcpp/generic/async_generic_service.h>
    <grpcpp/impl/codegen/proto_utils.h>
    <grpcpp/impl/codegen/server_callback_handlers.h>
    <grpcpp/support/async_stream.h> <grpcpp/support/async_unary_call.h>
    <grpcpp/support/client_callback.h> <grpcpp/support/message_allocator.h>
    <grpcpp/support/method_handler.h> <grpcpp/support/server_callback.h>
    <grpcpp/support/sync_stream.h>
    <google/protobuf/arena.h> <google/protobuf/arenastring.h>
    <google/protobuf/extension_set.h>
    <google/protobuf/generated_enum_reflection.h>
    <google/protobuf/generated_message_bases.h>
    <google/protobuf/generated_message_reflection.h>
    <google/protobuf/generated_message_util.h>
    <google/protobuf/io/coded_stream.h> <google/protobuf/message.h>
    <google/protobuf/metadata_lite.h> <google/protobuf/repeated_field.h>
    <google/protobuf/unknown_field_set.h>
    <zmq.hpp>
    <absl/status/status.h> <absl/status/statusor.h>
    <absl/strings/numbers.h> <absl/strings/str_cat.h>
    <absl/strings/str_format.h> <absl/strings/str_split.h>)
  kvindexer_test_executables(targets)
  list(REMOVE_ITEM targets kvindexer_backend_kit_tests)
  foreach(target IN LISTS targets)
    target_precompile_headers(${target} REUSE_FROM kvindexer_test_pch)
    # -pthread defines _REENTRANT, which GCC checks: a test program whose
    # libraries do not ask for it compiles with it too.
    target_compile_options(${target} PRIVATE -pthread -Wno-error=invalid-pch)
  endforeach()
endfunction()
