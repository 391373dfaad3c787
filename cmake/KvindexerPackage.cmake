# The kit for backend authors: the INTERFACE target kvindexer::backend_api and
# the installed CMake package around it.
#
# `cmake --install <build> --component backend_kit` installs, without needing
# anything else built but kvindexer-conformance:
#   include/kvindexer/backend.h, backend_kit.h      the ABI and its helpers
#   lib/cmake/kvindexer/                            kvindexerConfig.cmake,
#       kvindexerConfigVersion.cmake, kvindexerTargets.cmake,
#       KvindexerBackend.cmake (kvindexer_add_backend), the version script
#       and the exported-symbol check it uses
#   bin/kvindexer-conformance                      (tests/conformance)
# The in-tree backends install with component `backends`.
include(CMakePackageConfigHelpers)

set(KVINDEXER_INSTALL_BINDIR bin)
set(KVINDEXER_INSTALL_CMAKEDIR lib/cmake/kvindexer)

add_library(kvindexer_backend_api INTERFACE)
add_library(kvindexer::backend_api ALIAS kvindexer_backend_api)
set_target_properties(kvindexer_backend_api PROPERTIES
  EXPORT_NAME backend_api)
target_include_directories(kvindexer_backend_api INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:include>)
target_compile_features(kvindexer_backend_api INTERFACE cxx_std_20)

install(FILES
  ${PROJECT_SOURCE_DIR}/include/kvindexer/backend.h
  ${PROJECT_SOURCE_DIR}/include/kvindexer/backend_kit.h
  DESTINATION include/kvindexer COMPONENT backend_kit)
install(TARGETS kvindexer_backend_api EXPORT kvindexerTargets
  COMPONENT backend_kit)
install(EXPORT kvindexerTargets NAMESPACE kvindexer::
  DESTINATION ${KVINDEXER_INSTALL_CMAKEDIR} COMPONENT backend_kit)

# The ABI version, for packages that need to know it at configure time.
file(STRINGS ${PROJECT_SOURCE_DIR}/include/kvindexer/backend.h abi_lines
     REGEX "^inline constexpr uint32_t kBackendAbiM(ajor|inor) = [0-9]+;")
foreach(line IN LISTS abi_lines)
  if(line MATCHES "kBackendAbiMajor = ([0-9]+)")
    set(KVINDEXER_BACKEND_ABI_MAJOR ${CMAKE_MATCH_1})
  elseif(line MATCHES "kBackendAbiMinor = ([0-9]+)")
    set(KVINDEXER_BACKEND_ABI_MINOR ${CMAKE_MATCH_1})
  endif()
endforeach()
if(NOT DEFINED KVINDEXER_BACKEND_ABI_MAJOR OR
   NOT DEFINED KVINDEXER_BACKEND_ABI_MINOR)
  message(FATAL_ERROR "cannot read kBackendAbiMajor/kBackendAbiMinor from "
                      "include/kvindexer/backend.h")
endif()

set(package_dir ${CMAKE_CURRENT_BINARY_DIR}/kvindexer_package)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/kvindexerConfig.cmake.in
  ${package_dir}/kvindexerConfig.cmake
  INSTALL_DESTINATION ${KVINDEXER_INSTALL_CMAKEDIR}
  PATH_VARS KVINDEXER_INSTALL_BINDIR)
write_basic_package_version_file(
  ${package_dir}/kvindexerConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${package_dir}/kvindexerConfig.cmake
  ${package_dir}/kvindexerConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/KvindexerBackend.cmake
  ${CMAKE_CURRENT_LIST_DIR}/KvindexerCheckExports.cmake
  ${CMAKE_CURRENT_LIST_DIR}/kvindexer_backend.map
  DESTINATION ${KVINDEXER_INSTALL_CMAKEDIR} COMPONENT backend_kit)
