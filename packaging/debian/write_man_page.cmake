# Writes a gzip-compressed section 1 manual page (cmake -P) whose
# description is the program's usage text, so that the page says what the
# program says. The page is compressed with `gzip -9n` (no name, no time
# stamp), as Debian wants.
# Inputs: -DPROGRAM=<executable> -DNAME=<program name> -DSUMMARY=<one line>
#         -DSYNOPSIS=<arguments> -DVERSION=<version> -DOUTPUT=<file.1.gz>
#         [-DSEE_ALSO=<a;b>] [-DFILES=<path=what;...>]
# The usage text is what `PROGRAM --help` prints on stdout, exiting 0. For
# a program that prints it otherwise:
#         [-DHELP_ARGS=<arguments, default --help>] [-DHELP_EXIT=<code>]
#         [-DHELP_STREAM=stderr] [-DHELP_FROM=<regex of its first line>]
cmake_minimum_required(VERSION 3.22)

foreach(var PROGRAM NAME SUMMARY SYNOPSIS VERSION OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "write_man_page.cmake: -D${var}=... is required")
  endif()
endforeach()

# Text as roff: backslashes and hyphens escaped.
function(roff_text text out)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

if(NOT DEFINED HELP_ARGS)
  set(HELP_ARGS --help)
endif()
if(NOT DEFINED HELP_EXIT)
  set(HELP_EXIT 0)
endif()
execute_process(COMMAND "${PROGRAM}" ${HELP_ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(HELP_STREAM STREQUAL "stderr")
  set(help "${err}")
else()
  set(help "${out}")
endif()
if(NOT rc EQUAL HELP_EXIT OR help STREQUAL "")
  message(FATAL_ERROR "write_man_page.cmake: ${PROGRAM} ${HELP_ARGS} exited "
    "${rc}, not ${HELP_EXIT}\n${out}${err}")
endif()
if(HELP_FROM)
  string(REGEX MATCH "${HELP_FROM}.*$" help "${help}")
  if(help STREQUAL "")
    message(FATAL_ERROR "write_man_page.cmake: no line of ${PROGRAM}'s "
      "usage text matches ${HELP_FROM}")
  endif()
endif()
# The text names the program as it was run; the page names it as installed.
string(REPLACE "${PROGRAM}" "${NAME}" help "${help}")
string(REGEX REPLACE "\n+$" "" help "${help}")

string(TOUPPER "${NAME}" title)
roff_text("${NAME}" name_roff)
roff_text("${SUMMARY}" summary_roff)
roff_text("${SYNOPSIS}" synopsis_roff)
roff_text("${help}" help_roff)
# Each line of the help starts with \& so that none is read as a request.
string(REPLACE "\n" "\n\\&" help_roff "\\&${help_roff}")
set(page ".TH \"${title}\" 1 \"\" \"kvindexer ${VERSION}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\n${name_roff} \\- ${summary_roff}\n")
string(APPEND page ".SH SYNOPSIS\n.B ${name_roff}\n${synopsis_roff}\n")
string(APPEND page ".SH DESCRIPTION\n"
  "The program's usage text:\n.PP\n.nf\n${help_roff}\n.fi\n")
if(FILES)
  string(APPEND page ".SH FILES\n")
  foreach(entry IN LISTS FILES)
    string(REGEX MATCH "^([^=]+)=(.*)$" unused "${entry}")
    roff_text("${CMAKE_MATCH_1}" path_roff)
    roff_text("${CMAKE_MATCH_2}" what_roff)
    string(APPEND page ".TP\n.I ${path_roff}\n${what_roff}\n")
  endforeach()
endif()
if(SEE_ALSO)
  set(refs "")
  foreach(ref IN LISTS SEE_ALSO)
    roff_text("${ref}" ref_roff)
    list(APPEND refs "\\fB${ref_roff}\\fR(1)")
  endforeach()
  list(JOIN refs ", " refs)
  string(APPEND page ".SH SEE ALSO\n${refs}\n")
endif()

get_filename_component(out_dir "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${out_dir}")
string(REGEX REPLACE "\\.gz$" "" plain "${OUTPUT}")
file(WRITE "${plain}" "${page}")
execute_process(COMMAND gzip -9nf "${plain}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT EXISTS "${OUTPUT}")
  message(FATAL_ERROR "write_man_page.cmake: gzip -9n ${plain} failed")
endif()
message(STATUS "${OUTPUT}: manual page of ${NAME}")
