# ctest driver for conformance.detects_broken_backend (cmake -P): the suite
# run on a backend that stores nothing (the loader's "good" stub fixture)
# must fail, and fail broadly, so the suite is known not to pass vacuously.
# Inputs: -DCONFORMANCE=<kvindexer-conformance> -DSTUB=<stub plugin path>
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env KV_INDEXER_BACKEND=${STUB}
          KV_INDEXER_CONFORMANCE_ITERATIONS=2
          ${CONFORMANCE} --gtest_filter=-*Concurrency*
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "the suite passed on a backend that stores nothing")
endif()
string(REGEX MATCH "([0-9]+) FAILED TESTS?" failed "${out}")
if(NOT failed OR CMAKE_MATCH_1 LESS 80)
  message(FATAL_ERROR "expected at least 80 failed tests on the stub, got "
                      "'${failed}' (exit ${rc})\n${err}")
endif()
message(STATUS "the suite rejects the stub backend: ${failed}")
