#include "common/heap_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kvindexer {

void ReturnFreeHeapToSystem() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace kvindexer
