# ctest driver for conformance.out_of_tree (cmake -P). Steps:
#   1. install the top-level install rules of BUILD_DIR (the ABI header) into
#      a fresh prefix;
#   2. configure and build the out-of-tree backend project against it;
#   3. run kvindexer-conformance on the resulting .so, by path.
# Inputs: BUILD_DIR WORK_DIR PROJECT_DIR BACKEND_SOURCE_DIR CONFORMANCE
#         GENERATOR CXX_COMPILER SANITIZE
foreach(var BUILD_DIR WORK_DIR PROJECT_DIR BACKEND_SOURCE_DIR CONFORMANCE)
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

# 1. Only the top directory's install rules: cmake --install would also
# install every target, and needs them all built. The header is installed by
# the top-level install(FILES include/kvindexer/backend.h ...).
run("install header" ${CMAKE_COMMAND} -DCMAKE_INSTALL_PREFIX=${prefix}
    -DCMAKE_INSTALL_LOCAL_ONLY=ON -P ${BUILD_DIR}/cmake_install.cmake)
if(NOT EXISTS ${prefix}/include/kvindexer/backend.h)
  message(FATAL_ERROR "out_of_tree: the install did not produce "
                      "${prefix}/include/kvindexer/backend.h")
endif()

# 2. Configure and build the standalone project.
set(configure_args -S ${PROJECT_DIR} -B ${build}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DKVINDEXER_BACKEND_SOURCE_DIR=${BACKEND_SOURCE_DIR}
    -DKVINDEXER_SANITIZE=${SANITIZE})
if(GENERATOR)
  list(APPEND configure_args -G ${GENERATOR})
endif()
if(CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
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

# 3. The suite, on the plugin by path (a shorter differential run).
run("conformance" ${CMAKE_COMMAND} -E env KV_INDEXER_BACKEND=${plugin}
    KV_INDEXER_CONFORMANCE_ITERATIONS=4 ${CONFORMANCE})
message(STATUS "out_of_tree: ${plugin} passed the conformance suite")
