/* Thread stress for ThreadSanitizer (and valgrind): in each round, 4 threads share one
 * wrapped buffer through different handles (a tensor, views of it, a storage reference, a
 * weak reference, a DLPack export) and race to drop them: while some release their last
 * references, others retain, make views, read elements, lock the weak reference and
 * consume the export. The deleter must run exactly once per round (a use after it is a
 * TSan / valgrind report), and every read sees the values written before the threads
 * started.
 * .ci/prove.sh builds this file with -fsanitize=thread against a TSan-instrumented
 * libtensor.so; cargo test runs it as an ordinary C test. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

#define THREADS 4
/* Kept small for valgrind (which runs threads one at a time); the TSan build raises it. */
#ifndef ROUNDS
#define ROUNDS 60
#endif
#define SPINS 20

/* DLPack's managed tensor, as far as this test touches it (layout of dlpack.h 1.x). */
typedef struct {
  uint32_t major, minor;
} dl_version;
typedef struct {
  dl_version version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
} dl_versioned_head;

static const tensor_device_t CPU = {1, 0};

typedef struct {
  pthread_mutex_t mu;
  int calls;
} deleter_log;

static void counted_free(void *data, void *ctx) {
  deleter_log *l = (deleter_log *)ctx;
  pthread_mutex_lock(&l->mu);
  l->calls++;
  pthread_mutex_unlock(&l->mu);
  free(data);
}

typedef struct {
  int id;
  tensor_t *t;                         /* owned: a tensor on the shared storage */
  storage_t *s;                        /* owned or NULL */
  storage_weak_t *w;                   /* owned */
  struct DLManagedTensorVersioned *dl; /* owned export or NULL */
  pthread_barrier_t *go;
  int failures;
} racer;

/* Reads element 0 and 1 of a tensor on the shared storage (values 10 and 11 as float64). */
static int reads_ok(const tensor_t *t) {
  int64_t i0[1] = {0}, i1[1] = {1};
  double a = 0, b = 0;
  if (tensor_ndim(t) != 1 || tensor_numel(t) < 2) return 1;
  if (tensor_get_f64(t, i0, 1, &a) != TENSOR_OK || tensor_get_f64(t, i1, 1, &b) != TENSOR_OK) return 0;
  return a == 10.0 && b == 11.0;
}

static void *race(void *arg) {
  racer *r = (racer *)arg;
  int i;
  pthread_barrier_wait(r->go);
  for (i = 0; i < SPINS; i++) {
    tensor_t *x = tensor_retain(r->t), *v = NULL;
    if (tensor_narrow(x, 0, 0, 2, &v) != TENSOR_OK) r->failures++;
    if (!reads_ok(v)) r->failures++;
    tensor_release(x);
    tensor_release(v);
  }
  switch (r->id) {
    case 0: /* drops everything at once, racing the others' last releases */
      tensor_release(r->t);
      storage_release(r->s);
      break;
    case 1: { /* locks the weak reference and reads through a new tensor on it */
      storage_t *l;
      tensor_release(r->t);
      l = storage_weak_lock(r->w);
      if (l != NULL) {
        int64_t two[1] = {2};
        tensor_t *u = NULL;
        if (tensor_from_storage(l, 0, two, NULL, 1, TENSOR_FLOAT64, &u) != TENSOR_OK) r->failures++;
        storage_release(l);
        if (!reads_ok(u)) r->failures++;
        tensor_release(u);
      }
      break;
    }
    case 2: { /* consumes the DLPack export after dropping its tensor */
      struct DLManagedTensorVersioned *m = r->dl;
      tensor_release(r->t);
      if (m != NULL) {
        dl_versioned_head *h = (dl_versioned_head *)(void *)m;
        h->deleter(m);
      }
      break;
    }
    default: { /* a transposed view made here, then everything dropped */
      tensor_t *v = NULL;
      if (tensor_transpose_2d(r->t, &v) != TENSOR_OK) r->failures++;
      tensor_release(r->t);
      if (!reads_ok(v)) r->failures++;
      tensor_release(v);
      break;
    }
  }
  storage_weak_release(r->w);
  return NULL;
}

static void test_racing_handles(void) {
  deleter_log log;
  int round, i, failures = 0, wrong_calls = 0;
  pthread_mutex_init(&log.mu, NULL);
  for (round = 0; round < ROUNDS; round++) {
    racer r[THREADS];
    pthread_t th[THREADS];
    pthread_barrier_t go;
    int64_t sizes[1] = {4};
    tensor_t *base = NULL;
    double *data = (double *)malloc(4 * sizeof(double));
    log.calls = 0;
    for (i = 0; i < 4; i++) data[i] = 10.0 + i;
    if (tensor_from_blob(data, sizes, NULL, 1, TENSOR_FLOAT64, CPU, counted_free, &log, &base) != TENSOR_OK) {
      free(data);
      failures++;
      break;
    }
    pthread_barrier_init(&go, NULL, THREADS);
    for (i = 0; i < THREADS; i++) {
      r[i].id = i;
      r[i].t = NULL;
      r[i].s = NULL;
      r[i].w = NULL;
      r[i].dl = NULL;
      r[i].go = &go;
      r[i].failures = 0;
      if (tensor_alias(base, &r[i].t) != TENSOR_OK) failures++;
      if (storage_weak_new(tensor_storage(base), &r[i].w) != TENSOR_OK) failures++;
    }
    r[0].s = storage_retain(tensor_storage(base));
    if (tensor_to_dlpack(base, &r[2].dl) != TENSOR_OK) failures++;
    tensor_release(base); /* only the racers hold the data now */
    for (i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, race, &r[i]);
    for (i = 0; i < THREADS; i++) {
      pthread_join(th[i], NULL);
      failures += r[i].failures;
    }
    pthread_barrier_destroy(&go);
    if (log.calls != 1) wrong_calls++;
  }
  CHECK(failures == 0);
  CHECK(wrong_calls == 0);
  pthread_mutex_destroy(&log.mu);
}

/* The default allocator swapped while other threads allocate: every storage is freed with
 * the allocator that made it. */
typedef struct {
  pthread_mutex_t mu;
  long live;
} counting_ctx;

static void *counting_alloc(void *ctx, size_t n, size_t align) {
  counting_ctx *c = (counting_ctx *)ctx;
  void *p = NULL;
  if (posix_memalign(&p, align, n) != 0) return NULL;
  pthread_mutex_lock(&c->mu);
  c->live++;
  pthread_mutex_unlock(&c->mu);
  return p;
}

static void counting_free(void *ctx, void *p, size_t n) {
  counting_ctx *c = (counting_ctx *)ctx;
  (void)n;
  pthread_mutex_lock(&c->mu);
  c->live--;
  pthread_mutex_unlock(&c->mu);
  free(p);
}

static void *allocate_loop(void *arg) {
  int *fails = (int *)arg, i;
  for (i = 0; i < 100; i++) {
    int64_t sizes[2] = {3, 5};
    tensor_t *t = NULL, *c = NULL;
    if (tensor_ones(sizes, 2, TENSOR_FLOAT32, &t) != TENSOR_OK) {
      (*fails)++;
      continue;
    }
    if (tensor_clone(t, TENSOR_CONTIGUOUS_FORMAT, &c) != TENSOR_OK) (*fails)++;
    tensor_release(t);
    tensor_release(c);
  }
  return NULL;
}

static void test_allocator_swaps(void) {
  counting_ctx ctx;
  tensor_allocator_t a;
  pthread_t th[2];
  int fails[2] = {0, 0}, i;
  pthread_mutex_init(&ctx.mu, NULL);
  ctx.live = 0;
  a.ctx = &ctx;
  a.allocate = counting_alloc;
  a.deallocate = counting_free;
  for (i = 0; i < 2; i++) pthread_create(&th[i], NULL, allocate_loop, &fails[i]);
  for (i = 0; i < 100; i++) CHECK_OK(tensor_set_default_allocator(i % 2 ? NULL : &a));
  for (i = 0; i < 2; i++) pthread_join(th[i], NULL);
  CHECK_OK(tensor_set_default_allocator(NULL));
  CHECK(fails[0] == 0 && fails[1] == 0);
  CHECK(ctx.live == 0);
  pthread_mutex_destroy(&ctx.mu);
}

int main(void) {
  test_racing_handles();
  test_allocator_swaps();
  return harness_finish("c_thread_race");
}
