# KVINDEXER_LINKER picks the linker for every executable, shared library and
# plugin of the build: lld, gold, or the compiler's default (bfd on Debian).
# The default, auto, takes lld when the compiler can link with it, else the
# default linker. The build links several dozen test and tool executables
# against gRPC, protobuf and abseil; lld links them several times faster than
# bfd, most of all with the sanitizers' debug line tables (docs/testing.md).
set(KVINDEXER_LINKER "auto" CACHE STRING
    "Linker: auto (lld when usable, else the default), lld, gold or default")
set_property(CACHE KVINDEXER_LINKER PROPERTY STRINGS auto lld gold default)

include(CheckLinkerFlag)
if(KVINDEXER_LINKER STREQUAL "auto")
  check_linker_flag(CXX -fuse-ld=lld KVINDEXER_LINKER_LLD_WORKS)
  if(KVINDEXER_LINKER_LLD_WORKS)
    set(kvindexer_linker lld)
  else()
    set(kvindexer_linker default)
  endif()
elseif(KVINDEXER_LINKER MATCHES "^(lld|gold)$")
  check_linker_flag(CXX -fuse-ld=${KVINDEXER_LINKER}
                    KVINDEXER_LINKER_${KVINDEXER_LINKER}_WORKS)
  if(NOT KVINDEXER_LINKER_${KVINDEXER_LINKER}_WORKS)
    message(FATAL_ERROR "KVINDEXER_LINKER=${KVINDEXER_LINKER}: the compiler "
                        "cannot link with -fuse-ld=${KVINDEXER_LINKER} "
                        "(install the Debian package lld or binutils)")
  endif()
  set(kvindexer_linker ${KVINDEXER_LINKER})
elseif(KVINDEXER_LINKER STREQUAL "default")
  set(kvindexer_linker default)
else()
  message(FATAL_ERROR "KVINDEXER_LINKER='${KVINDEXER_LINKER}': use auto, lld, "
                      "gold or default")
endif()

if(NOT kvindexer_linker STREQUAL "default")
  add_link_options(-fuse-ld=${kvindexer_linker})
endif()
message(STATUS "kvindexer: linker ${kvindexer_linker}")
