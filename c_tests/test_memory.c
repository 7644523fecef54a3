/* Memory you can see and control (issue 10), from C against the real libtensor.so: the
 * big-block cache (blocks above 64 KiB), its limit and off switch (API and
 * TENSOR_CACHE_LIMIT, read once), reserved vs allocated vs cached bytes in
 * tensor_memory_stats_t (exact figures), and the opt-in storage snapshot that finds a small
 * view pinning a big storage. The environment with TENSOR_NO_CACHING and
 * TENSOR_MEMORY_TRACKING is in test_memory_env.c. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"

#define MIB ((uint64_t)1 << 20)

/* A custom allocator that counts its live blocks in *ctx. */
static int counted;
static void *counting_allocate(void *ctx, size_t nbytes, size_t alignment) {
  void *p = NULL;
  if (posix_memalign(&p, alignment, nbytes) != 0) return NULL;
  ++*(int *)ctx;
  return p;
}
static void counting_deallocate(void *ctx, void *p, size_t nbytes) {
  (void)nbytes;
  --*(int *)ctx;
  free(p);
}

/* A float32 tensor of 3 MiB + 4 bytes: a big block of capacity 4 MiB. */
static tensor_t *big3(void) {
  int64_t n[1] = {(3 << 18) + 1};
  tensor_t *t = NULL;
  CHECK_OK(tensor_empty(n, 1, TENSOR_FLOAT32, &t));
  return t;
}

static void test_environment_limit(void) {
  /* main() set TENSOR_CACHE_LIMIT=6M before the first call into the library. */
  tensor_memory_stats_t s = harness_memory_stats();
  CHECK(s.cache_limit_bytes == 6 * MIB);
  /* Read once: changing the environment later has no effect. */
  setenv("TENSOR_CACHE_LIMIT", "1M", 1);
  CHECK(harness_memory_stats().cache_limit_bytes == 6 * MIB);
}

static void test_reserved_allocated_cached(void) {
  tensor_memory_stats_t s0, s1, s2, s3;
  tensor_t *a, *b;
  (void)tensor_empty_cache();
  s0 = harness_memory_stats();
  CHECK(s0.cached_bytes == 0);

  a = big3();
  s1 = harness_memory_stats();
  CHECK(s1.live_bytes == s0.live_bytes + 3 * MIB + 4); /* allocated: what was asked */
  CHECK(s1.reserved_bytes == s0.reserved_bytes + 4 * MIB); /* reserved: whole 2 MiB pages */
  CHECK(s1.cached_bytes == 0);

  tensor_release(a);
  s2 = harness_memory_stats();
  CHECK(s2.live_bytes == s0.live_bytes);
  CHECK(s2.cached_bytes == 4 * MIB); /* kept for reuse ... */
  CHECK(s2.reserved_bytes == s0.reserved_bytes + 4 * MIB); /* ... so still reserved */

  b = big3(); /* reuses the cached block */
  s3 = harness_memory_stats();
  CHECK(s3.cached_bytes == 0);
  CHECK(s3.reserved_bytes == s0.reserved_bytes + 4 * MIB);
  tensor_release(b);

  CHECK(tensor_empty_cache() == 4 * MIB);
  s3 = harness_memory_stats();
  CHECK(s3.cached_bytes == 0);
  CHECK(s3.reserved_bytes == s0.reserved_bytes); /* back to the system */
  CHECK(s3.live_bytes == s0.live_bytes);
}

static void test_cache_limit(void) {
  tensor_memory_stats_t s0, s;
  tensor_t *a, *b, *c;
  (void)tensor_empty_cache();
  s0 = harness_memory_stats();

  /* Limit 6 MiB (from the environment): two freed 4 MiB blocks do not both fit; the
   * older one is evicted and returned. */
  a = big3();
  b = big3();
  tensor_release(a);
  tensor_release(b);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 4 * MIB);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 4 * MIB);

  /* Lowering the limit frees what no longer fits at once. */
  CHECK(tensor_set_cache_limit(5 * MIB) == 6 * MIB);
  CHECK(harness_memory_stats().cached_bytes == 4 * MIB);
  CHECK(tensor_set_cache_limit(3 * MIB) == 5 * MIB);
  s = harness_memory_stats();
  CHECK(s.cache_limit_bytes == 3 * MIB);
  CHECK(s.cached_bytes == 0);
  CHECK(s.reserved_bytes == s0.reserved_bytes);

  /* A block bigger than the limit is never cached. */
  c = big3();
  tensor_release(c);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0 && s.reserved_bytes == s0.reserved_bytes);

  /* The off switch: limit 0. */
  CHECK(tensor_set_cache_limit(0) == 3 * MIB);
  a = big3();
  CHECK(harness_memory_stats().reserved_bytes == s0.reserved_bytes + 4 * MIB);
  tensor_release(a);
  s = harness_memory_stats();
  CHECK(s.cache_limit_bytes == 0);
  CHECK(s.cached_bytes == 0);
  CHECK(s.reserved_bytes == s0.reserved_bytes);
  CHECK(tensor_empty_cache() == 0);

  /* On again. */
  CHECK(tensor_set_cache_limit(256 * MIB) == 0);
  a = big3();
  tensor_release(a);
  CHECK(harness_memory_stats().cached_bytes == 4 * MIB);
  CHECK(tensor_empty_cache() == 4 * MIB);
}

/* Small blocks (<= 1 KiB) are kept per thread in 64-byte classes: exact figures. */
static void test_small_block_cache(void) {
  int64_t n[1] = {50}, m[1] = {100}; /* 200 bytes: class 256; 100 bytes: class 128 */
  tensor_t *a = NULL, *b = NULL;
  tensor_memory_stats_t s0, s;
  void *pa;
  (void)tensor_empty_cache(); /* also empties this thread's small-block cache */
  s0 = harness_memory_stats();
  CHECK(s0.cached_bytes == 0);
  CHECK_OK(tensor_empty(n, 1, TENSOR_FLOAT32, &a));
  pa = tensor_data_ptr(a);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes + 200);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 256);
  tensor_release(a);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes);
  CHECK(s.cached_bytes == 256);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 256);
  CHECK_OK(tensor_empty(m, 1, TENSOR_UINT8, &b)); /* 100 bytes: another class */
  CHECK(harness_memory_stats().reserved_bytes == s0.reserved_bytes + 256 + 128);
  tensor_release(b);
  CHECK(harness_memory_stats().cached_bytes == 256 + 128);
  CHECK_OK(tensor_empty(n, 1, TENSOR_FLOAT32, &a)); /* reuses the 256-byte block */
  CHECK(tensor_data_ptr(a) == pa);
  CHECK(((uintptr_t)tensor_data_ptr(a) & 63) == 0);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 128 && s.reserved_bytes == s0.reserved_bytes + 256 + 128);
  tensor_release(a);
  CHECK(tensor_empty_cache() == 256 + 128);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0 && s.reserved_bytes == s0.reserved_bytes);
  /* Off switch: nothing is kept. */
  (void)tensor_set_cache_limit(0);
  CHECK_OK(tensor_empty(n, 1, TENSOR_FLOAT32, &a));
  tensor_release(a);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0 && s.reserved_bytes == s0.reserved_bytes);
  (void)tensor_set_cache_limit(256 * MIB);
}

/* Medium blocks (1-64 KiB) are kept per thread at their exact size, the most recently
 * freed reused first, at most 8 and 256 KiB together (the oldest go first): exact figures. */
static void test_medium_block_cache(void) {
  int64_t n4000[1] = {1000}, n4004[1] = {1001}, n64k[1] = {16384};
  tensor_t *a = NULL, *b = NULL, *c = NULL, *big[5];
  tensor_memory_stats_t s0, s;
  void *pa;
  int i;
  (void)tensor_empty_cache();
  s0 = harness_memory_stats();
  CHECK(s0.cached_bytes == 0);
  CHECK_OK(tensor_empty(n4000, 1, TENSOR_FLOAT32, &a));
  pa = tensor_data_ptr(a);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes + 4000);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 4000); /* the exact size, not rounded */
  tensor_release(a);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes && s.cached_bytes == 4000);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 4000);
  CHECK_OK(tensor_empty(n4000, 1, TENSOR_FLOAT32, &b)); /* the same block again */
  CHECK(tensor_data_ptr(b) == pa);
  CHECK(((uintptr_t)tensor_data_ptr(b) & 63) == 0);
  CHECK(harness_memory_stats().cached_bytes == 0);
  CHECK_OK(tensor_empty(n4004, 1, TENSOR_FLOAT32, &c)); /* another size: a new block */
  CHECK(harness_memory_stats().reserved_bytes == s0.reserved_bytes + 4000 + 4004);
  tensor_release(b);
  tensor_release(c);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 8004 && s.reserved_bytes == s0.reserved_bytes + 8004);
  /* Five 64 KiB blocks: the fourth pushes out the two small ones, the fifth the oldest
   * 64 KiB one; 256 KiB stay. */
  for (i = 0; i < 5; i++) CHECK_OK(tensor_empty(n64k, 1, TENSOR_FLOAT32, &big[i]));
  for (i = 0; i < 5; i++) tensor_release(big[i]);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 4 * 65536 && s.reserved_bytes == s0.reserved_bytes + 4 * 65536);
  CHECK(s.live_bytes == s0.live_bytes);
  CHECK(tensor_empty_cache() == 4 * 65536);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0 && s.reserved_bytes == s0.reserved_bytes);
  /* Off switch: nothing is kept. */
  (void)tensor_set_cache_limit(0);
  CHECK_OK(tensor_empty(n4000, 1, TENSOR_FLOAT32, &a));
  tensor_release(a);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0 && s.reserved_bytes == s0.reserved_bytes);
  (void)tensor_set_cache_limit(256 * MIB);
}

/* A storage of at most 64 bytes from the built-in allocator keeps its bytes inside its own
 * StorageImpl object (one allocation per small tensor besides its TensorImpl): 64-byte
 * aligned, apart from every other storage's, counted exactly (live_bytes its size,
 * reserved_bytes one 64-byte block while it lives, one allocation), and nothing cached
 * when it dies: the bytes went with the object. A resize moves them to a block of their
 * own, which is then counted and cached as any other. */
/* Blocks above 64 KiB and under 2 MiB are big blocks too, in classes of an eighth of the
 * next power of two: reserved at their class's capacity, cached when freed and reused by a
 * request of the same class (a model's intermediates, run after run, fault no page in). */
static void test_band_block_cache(void) {
  int64_t n300k[1] = {75000}; /* 300000 bytes: class 327680 (5 x 64 KiB) */
  int64_t n320k[1] = {80000}; /* 320000 bytes: the same class */
  int64_t n70k[1] = {17500};  /* 70000 bytes: class 81920 (5 x 16 KiB) */
  tensor_t *a, *b, *c;
  void *pa;
  tensor_memory_stats_t s0, s;
  (void)tensor_empty_cache();
  s0 = harness_memory_stats();
  CHECK_OK(tensor_empty(n300k, 1, TENSOR_FLOAT32, &a));
  pa = tensor_data_ptr(a);
  CHECK(((uintptr_t)pa & 63) == 0);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes + 300000);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 327680);
  tensor_release(a);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes && s.cached_bytes == 327680);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 327680);
  CHECK_OK(tensor_empty(n320k, 1, TENSOR_FLOAT32, &b)); /* the same block again */
  CHECK(tensor_data_ptr(b) == pa);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0 && s.live_bytes == s0.live_bytes + 320000);
  CHECK_OK(tensor_empty(n70k, 1, TENSOR_FLOAT32, &c)); /* another class: a new block */
  CHECK(harness_memory_stats().reserved_bytes == s0.reserved_bytes + 327680 + 81920);
  tensor_release(b);
  tensor_release(c);
  CHECK(harness_memory_stats().cached_bytes == 327680 + 81920);
  CHECK(tensor_empty_cache() == 327680 + 81920);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0 && s.reserved_bytes == s0.reserved_bytes);
}

static void test_inline_small_storage(void) {
  int64_t four[1] = {4}, sixty_four[1] = {64};
  tensor_t *a = NULL, *b = NULL;
  storage_t *st = NULL;
  tensor_memory_stats_t s0, s;
  unsigned char *p, *q;
  int i;
  (void)tensor_empty_cache();
  s0 = harness_memory_stats();
  CHECK(s0.cached_bytes == 0);
  CHECK_OK(tensor_empty(four, 1, TENSOR_FLOAT32, &a));   /* 16 bytes */
  CHECK_OK(tensor_empty(sixty_four, 1, TENSOR_UINT8, &b)); /* 64 bytes: the largest inline */
  p = tensor_data_ptr(a);
  q = tensor_data_ptr(b);
  CHECK(((uintptr_t)p & 63) == 0 && ((uintptr_t)q & 63) == 0);
  CHECK(p + 64 <= q || q + 64 <= p);
  memset(p, 0xA5, 16);
  memset(q, 0x5A, 64);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes + 16 + 64);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 64 + 64);
  CHECK(s.total_allocations == s0.total_allocations + 2);
  CHECK(s.live_storages == s0.live_storages + 2);
  CHECK(s.cached_bytes == 0);
  tensor_release(b);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes + 16 && s.reserved_bytes == s0.reserved_bytes + 64);
  CHECK(s.cached_bytes == 0); /* no block to keep */
  for (i = 0; i < 16; i++) CHECK(p[i] == 0xA5);
  /* Growing moves the bytes to a block (200 bytes: the 256-byte class), prefix kept. */
  st = tensor_storage(a);
  CHECK_OK(storage_resize(st, 200));
  q = storage_data_ptr(st);
  CHECK(q != p && ((uintptr_t)q & 63) == 0);
  for (i = 0; i < 16; i++) CHECK(q[i] == 0xA5);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes + 200 && s.reserved_bytes == s0.reserved_bytes + 256);
  CHECK(s.total_allocations == s0.total_allocations + 3);
  /* Shrinking to an inline size keeps the exact size asked for (a new 64-byte block). */
  CHECK_OK(storage_resize(st, 8));
  CHECK(storage_nbytes(st) == 8);
  q = storage_data_ptr(st);
  CHECK(((uintptr_t)q & 63) == 0);
  for (i = 0; i < 8; i++) CHECK(q[i] == 0xA5);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes + 8 && s.cached_bytes == 256);
  CHECK(s.reserved_bytes == s0.reserved_bytes + 256 + 64);
  tensor_release(a);
  s = harness_memory_stats();
  CHECK(s.live_bytes == s0.live_bytes && s.live_storages == s0.live_storages);
  CHECK(s.cached_bytes == 256 + 64 && s.reserved_bytes == s0.reserved_bytes + 256 + 64);
  CHECK(tensor_empty_cache() == 256 + 64);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0 && s.reserved_bytes == s0.reserved_bytes);
  /* A custom allocator's small storage is its own: not inline. */
  {
    tensor_allocator_t counting = {&counted, counting_allocate, counting_deallocate};
    CHECK_OK(storage_new(16, &counting, &st));
    CHECK(counted == 1 && ((uintptr_t)storage_data_ptr(st) & 63) == 0);
    storage_release(st);
    CHECK(counted == 0);
  }
}

static void *small_worker(void *arg) {
  int64_t n[1] = {16}, m[1] = {1000};
  tensor_t *t = NULL;
  int i;
  (void)arg;
  for (i = 0; i < 3; i++) {
    if (tensor_empty(n, 1, TENSOR_FLOAT64, &t) == TENSOR_OK) tensor_release(t);
    if (tensor_empty(m, 1, TENSOR_FLOAT64, &t) == TENSOR_OK) tensor_release(t); /* medium */
  }
  return NULL;
}

/* A thread's cached small and medium blocks go back to the system when it exits. */
static void test_small_cache_thread_exit(void) {
  pthread_t th;
  tensor_memory_stats_t s0, s;
  (void)tensor_empty_cache();
  s0 = harness_memory_stats();
  CHECK(pthread_create(&th, NULL, small_worker, NULL) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == s0.cached_bytes);
  CHECK(s.reserved_bytes == s0.reserved_bytes);
  CHECK(s.live_bytes == s0.live_bytes);
}

/* Old callers (a struct without the new fields) keep working: nothing past their
 * struct_size is written. */
static void test_old_struct_size(void) {
  struct {
    tensor_memory_stats_t s;
  } buf;
  size_t old = offsetof(tensor_memory_stats_t, reserved_bytes);
  memset(&buf, 0xAB, sizeof buf);
  buf.s.struct_size = old;
  CHECK_OK(tensor_memory_stats(&buf.s));
  CHECK(buf.s.reserved_bytes == 0xABABABABABABABABull);
  CHECK(buf.s.cache_limit_bytes == 0xABABABABABABABABull);
  CHECK(buf.s.live_storages != 0xABABABABABABABABull && buf.s.struct_size == old);
}

static const tensor_storage_info_t *find(const tensor_storage_info_t *infos, size_t n,
                                         const void *data) {
  size_t i;
  for (i = 0; i < n; i++)
    if (infos[i].data == data) return &infos[i];
  return NULL;
}

static void test_snapshot(void) {
  int64_t n[1] = {5 << 20}; /* 5M float64: 40 MiB */
  tensor_t *base = NULL, *view = NULL, *view2 = NULL, *fixed = NULL, *wrapped = NULL;
  storage_weak_t *weak = NULL;
  tensor_storage_info_t infos[8];
  const tensor_storage_info_t *e;
  size_t count = 99;
  void *big;
  int64_t six[1] = {6};
  float blob[6] = {0};

  CHECK(!tensor_memory_tracking_enabled());
  CHECK_OK(tensor_memory_snapshot(infos, 8, &count));
  CHECK(count == 0); /* off: nothing tracked */

  CHECK(tensor_set_memory_tracking(true) == false);
  CHECK(tensor_memory_tracking_enabled());

  /* The pitfall: a 10-element view of a 40 MiB tensor. */
  CHECK_OK(tensor_empty(n, 1, TENSOR_FLOAT64, &base));
  big = tensor_data_ptr(base);
  CHECK_OK(tensor_slice(base, 0, 100, 110, 1, &view));
  CHECK_OK(tensor_slice(base, 0, 105, 120, 5, &view2)); /* elements 105, 110, 115 */
  CHECK_OK(storage_weak_new(tensor_storage(base), &weak));
  CHECK_OK(tensor_from_blob(blob, six, NULL, 1, TENSOR_FLOAT32, (tensor_device_t){1, 0}, NULL,
                            NULL, &wrapped));
  tensor_release(base);

  CHECK_OK(tensor_memory_snapshot(NULL, 0, &count)); /* sizing call */
  CHECK(count == 2);
  CHECK_OK(tensor_memory_snapshot(infos, 8, &count));
  CHECK(count == 2);
  CHECK(infos[0].data == big); /* biggest first */
  e = find(infos, count, big);
  CHECK(e != NULL);
  if (e) {
    CHECK(e->nbytes == 40 * MIB);
    CHECK(e->kind == TENSOR_STORAGE_ALLOCATED);
    CHECK(e->strong_count == 2); /* the two views */
    CHECK(e->weak_count == 1);
    CHECK(e->tensor_count == 2);
    /* view: bytes [800, 880); view2: [840, 928) -> union [800, 928) */
    CHECK(e->reachable_bytes == 128);
  }
  e = find(infos, count, blob);
  CHECK(e != NULL);
  if (e) {
    CHECK(e->nbytes == 24);
    CHECK(e->kind == TENSOR_STORAGE_EXTERNAL);
    CHECK(e->strong_count == 1 && e->weak_count == 0);
    CHECK(e->tensor_count == 1 && e->reachable_bytes == 24);
  }

  /* A capacity smaller than the count writes only that many and still reports all. */
  memset(infos, 0, sizeof infos);
  CHECK_OK(tensor_memory_snapshot(infos, 1, &count));
  CHECK(count == 2 && infos[0].data == big && infos[1].data == NULL);

  /* The fix: clone the small views and drop them; the 40 MiB goes away. */
  tensor_release(view2);
  CHECK_OK(tensor_memory_snapshot(infos, 8, &count));
  e = find(infos, count, big);
  CHECK(e != NULL && e->tensor_count == 1 && e->reachable_bytes == 80);
  CHECK_OK(tensor_clone(view, TENSOR_PRESERVE_FORMAT, &fixed));
  tensor_release(view);
  CHECK(storage_weak_expired(weak));
  CHECK_OK(tensor_memory_snapshot(infos, 8, &count));
  CHECK(count == 2);
  CHECK(find(infos, count, big) == NULL); /* the 40 MiB storage is gone */
  e = find(infos, count, tensor_data_ptr(fixed));
  CHECK(e != NULL);
  if (e) {
    CHECK(e->nbytes == 80 && e->tensor_count == 1 && e->reachable_bytes == 80);
    CHECK(e->strong_count == 1 && e->kind == TENSOR_STORAGE_ALLOCATED);
  }
  storage_weak_release(weak);

  /* Errors. */
  CHECK_STATUS(tensor_memory_snapshot(infos, 8, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_memory_snapshot(NULL, 1, &count), TENSOR_ERR_NULL_POINTER);
  CHECK_ERROR_HAS("tensor_memory_snapshot");

  /* Off again: everything is forgotten; objects made while on unregister harmlessly. */
  CHECK(tensor_set_memory_tracking(false) == true);
  CHECK_OK(tensor_memory_snapshot(infos, 8, &count));
  CHECK(count == 0);
  tensor_release(fixed);
  tensor_release(wrapped);
  CHECK_OK(tensor_memory_snapshot(infos, 8, &count));
  CHECK(count == 0);
}

int main(void) {
  /* Before the first call: the limit is read from the environment once. */
  setenv("TENSOR_CACHE_LIMIT", "6M", 1);
  /* The exact small-block figures below need the per-thread caches, which step aside for
   * AddressSanitizer and valgrind unless told otherwise (test_released.c checks that). */
  setenv("TENSOR_NO_CACHING", "0", 1);
  unsetenv("TENSOR_MEMORY_TRACKING");
  test_environment_limit();
  test_reserved_allocated_cached();
  test_cache_limit();
  test_small_block_cache();
  test_inline_small_storage();
  test_medium_block_cache();
  test_band_block_cache();
  test_small_cache_thread_exit();
  test_old_struct_size();
  test_snapshot();
  (void)tensor_empty_cache();
  return harness_finish("test_memory");
}
