// ReturnFreeHeapToSystem: asks the C library to give the free memory at the
// top and in the middle of its heaps back to the kernel.
//
// glibc keeps memory a program frees for its own later use, so after a
// worker's placements are removed the process's resident size stays near its
// peak even though the backend no longer uses the memory. The server calls
// this after a removal that deleted a backend record (docs/contract.md,
// "Recovery > Worker liveness and removal"). Removals are rare, so the cost
// of one pass over the allocator's free lists is paid rarely. On a C library
// without malloc_trim it does nothing.
//
// Thread safety: may be called from any thread at any time.
#ifndef KVINDEXER_COMMON_HEAP_TRIM_H_
#define KVINDEXER_COMMON_HEAP_TRIM_H_

namespace kvindexer {

void ReturnFreeHeapToSystem();

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_HEAP_TRIM_H_
