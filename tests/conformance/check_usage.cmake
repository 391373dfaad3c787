# ctest driver for conformance.requires_backend_variable (cmake -P): with
# KV_INDEXER_BACKEND unset, empty, or naming nothing, kvindexer-conformance
# must exit non-zero and name the variable, never pass silently.
# Input: -DCONFORMANCE=<path to kvindexer-conformance>
foreach(value "<unset>" "" " , ")
  if(value STREQUAL "<unset>")
    set(env_args --unset=KV_INDEXER_BACKEND)
  else()
    set(env_args "KV_INDEXER_BACKEND=${value}")
  endif()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env ${env_args} ${CONFORMANCE}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "KV_INDEXER_BACKEND='${value}': exited 0\n${out}")
  endif()
  if(NOT err MATCHES "KV_INDEXER_BACKEND is not set or empty" OR
     NOT err MATCHES "usage:")
    message(FATAL_ERROR
      "KV_INDEXER_BACKEND='${value}': no usage naming the variable\n${err}")
  endif()
  if(out MATCHES "\\[  PASSED  \\]")
    message(FATAL_ERROR "KV_INDEXER_BACKEND='${value}': tests ran\n${out}")
  endif()
endforeach()
message(STATUS "kvindexer-conformance refuses to run without a backend")
