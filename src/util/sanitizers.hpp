// Whether this build runs under AddressSanitizer or ThreadSanitizer, for the
// one place that steps aside for them: the quick exit (their leak check runs
// at a normal exit). GCC defines __SANITIZE_*__; Clang answers __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CLOCK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CLOCK_SANITIZED 1
#endif
#endif

#ifndef CLOCK_SANITIZED
#define CLOCK_SANITIZED 0
#endif
