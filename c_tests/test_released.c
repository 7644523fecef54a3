/* A handle used after its release. The library keeps freed TensorImpl / StorageImpl boxes
 * per thread for reuse (the default); a box it keeps carries a released mark, so a release,
 * retain or read through a released handle aborts with the call named on stderr, instead of
 * a double release handing one block to the next two tensors. Under a memory checker
 * (AddressSanitizer, valgrind) the per-thread caches step aside, so that the checker sees
 * every freed box; a release then asks ASan about the handle first, so double releases
 * still abort the same way. (A read or retain of a really freed box under ASan is not the
 * library's to see: only an instrumented libtensor reports it, in ASan's own words.) Each
 * misuse runs in a forked child that must die of SIGABRT. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "harness.h"
#include "child.h"

#define ERR_CAP 8192

/* 128 bytes of data: one block of the 128-byte small class (a storage of at most 64
 * bytes would keep its bytes inside its StorageImpl object, which no data cache counts). */
static tensor_t *small_tensor(void) {
  int64_t n[1] = {32};
  tensor_t *t = NULL;
  if (tensor_empty(n, 1, TENSOR_FLOAT32, &t) != TENSOR_OK) {
    abort();
  }
  return t;
}

static void double_release(void *arg) {
  tensor_t *t = small_tensor();
  (void)arg;
  tensor_release(t);
  child_expect_memory_errors();
  tensor_release(t); /* must not return */
}

static void retain_after_release(void *arg) {
  tensor_t *t = small_tensor();
  (void)arg;
  tensor_release(t);
  child_expect_memory_errors();
  (void)tensor_retain(t);
}

static void numel_after_release(void *arg) {
  tensor_t *t = small_tensor();
  (void)arg;
  tensor_release(t);
  child_expect_memory_errors();
  fprintf(stderr, "numel %lld\n", (long long)tensor_numel(t));
}

static void view_of_released(void *arg) {
  int64_t shape[2] = {2, 2};
  tensor_t *t = small_tensor();
  tensor_t *v = NULL;
  (void)arg;
  tensor_release(t);
  child_expect_memory_errors();
  (void)tensor_view(t, shape, 2, &v);
}

static void storage_double_release(void *arg) {
  storage_t *s = NULL;
  (void)arg;
  if (storage_new(64, NULL, &s) != TENSOR_OK) {
    abort();
  }
  storage_release(s);
  child_expect_memory_errors();
  storage_release(s);
}

/* Strong count 0 with a weak reference left: the box is alive (not cached), and the
 * second release finds no strong reference to give up. */
static void storage_released_twice_while_weak(void *arg) {
  storage_t *s = NULL;
  storage_weak_t *w = NULL;
  (void)arg;
  if (storage_new(64, NULL, &s) != TENSOR_OK || storage_weak_new(s, &w) != TENSOR_OK) {
    abort();
  }
  storage_release(s);
  storage_release(s);
}

static void weak_double_release(void *arg) {
  storage_t *s = NULL;
  storage_weak_t *w = NULL;
  (void)arg;
  if (storage_new(64, NULL, &s) != TENSOR_OK || storage_weak_new(s, &w) != TENSOR_OK) {
    abort();
  }
  storage_release(s);
  storage_weak_release(w);
  child_expect_memory_errors();
  storage_weak_release(w);
}

/* The child aborted and named the call and the misuse. */
static void expect_abort(void (*body)(void *), const char *call) {
  char err[ERR_CAP];
  char want[128];
  int status = child_run(body, NULL, err, sizeof err);
  snprintf(want, sizeof want, "libtensor: %s: handle 0x", call);
  CHECK(child_aborted(status));
  CHECK(strstr(err, want) != NULL);
  CHECK(strstr(err, "was already released (use after release or double release)") != NULL);
  if (!child_aborted(status) || strstr(err, want) == NULL) {
    fprintf(stderr, "%s child: status %d, stderr:\n%s\n", call, status, err);
  }
}

/* Releasing to zero and making the next tensor from the recycled block is the normal
 * path: the new tensor is whole, and releasing it works. */
static void test_reuse_after_release(void) {
  int i;
  for (i = 0; i < 40; i++) { /* more than the cache holds: some boxes really freed */
    int64_t n[2] = {3, 5};
    tensor_t *t = NULL;
    tensor_t *r;
    CHECK_OK(tensor_zeros(n, 2, i % 2 ? TENSOR_INT64 : TENSOR_FLOAT32, &t));
    CHECK(tensor_numel(t) == 15 && tensor_use_count(t) == 1);
    r = tensor_retain(t);
    CHECK(r == t && tensor_use_count(t) == 2);
    tensor_release(r);
    CHECK(tensor_use_count(t) == 1);
    tensor_release(t);
  }
}

/* Under AddressSanitizer or valgrind the per-thread caches keep nothing: a freed small
 * block is not counted as cached and a freed TensorImpl box is not handed out again at
 * once. Without a checker both are kept (the default), and so they are under one when
 * TENSOR_NO_CACHING=0 asks to keep them (CI checks the caches' own code that way). */
static void test_caches_step_aside_for_checkers(void) {
  tensor_memory_stats_t s0, s1;
  uintptr_t first;
  tensor_t *t;
  const char *keep = getenv("TENSOR_NO_CACHING");
  int checked = child_under_checker() && !(keep && strcmp(keep, "0") == 0);
  printf("test_released: memory checker %s%s\n", child_under_checker() ? "present" : "absent",
         checked ? "" : ", caches kept");
  (void)tensor_empty_cache();
  s0 = harness_memory_stats();
  t = small_tensor(); /* one 128-byte small block */
  first = (uintptr_t)t;
  tensor_release(t);
  s1 = harness_memory_stats();
  t = small_tensor();
  if (checked) {
    CHECK(s1.cached_bytes == s0.cached_bytes);
    CHECK((uintptr_t)t != first);
  } else {
    CHECK(s1.cached_bytes == s0.cached_bytes + 128);
    CHECK((uintptr_t)t == first);
  }
  CHECK(s1.cache_limit_bytes == 256u << 20); /* the big-block cache is unchanged */
  tensor_release(t);
  (void)tensor_empty_cache();
}

int main(void) {
  test_reuse_after_release();
  test_caches_step_aside_for_checkers();
  if (child_under_valgrind()) {
    printf("test_released: valgrind's \"exiting thread has error reporting disabled\" warnings "
           "come from the children that abort on purpose\n");
  }
  expect_abort(double_release, "tensor_release");
#ifndef CHILD_ASAN
  expect_abort(retain_after_release, "tensor_retain");
  expect_abort(numel_after_release, "tensor_numel");
  expect_abort(view_of_released, "tensor_view");
#else
  (void)retain_after_release;
  (void)numel_after_release;
  (void)view_of_released;
  printf("test_released: under AddressSanitizer only the releases of a freed handle are "
         "checked\n");
#endif
  expect_abort(storage_double_release, "storage_release");
  expect_abort(storage_released_twice_while_weak, "storage_release");
  expect_abort(weak_double_release, "storage_weak_release");
  return harness_finish("test_released");
}
