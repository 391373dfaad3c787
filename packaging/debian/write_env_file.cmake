# Writes an environment file for systemd's EnvironmentFile= (cmake -P) that
# lists every variable of one program, each commented out with its default,
# what it accepts and what it means. The text comes from the tables of the
# program's section "## `<program>`" of docs/configuration.md, the page the
# ctest e2e.configuration_doc holds to the program's --help; scripts/
# check-package.sh checks the installed file against the installed --help.
# Inputs: -DDOC=<docs/configuration.md> -DPROGRAM=<kv-indexer-server>
#         -DOUTPUT=<file> -DHEADER=<file whose text opens the output>
cmake_minimum_required(VERSION 3.22)

foreach(var DOC PROGRAM OUTPUT HEADER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "write_env_file.cmake: -D${var}=... is required")
  endif()
endforeach()

set(kWidth 78)
set(kVariablePattern "(KV_INDEXER|SGLANG)_[A-Z0-9_]*[A-Z0-9]")

# Markdown of one table cell as plain text: code spans and links lose their
# markup, escaped pipes become pipes.
function(plain_text cell out)
  string(STRIP "${cell}" text)
  string(REGEX REPLACE "<lb>([^<]*)<rb>\\(([^()]*)\\)" "\\1" text "${text}")
  string(REPLACE "`" "" text "${text}")
  string(REPLACE "\\|" "|" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# `text` after `label`, wrapped at kWidth into comment lines indented by
# `indent` spaces after "# ".
function(comment_block label text indent out)
  string(REPEAT " " ${indent} pad)
  string(REGEX REPLACE "[ \t]+" ";" words "${label}${text}")
  set(block "")
  set(line "#${pad}")
  set(line_has_word FALSE)
  foreach(word IN LISTS words)
    # A placeholder (<lb>, <semicolon>) stands for one character.
    string(REGEX REPLACE "<(lb|rb|semicolon)>" "x" measured "${line} ${word}")
    string(LENGTH "${measured}" would_be)
    if(line_has_word AND would_be GREATER kWidth)
      string(APPEND block "${line}\n")
      set(line "#${pad}   ${word}")
    else()
      string(APPEND line " ${word}")
    endif()
    set(line_has_word TRUE)
  endforeach()
  string(APPEND block "${line}\n")
  set(${out} "${block}" PARENT_SCOPE)
endfunction()

# The doc as a list of lines. Brackets and semicolons would join or split
# list items; they stand in as placeholders until the text is written.
file(READ "${DOC}" doc)
string(REPLACE ";" "<semicolon>" doc "${doc}")
string(REPLACE "[" "<lb>" doc "${doc}")
string(REPLACE "]" "<rb>" doc "${doc}")
string(REPLACE "\n" ";" lines "${doc}")

file(READ "${HEADER}" body)
set(section "")
set(heading "")
set(count 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^## (.*)$")
    set(section "${CMAKE_MATCH_1}")
    set(heading "")
    continue()
  endif()
  if(NOT section STREQUAL "`${PROGRAM}`")
    continue()
  endif()
  if(line MATCHES "^### (.*)$")
    set(heading "${CMAKE_MATCH_1}")
    continue()
  endif()
  # A row of a table: | Variable | Default | Accepted | Meaning |
  if(NOT line MATCHES "^\\|(.*)\\|$")
    continue()
  endif()
  string(REPLACE "\\|" "<pipe>" row "${CMAKE_MATCH_1}")
  string(REPLACE "|" ";" cells "${row}")
  list(LENGTH cells n)
  list(GET cells 0 names_cell)
  string(REGEX MATCHALL "${kVariablePattern}" names "${names_cell}")
  if(NOT names)
    continue()  # the header and the separator
  endif()
  if(NOT n EQUAL 4)
    message(FATAL_ERROR "write_env_file.cmake: a row of ${DOC} without the "
      "four cells Variable | Default | Accepted | Meaning:\n${line}")
  endif()
  foreach(i 1 2 3)
    list(GET cells ${i} cell)
    string(REPLACE "<pipe>" "|" cell "${cell}")
    plain_text("${cell}" text)
    set(cell_${i} "${text}")
  endforeach()
  # A default that is one code span is a value to show in the assignment;
  # anything else (unset, empty, required) leaves the assignment empty.
  list(GET cells 1 default_cell)
  string(STRIP "${default_cell}" default_cell)
  set(value "")
  if(default_cell MATCHES "^`([^`]*)`$")
    set(value "${CMAKE_MATCH_1}")
  endif()
  if(heading)
    string(APPEND body "\n# ---- ${heading} ----\n")
    set(heading "")
  endif()
  string(APPEND body "\n")
  foreach(name IN LISTS names)
    string(APPEND body "# ${name}\n")
  endforeach()
  comment_block("" "${cell_3}" 2 meaning)
  comment_block("Accepted: " "${cell_2}" 2 accepted)
  comment_block("Default: " "${cell_1}" 2 default_text)
  string(APPEND body "${meaning}${accepted}${default_text}")
  foreach(name IN LISTS names)
    string(APPEND body "#${name}=${value}\n")
    math(EXPR count "${count} + 1")
  endforeach()
endforeach()

if(count EQUAL 0)
  message(FATAL_ERROR "write_env_file.cmake: ${DOC} has no variable in a "
    "table of its section \"## `${PROGRAM}`\"")
endif()
string(REPLACE "<semicolon>" ";" body "${body}")
string(REPLACE "<lb>" "[" body "${body}")
string(REPLACE "<rb>" "]" body "${body}")
file(WRITE "${OUTPUT}" "${body}")
message(STATUS "${OUTPUT}: ${count} variables of ${PROGRAM}")
