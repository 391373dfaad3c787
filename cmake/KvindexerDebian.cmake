# The Debian packages, built by `cpack -G DEB` in a build directory
# (docs/packaging.md). Included last: CPack reads the install components
# every directory declared.
#
#   kvindexer_<version>_amd64.deb      components programs, backends, debian:
#       the three programs, the in-tree backend plugins, the systemd units,
#       the environment files under /etc, manual pages
#   kvindexer-dev_<version>_amd64.deb  components backend_kit, debian_dev:
#       the backend SDK (headers, CMake package, kvindexer-conformance)
#
# The conformance suite goes with the SDK: it is the tool of a plugin's
# author, links GoogleTest in, and an operator's server never needs it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kvindexer)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "kvindexer")
set(CPACK_PACKAGE_CONTACT "${KVINDEXER_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
# The units and /etc files have absolute destinations: DESTDIR keeps them
# inside the package's staging tree.
set(CPACK_SET_DESTDIR ON)
# Debian's tools refuse unstripped binaries; the build keeps its symbols.
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE
    GROUP_READ GROUP_EXECUTE
    WORLD_READ WORLD_EXECUTE)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL programs backends debian backend_kit debian_dev)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
foreach(component programs backends debian)
  string(TOUPPER ${component} upper)
  set(CPACK_COMPONENT_${upper}_GROUP runtime)
endforeach()
foreach(component backend_kit debian_dev)
  string(TOUPPER ${component} upper)
  set(CPACK_COMPONENT_${upper}_GROUP dev)
endforeach()

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KVINDEXER_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the libraries the binaries link (dpkg-shlibdeps).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME kvindexer)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
"KV-cache block indexer for SGLang fleets behind sgl-router
kvindexer tells an LLM router which SGLang worker already holds the KV
cache for a prompt's prefix. This package holds kv-indexer-server (the
gRPC index, with its storage backends absl_rwlock and
robin_sharded_snapshot as plugins), kv-indexer-bridge (follows a worker's
ZMQ KV-event stream into the server) and kv-indexer-ctl (the operator's
client of the admin API), with systemd units for the server and for one
bridge per worker.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME kvindexer-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "kvindexer (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEV_DESCRIPTION
"SDK for kvindexer backend plugins
The C++ ABI header kvindexer/backend.h and its helpers, the CMake package
(find_package(kvindexer) and kvindexer_add_backend()) that builds a
backend plugin the way kv-indexer-server loads it, and
kvindexer-conformance, the suite that checks a plugin against the
contract.")

include(CPack)
