# kvindexer_add_backend(<name> SOURCES ... [LIBRARIES ...])
# Builds a backend plugin named kvindexer-backend-<name>.so into
# lib/kvindexer/backends/, with hidden visibility so that only the entry
# symbol is exported.
function(kvindexer_add_backend name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  set(target kvindexer_backend_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(${target} PRIVATE ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME kvindexer-backend-${name}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/${KVINDEXER_BACKEND_DIR})
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  kvindexer_warnings(${target})
  install(TARGETS ${target} LIBRARY DESTINATION ${KVINDEXER_BACKEND_DIR})
endfunction()
