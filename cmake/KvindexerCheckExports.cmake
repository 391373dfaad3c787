# Checks that a backend plugin exports exactly one dynamic symbol,
# kvindexer_backend_descriptor (docs/backend-abi.md). kvindexer_add_backend()
# runs it after every link of a plugin.
#
#   cmake -DPLUGIN=<plugin.so> -DNM=<nm> -P KvindexerCheckExports.cmake
#
# Fails, listing what the plugin exports, when it defines any other dynamic
# symbol or does not define the entry symbol.
foreach(var PLUGIN NM)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "KvindexerCheckExports.cmake: -D${var}=... is required")
  endif()
endforeach()

execute_process(
  COMMAND "${NM}" -D --defined-only "${PLUGIN}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${PLUGIN} failed (${rc}): ${err}")
endif()

# Lines are "<address> <type> <name>[@[@]<version>]".
set(symbols)
string(REPLACE "\n" ";" lines "${out}")
foreach(line IN LISTS lines)
  if(line MATCHES "^[0-9a-fA-F]* *[A-Za-z] ([^ @]+)")
    list(APPEND symbols "${CMAKE_MATCH_1}")
  endif()
endforeach()

if(NOT symbols STREQUAL "kvindexer_backend_descriptor")
  list(LENGTH symbols count)
  list(JOIN symbols ", " listed)
  if(count EQUAL 0)
    set(listed "(nothing)")
  endif()
  message(FATAL_ERROR
    "${PLUGIN} must export exactly one dynamic symbol, "
    "kvindexer_backend_descriptor; it exports ${count}: ${listed}. Build it "
    "with kvindexer_add_backend(), or with hidden visibility and the linker "
    "version script kvindexer_backend.map.")
endif()
