# ctest driver for backend_kit.export_check_rejects_extra_symbols (cmake -P):
# KvindexerCheckExports.cmake must fail on PLUGIN, which exports
# kvindexer_kit_extra_symbol besides kvindexer_backend_descriptor, and name
# both.
# Inputs: -DCHECK=<KvindexerCheckExports.cmake> -DPLUGIN=<.so> -DNM=<nm>
execute_process(
  COMMAND ${CMAKE_COMMAND} -DPLUGIN=${PLUGIN} -DNM=${NM} -P ${CHECK}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "the check accepted ${PLUGIN}, which exports two "
                      "symbols\n${out}${err}")
endif()
# CMake wraps the message; match it with its whitespace collapsed.
string(REGEX REPLACE "[ \n]+" " " flat "${err}")
set(expected
    "exports 2: kvindexer_backend_descriptor, kvindexer_kit_extra_symbol")
if(NOT flat MATCHES "${expected}")
  message(FATAL_ERROR "the check failed without naming the symbols:\n${err}")
endif()
message(STATUS "the export check rejects a plugin with an extra symbol")
