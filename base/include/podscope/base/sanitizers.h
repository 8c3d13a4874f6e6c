// Which sanitizer a translation unit is built with, the same under GCC
// (which defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__) and clang
// (which answers __has_feature): PODSCOPE_ASAN and PODSCOPE_TSAN are 1 or
// 0.
#ifndef PODSCOPE_BASE_SANITIZERS_H_
#define PODSCOPE_BASE_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define PODSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PODSCOPE_ASAN 1
#endif
#endif
#ifndef PODSCOPE_ASAN
#define PODSCOPE_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define PODSCOPE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PODSCOPE_TSAN 1
#endif
#endif
#ifndef PODSCOPE_TSAN
#define PODSCOPE_TSAN 0
#endif

#endif  // PODSCOPE_BASE_SANITIZERS_H_
