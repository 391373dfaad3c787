# kvindexer_add_backend(<name> SOURCES <file>... [LIBRARIES <library>...])
#
# Builds the backend plugin kvindexer-backend-<name>.so as the MODULE target
# kvindexer_backend_<name>, linked against kvindexer::backend_api (the ABI
# header and the backend kit) and LIBRARIES, the way the ABI requires
# (docs/backend-abi.md):
#   * hidden visibility, and a linker version script that leaves
#     kvindexer_backend_descriptor the only dynamic symbol;
#   * -Wl,--no-undefined, so a missing library fails the link rather than
#     the dlopen;
#   * after every link, a check that the plugin exports exactly that one
#     symbol (KvindexerCheckExports.cmake).
# The plugin installs into lib/kvindexer/backends (install component
# `backends`), where kv-indexer-server and kvindexer-conformance of the same
# prefix find it by name. <name> is appended to the global property
# KVINDEXER_BACKENDS, the list of backends this build registers.
#
# The .so is built in KVINDEXER_BACKEND_OUTPUT_DIRECTORY when that variable is
# set, else in the current binary directory.
#
# This file is part of the installed CMake package: find_package(kvindexer
# CONFIG) defines kvindexer::backend_api and this function.
include_guard(GLOBAL)

function(kvindexer_add_backend name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kvindexer_add_backend(${name}): unexpected arguments "
                        "'${ARG_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "kvindexer_add_backend(${name}): SOURCES is required")
  endif()
  if(NOT TARGET kvindexer::backend_api)
    message(FATAL_ERROR "kvindexer_add_backend(${name}): kvindexer::backend_api "
                        "is not defined; call find_package(kvindexer CONFIG "
                        "REQUIRED) first")
  endif()
  set(target kvindexer_backend_${name})
  set(version_script
      ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/kvindexer_backend.map)
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE kvindexer::backend_api
                        ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME kvindexer-backend-${name}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${version_script})
  if(KVINDEXER_BACKEND_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY ${KVINDEXER_BACKEND_OUTPUT_DIRECTORY})
  endif()
  target_link_options(${target} PRIVATE
    -Wl,--no-undefined "-Wl,--version-script=${version_script}")
  if(CMAKE_NM)
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND ${CMAKE_COMMAND} -DPLUGIN=$<TARGET_FILE:${target}>
              -DNM=${CMAKE_NM}
              -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/KvindexerCheckExports.cmake
      COMMENT "Checking that ${target} exports only kvindexer_backend_descriptor"
      VERBATIM)
  else()
    message(WARNING "kvindexer_add_backend(${name}): no nm found "
                    "(CMAKE_NM); the exported-symbol check is skipped")
  endif()
  install(TARGETS ${target}
          LIBRARY DESTINATION lib/kvindexer/backends COMPONENT backends)
  set_property(GLOBAL APPEND PROPERTY KVINDEXER_BACKENDS ${name})
endfunction()
