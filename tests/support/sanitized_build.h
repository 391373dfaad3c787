// kSanitizedBuild: whether this binary was built with AddressSanitizer or
// ThreadSanitizer. Tests whose point is scale (ten million placements) run a
// tenth of it there: the sanitizers multiply time and memory, and the scale
// itself is checked by the plain build.
#ifndef KVINDEXER_TESTS_SUPPORT_SANITIZED_BUILD_H_
#define KVINDEXER_TESTS_SUPPORT_SANITIZED_BUILD_H_

namespace kvindexer::test_support {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_SANITIZED_BUILD_H_
