# ctest driver for conformance.out_of_tree (cmake -P). Follows README.md's
# "Writing a backend" from an installed prefix:
#   1. cmake --install <build> --prefix <prefix> --component backend_kit
#      (headers, CMake package, bin/kvindexer-conformance) into a fresh
#      prefix;
#   2. configure the out-of-tree project (out_of_tree/CMakeLists.txt:
#      find_package(kvindexer CONFIG REQUIRED) + kvindexer_add_backend())
#      with -DCMAKE_PREFIX_PATH=<prefix> and build it;
#   3. run <prefix>/bin/kvindexer-conformance on the plugin by path;
#   4. cmake --install the plugin into the same prefix and run the installed
#      suite on it by name (a shorter run: the loader's lookup only).
# Inputs: BUILD_DIR WORK_DIR PROJECT_DIR BACKEND_SOURCE_DIR
#         [GENERATOR CXX_COMPILER SANITIZE]
foreach(var BUILD_DIR WORK_DIR PROJECT_DIR BACKEND_SOURCE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_out_of_tree.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "out_of_tree: ${step} failed (${rc}): ${ARGN}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${prefix} ${build})  # always from scratch

# 1. The kit, and nothing that needs the rest of the tree built.
run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix}
    --component backend_kit)
foreach(file include/kvindexer/backend.h include/kvindexer/backend_kit.h
             lib/cmake/kvindexer/kvindexerConfig.cmake
             lib/cmake/kvindexer/kvindexerConfigVersion.cmake
             bin/kvindexer-conformance)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "out_of_tree: the install did not produce "
                        "${prefix}/${file}")
  endif()
endforeach()
set(conformance ${prefix}/bin/kvindexer-conformance)

# 2. Configure and build the standalone project against the prefix.
set(configure_args -S ${PROJECT_DIR} -B ${build}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    -DKVINDEXER_BACKEND_SOURCE_DIR=${BACKEND_SOURCE_DIR})
if(GENERATOR)
  list(APPEND configure_args -G ${GENERATOR})
endif()
if(CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
# A sanitized suite loads a plugin built with the same sanitizer.
if(SANITIZE STREQUAL "address")
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined")
elseif(SANITIZE STREQUAL "thread")
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=-fsanitize=thread")
endif()
find_program(ccache ccache)
if(ccache)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${ccache})
endif()
run("configure" ${CMAKE_COMMAND} ${configure_args})
run("build" ${CMAKE_COMMAND} --build ${build} -j2)
set(plugin ${build}/kvindexer-backend-out_of_tree.so)
if(NOT EXISTS ${plugin})
  message(FATAL_ERROR "out_of_tree: ${plugin} was not built")
endif()

# 3. The installed suite, on the plugin by path (a shorter differential run).
run("conformance" ${CMAKE_COMMAND} -E env KV_INDEXER_BACKEND=${plugin}
    KV_INDEXER_CONFORMANCE_ITERATIONS=4 ${conformance})

# 4. Installed next to the suite, the plugin is found by name.
run("install plugin" ${CMAKE_COMMAND} --install ${build} --prefix ${prefix})
if(NOT EXISTS ${prefix}/lib/kvindexer/backends/kvindexer-backend-out_of_tree.so)
  message(FATAL_ERROR "out_of_tree: the plugin did not install into "
                      "${prefix}/lib/kvindexer/backends")
endif()
run("conformance by name" ${CMAKE_COMMAND} -E env
    --unset=KV_INDEXER_BACKEND_PATH KV_INDEXER_BACKEND=out_of_tree
    ${conformance} --gtest_filter=*Stats*)
message(STATUS "out_of_tree: ${plugin} passed the installed conformance suite")
