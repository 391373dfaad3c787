# KVINDEXER_TEST_CXX_FLAGS: compile flags added to the test programs' own
# sources, that is every executable target that names GoogleTest among its
# own link libraries; the libraries and programs they test keep the build
# type's flags, and so does kvindexer-conformance, an installed program that
# gets GoogleTest through its support library. scripts/test.sh passes -O0
# for its -Werror build: test code is mostly gtest and gmock templates,
# which compile about a third faster unoptimised; and -fno-sanitize=undefined
# for its ASan+UBSan build, where UBSan's checks double a test file's
# compile time (docs/testing.md).
set(KVINDEXER_TEST_CXX_FLAGS "" CACHE STRING
    "Extra compile flags for the sources of test executables")

# The targets defined in `dir` and every directory below it.
function(kvindexer_targets_below dir out)
  get_property(found DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    kvindexer_targets_below(${sub} below)
    list(APPEND found ${below})
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# The test executables: every executable target that names GoogleTest
# among its own link libraries. Needs every directory added.
function(kvindexer_test_executables out)
  kvindexer_targets_below(${PROJECT_SOURCE_DIR} targets)
  set(found)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    get_target_property(libs ${target} LINK_LIBRARIES)
    if(type STREQUAL "EXECUTABLE" AND "${libs}" MATCHES "GTest::")
      list(APPEND found ${target})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# KVINDEXER_TEST_CXX_FLAGS as a list.
function(kvindexer_test_cxx_flags out)
  separate_arguments(flags UNIX_COMMAND "${KVINDEXER_TEST_CXX_FLAGS}")
  set(${out} ${flags} PARENT_SCOPE)
endfunction()

# Called once every directory is added.
function(kvindexer_test_flags_finish)
  if(KVINDEXER_TEST_CXX_FLAGS STREQUAL "")
    return()
  endif()
  kvindexer_test_cxx_flags(flags)
  kvindexer_test_executables(targets)
  foreach(target IN LISTS targets)
    target_compile_options(${target} PRIVATE ${flags})
  endforeach()
endfunction()
