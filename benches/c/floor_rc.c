/* The floor of retain + release for bench_views, built as a shared library of its own
 * (benches/c/run.sh: libbench_floor.so), so that its calls go through the PLT as calls into
 * libtensor.so do. Two versions of the same reference count (one strong unit in the low 32
 * bits of a 64-bit word, weak units above, as libtensor's):
 *
 * - bare: the two atomic read-modify-writes of a shared count, as c10's intrusive_ptr does
 *   them (a relaxed increment; an acquire-release decrement tested for the last
 *   reference), each behind a NULL test;
 * - checked: the same with what libtensor's tensor_retain / tensor_release document
 *   (docs/c-api.md, "Debugging caller bugs"): the retain tests the count it raised (0: a
 *   released handle; the limit: an overflow), the release asks the sanitizer hook (a
 *   pointer looked up at load time, NULL without AddressSanitizer) whether the block is
 *   freed, then tests the two shortcut patterns (the sole owner; the sole owner whose one
 *   weak reference is the tracking registry's) before the decrement, and tests the count
 *   it lowered.
 *
 * The benchmark's count never reaches a shortcut or 0: those branches only set a flag. */
#include <stddef.h>
#include <stdint.h>

#include "floor_rc.h"

int floor_rc_failed;
/* Set only under a sanitizer; read on every checked release, as libtensor reads its own. */
void *floor_rc_sanitizer_hook;

#define STRONG_ONE 1ull
#define WEAK_ONE (1ull << 32)

uint64_t *floor_rc_retain(uint64_t *count) {
  if (count) __atomic_fetch_add(count, STRONG_ONE, __ATOMIC_RELAXED);
  return count;
}

void floor_rc_release(uint64_t *count) {
  if (count && (uint32_t)__atomic_fetch_sub(count, STRONG_ONE, __ATOMIC_ACQ_REL) == 1)
    floor_rc_failed |= 1; /* the last reference: never here */
}

uint64_t *floor_rc_retain_checked(uint64_t *count) {
  if (!count) return NULL;
  uint64_t old = __atomic_fetch_add(count, STRONG_ONE, __ATOMIC_RELAXED);
  /* old strong 0 (a released handle) or at the limit (2^32 - 2): abort in the library */
  if ((uint32_t)(old + 2) <= 2) floor_rc_failed |= 2;
  return count;
}

void floor_rc_release_checked(uint64_t *count) {
  if (!count) return;
  if (__atomic_load_n(&floor_rc_sanitizer_hook, __ATOMIC_RELAXED)) floor_rc_failed |= 4;
  uint64_t cur = __atomic_load_n(count, __ATOMIC_ACQUIRE);
  if (cur == (STRONG_ONE | WEAK_ONE) || cur == (STRONG_ONE | 2 * WEAK_ONE)) {
    floor_rc_failed |= 8; /* a shortcut: never here */
    return;
  }
  if ((uint32_t)__atomic_fetch_sub(count, STRONG_ONE, __ATOMIC_ACQ_REL) <= 1)
    floor_rc_failed |= 16; /* the last reference, or a released handle: never here */
}
