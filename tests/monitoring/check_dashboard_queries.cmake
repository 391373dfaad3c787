# Parses every query of the Grafana dashboard with promtool: each panel
# target's `expr`, with Grafana's variables replaced by values PromQL
# accepts, becomes a recording rule of a generated rules file that
# `promtool check rules` must accept. A query with a syntax error, or a
# dashboard with no query at all, fails.
#
#   cmake -DDASHBOARD=<json> -DPROMTOOL=<promtool> -DOUT=<rules.yml>
#         -P check_dashboard_queries.cmake
cmake_minimum_required(VERSION 3.19)  # string(JSON)
foreach(var DASHBOARD PROMTOOL OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_dashboard_queries: -D${var}=... is required")
  endif()
endforeach()

file(READ "${DASHBOARD}" dashboard)
set(rules "groups:\n  - name: dashboard\n    rules:\n")
set(count 0)

# Appends a rule for every target of `panels_json` (a JSON array of panels),
# and for the panels of collapsed rows nested in it.
function(add_panel_queries panels_json)
  string(JSON n LENGTH "${panels_json}")
  if(n EQUAL 0)
    return()
  endif()
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON panel GET "${panels_json}" ${i})
    string(JSON title ERROR_VARIABLE no_title GET "${panel}" title)
    string(JSON nested ERROR_VARIABLE no_nested GET "${panel}" panels)
    if(NOT no_nested)
      add_panel_queries("${nested}")
    endif()
    string(JSON targets ERROR_VARIABLE no_targets GET "${panel}" targets)
    if(no_targets)
      continue()
    endif()
    string(JSON nt LENGTH "${targets}")
    if(nt EQUAL 0)
      continue()
    endif()
    math(EXPR tlast "${nt} - 1")
    foreach(t RANGE ${tlast})
      string(JSON expr GET "${targets}" ${t} expr)
      string(REPLACE "$__rate_interval" "5m" expr "${expr}")
      string(REPLACE "$__interval" "1m" expr "${expr}")
      string(REPLACE "$__range" "1h" expr "${expr}")
      string(REGEX REPLACE "\\$\\{?[A-Za-z_][A-Za-z0-9_]*\\}?" ".*" expr
                           "${expr}")
      string(REPLACE "'" "''" expr "${expr}")
      string(REPLACE "\n" " " expr "${expr}")
      math(EXPR c "${count} + 1")
      set(count ${c} PARENT_SCOPE)
      set(count ${c})
      string(APPEND rules
        "      # ${title}\n"
        "      - record: dashboard:query_${c}\n"
        "        expr: '${expr}'\n")
    endforeach()
  endforeach()
  set(rules "${rules}" PARENT_SCOPE)
endfunction()

string(JSON panels GET "${dashboard}" panels)
add_panel_queries("${panels}")
if(count EQUAL 0)
  message(FATAL_ERROR "${DASHBOARD}: no panel has a query")
endif()
file(WRITE "${OUT}" "${rules}")
execute_process(COMMAND "${PROMTOOL}" check rules "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR
    "promtool rejects a query of ${DASHBOARD} (queries in ${OUT}):\n${out}${err}")
endif()
message(STATUS "${count} dashboard queries parse")
