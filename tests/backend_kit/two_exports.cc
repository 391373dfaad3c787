// A plugin that exports a second dynamic symbol besides the entry point, for
// backend_kit.export_check_rejects_extra_symbols.
#include "kvindexer/backend.h"

extern "C" __attribute__((visibility("default"))) int
kvindexer_kit_extra_symbol(void) {
  return 1;
}

extern "C" __attribute__((visibility("default")))
const ::kvindexer::BackendDescriptor*
kvindexer_backend_descriptor(void) {
  return nullptr;
}
