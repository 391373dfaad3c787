# ctest driver for e2e.configuration_doc (cmake -P): docs/configuration.md
# and each program's --help name the same variables. For every program, each
# KV_INDEXER_* or SGLANG_* name in its --help must be in the first column of
# a table in the doc's section headed "## `<program>`", and each name in that
# column must be in its --help. Prose elsewhere in the section is not read,
# so it may mention other programs' variables.
# Inputs: -DDOC=<docs/configuration.md> -DSERVER=<kv-indexer-server>
#         -DBRIDGE=<kv-indexer-bridge> -DCTL=<kv-indexer-ctl>
cmake_minimum_required(VERSION 3.22)

set(kVariablePattern "(KV_INDEXER|SGLANG)_[A-Z0-9_]*[A-Z0-9]")

# The sorted, de-duplicated variable names in `text`.
function(variables_in text out)
  string(REGEX MATCHALL "${kVariablePattern}" found "${text}")
  if(found)
    list(REMOVE_DUPLICATES found)
    list(SORT found)
  endif()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# The doc as a list of lines. ';', '[' and ']' would split or join CMake
# list items; no variable name holds them.
file(READ "${DOC}" doc)
string(REPLACE ";" "," doc "${doc}")
string(REPLACE "[" "(" doc "${doc}")
string(REPLACE "]" ")" doc "${doc}")
string(REPLACE "\n" ";" lines "${doc}")

# doc_<program>: the names in the first column of the section's tables.
set(section "")
foreach(line IN LISTS lines)
  if(line MATCHES "^## (.*)$")
    set(section "${CMAKE_MATCH_1}")
    if(section MATCHES "^`(kv-indexer-[a-z]+)`$")
      set(seen_${CMAKE_MATCH_1} TRUE)
    endif()
  elseif(line MATCHES "^\\|([^|]*)\\|")
    set(first_cell "${CMAKE_MATCH_1}")
    if(section MATCHES "^`(kv-indexer-[a-z]+)`$")
      set(program "${CMAKE_MATCH_1}")
      variables_in("${first_cell}" names)
      list(APPEND doc_${program} ${names})
    endif()
  endif()
endforeach()

set(failures "")
foreach(pair "kv-indexer-server=${SERVER}" "kv-indexer-bridge=${BRIDGE}"
             "kv-indexer-ctl=${CTL}")
  string(REGEX MATCH "^([^=]+)=(.*)$" unused "${pair}")
  set(program "${CMAKE_MATCH_1}")
  set(binary "${CMAKE_MATCH_2}")
  execute_process(COMMAND "${binary}" --help
    RESULT_VARIABLE rc OUTPUT_VARIABLE help ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${program} --help exited ${rc}\n${err}")
  endif()
  variables_in("${help}" help_names)
  if(NOT help_names)
    message(FATAL_ERROR "${program} --help names no variable:\n${help}")
  endif()
  if(NOT seen_${program})
    string(APPEND failures
      "\n${DOC} has no section \"## `${program}`\"")
    continue()
  endif()
  set(doc_names ${doc_${program}})
  list(REMOVE_DUPLICATES doc_names)
  set(disagreements "")
  foreach(name IN LISTS help_names)
    if(NOT name IN_LIST doc_names)
      string(APPEND disagreements "\n${program}: ${name} is in --help but "
        "not in the first column of the doc's \"${program}\" section")
    endif()
  endforeach()
  foreach(name IN LISTS doc_names)
    if(NOT name IN_LIST help_names)
      string(APPEND disagreements "\n${program}: ${name} is in the doc's "
        "\"${program}\" section but not in --help")
    endif()
  endforeach()
  if(disagreements)
    string(APPEND failures "${disagreements}")
  else()
    list(LENGTH help_names count)
    message(STATUS "${program}: the same ${count} variables in --help and "
      "in the doc")
  endif()
endforeach()

if(failures)
  message(FATAL_ERROR "docs/configuration.md and --help disagree; add each "
    "variable to both or to neither:${failures}")
endif()
