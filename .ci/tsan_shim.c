/* Entry points that the ThreadSanitizer instrumentation of recent LLVM (rustc nightly)
 * emits for memcpy/memmove/memset, missing from GCC 12's libtsan: forwarded to the libc
 * functions, which libtsan intercepts (and checks). Linked into the TSan test programs
 * of .ci/prove.sh only. */
#include <stddef.h>
#include <string.h>

void *__tsan_memcpy(void *dst, const void *src, size_t n);
void *__tsan_memmove(void *dst, const void *src, size_t n);
void *__tsan_memset(void *dst, int c, size_t n);

void *__tsan_memcpy(void *dst, const void *src, size_t n) { return memcpy(dst, src, n); }
void *__tsan_memmove(void *dst, const void *src, size_t n) { return memmove(dst, src, n); }
void *__tsan_memset(void *dst, int c, size_t n) { return memset(dst, c, n); }
