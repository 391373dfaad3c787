# KVINDEXER_UNITY_BUILD=ON compiles each target's sources in batches of
# KVINDEXER_UNITY_BATCH_SIZE, one translation unit per batch (CMake's
# UNITY_BUILD). Most of a test file's compile time goes to the same gtest,
# gRPC, protobuf and abseil templates every file instantiates again; a batch
# instantiates them once. scripts/test.sh turns it on for its cold builds
# (docs/testing.md); it stays off by default, so a developer's
# build compiles each file alone, keeps ccache hits per file and catches a
# file that misses an #include of its own.
#
# Files declaring a name at file scope that another file of the same target
# declares too (a constant or helper in an anonymous namespace) cannot share
# a batch: kvindexer_unity_exclude() keeps them out of the batches, and the
# build compiles them alone.
option(KVINDEXER_UNITY_BUILD "Compile each target's sources in batches" OFF)
set(KVINDEXER_UNITY_BATCH_SIZE 16 CACHE STRING
    "Sources per batch when KVINDEXER_UNITY_BUILD is ON")

if(KVINDEXER_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${KVINDEXER_UNITY_BATCH_SIZE})
endif()

# kvindexer_unity_exclude(<directory> <file>...): the files, relative to
# <directory> (relative to the project root), compile alone.
function(kvindexer_unity_exclude dir)
  foreach(file IN LISTS ARGN)
    set_property(SOURCE ${PROJECT_SOURCE_DIR}/${dir}/${file}
      DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}
      PROPERTY SKIP_UNITY_BUILD_INCLUSION ON)
  endforeach()
endfunction()

# kvindexer_unity_finish(): called once every directory is added. Generated
# protobuf code declares the same file-scope tables in every file, so
# kvindexer_proto always compiles file by file.
#
# The files that clash today are listed below, by directory. A new clash
# fails the CI build in a Unity/unity_<n>_cxx.cxx file with "redefinition of",
# "conflicting declaration", "conflicts with a previous declaration", "is
# ambiguous" or "shadows a global declaration" (-Wshadow). The cheapest
# mend keeps the file in its batch: put its anonymous namespace inside a
# namespace named for the file, as most test files do.
# A file listed here compiles alone, which costs its target a whole
# translation unit's worth of header parsing.
function(kvindexer_unity_finish)
  if(NOT KVINDEXER_UNITY_BUILD)
    return()
  endif()
  if(TARGET kvindexer_proto)
    set_target_properties(kvindexer_proto PROPERTIES UNITY_BUILD OFF)
  endif()
  kvindexer_unity_exclude(durable data_dir.cc)
  kvindexer_unity_exclude(fleet
    jetstream_lease_register.cc jetstream_snapshot_store.cc)
  if(KVINDEXER_BUILD_TESTS)
    kvindexer_unity_exclude(tests/e2e fleet_e2e_harness.cc)
  endif()
  # The conformance suite's files share many helper names; in batches of
  # more than 8 they clash, so the suite keeps batches of 8.
  if(TARGET kvindexer-conformance)
    set_target_properties(kvindexer-conformance PROPERTIES
      UNITY_BUILD_BATCH_SIZE 8)
  endif()
  if(KVINDEXER_BUILD_BENCH)
    kvindexer_unity_exclude(bench synthetic_fleet.cc bridge_throughput.cc)
  endif()
endfunction()
