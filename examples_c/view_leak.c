/* The view-leak pitfall, found with the memory snapshot, and fixed with clone.
 *
 * A view shares its base's storage, so a 10-element slice of a 40 MiB tensor keeps all
 * 40 MiB alive after the base is released. With tracking on (tensor_set_memory_tracking,
 * or TENSOR_MEMORY_TRACKING=1 at start-up), tensor_memory_snapshot lists every live
 * storage with the bytes its live tensors can reach, which makes such pins obvious.
 *
 * Build and run (after `cargo build --release`):
 *   cc -std=c99 -Iinclude examples_c/view_leak.c -Ltarget/release \
 *      -Wl,-rpath,$PWD/target/release -ltensor -o view_leak && ./view_leak */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tensor.h"

#define TRY(call)                                                                          \
  do {                                                                                     \
    if ((call) != TENSOR_OK) {                                                             \
      fprintf(stderr, "%s failed: %s\n", #call, tensor_last_error());                      \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

static const char *kind_name(tensor_storage_kind_t k) {
  if (k == TENSOR_STORAGE_ALLOCATED) return "allocated";
  if (k == TENSOR_STORAGE_EXTERNAL) return "external";
  if (k == TENSOR_STORAGE_MAPPED) return "mapped";
  return "?";
}

/* Prints the snapshot; returns the bytes held by storages whose tensors reach less than
 * 1% of them. */
static uint64_t report(const char *when) {
  tensor_storage_info_t infos[16];
  size_t count = 0, i;
  uint64_t pinned = 0;
  tensor_memory_stats_t st;
  st.struct_size = sizeof st;
  TRY(tensor_memory_snapshot(infos, 16, &count));
  TRY(tensor_memory_stats(&st));
  printf("%s: %zu live storage(s), %llu bytes live, %llu reserved (%llu cached)\n", when,
         count, (unsigned long long)st.live_bytes, (unsigned long long)st.reserved_bytes,
         (unsigned long long)st.cached_bytes);
  for (i = 0; i < count && i < 16; i++) {
    const tensor_storage_info_t *s = &infos[i];
    int leak = s->nbytes >= 4096 && s->reachable_bytes * 100 < s->nbytes;
    printf("  %s storage of %llu bytes: %llu tensor(s), strong %llu, weak %llu, "
           "reachable %llu bytes%s\n",
           kind_name(s->kind), (unsigned long long)s->nbytes,
           (unsigned long long)s->tensor_count, (unsigned long long)s->strong_count,
           (unsigned long long)s->weak_count, (unsigned long long)s->reachable_bytes,
           leak ? "   <-- pinned by small views: clone them" : "");
    if (leak) pinned += s->nbytes;
  }
  return pinned;
}

int main(void) {
  int64_t n[1] = {5 << 20}; /* 5M float64 = 40 MiB */
  tensor_t *frame = NULL, *roi = NULL, *kept = NULL;
  uint64_t before, after;

  tensor_set_memory_tracking(true);

  /* The pitfall: keep a 10-element region of interest, drop the big tensor. */
  TRY(tensor_zeros(n, 1, TENSOR_FLOAT64, &frame));
  TRY(tensor_slice(frame, 0, 1000, 1010, 1, &roi));
  tensor_release(frame);
  before = report("with the view");

  /* The fix: clone the region (80 bytes of its own), release the view. */
  TRY(tensor_clone(roi, TENSOR_CONTIGUOUS_FORMAT, &kept));
  tensor_release(roi);
  after = report("after clone");

  printf("pinned: %llu bytes before the fix, %llu after\n", (unsigned long long)before,
         (unsigned long long)after);
  tensor_release(kept);
  tensor_empty_cache(); /* hand the cached 40 MiB block back to the system */
  return before == 40u << 20 && after == 0 ? 0 : 1;
}
