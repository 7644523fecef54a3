/* Threads and the core API: the deleter runs once on whichever thread drops the last
 * strong reference; refcounts (tensor, storage, weak) stay exact under concurrent
 * retain/release/lock from 4 threads; racing last releases call the deleter exactly once;
 * tensor_last_error is per thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

#define THREADS 4
#define ITERATIONS 20000
#define ROUNDS 300

static const tensor_device_t CPU = {1, 0};

typedef struct {
  pthread_mutex_t mu;
  int calls;
  pthread_t thread;
} deleter_log;

static void free_deleter(void *data, void *ctx) {
  deleter_log *l = (deleter_log *)ctx;
  pthread_mutex_lock(&l->mu);
  l->calls++;
  l->thread = pthread_self();
  pthread_mutex_unlock(&l->mu);
  free(data);
}

static int calls_of(deleter_log *l) {
  int n;
  pthread_mutex_lock(&l->mu);
  n = l->calls;
  pthread_mutex_unlock(&l->mu);
  return n;
}

/* ---- the last reference dies on another thread ------------------------------------- */

static void *release_tensor(void *arg) {
  tensor_release((tensor_t *)arg);
  return NULL;
}

static void test_deleter_on_other_thread(void) {
  deleter_log log;
  int64_t sizes[1] = {16};
  tensor_t *t = NULL;
  pthread_t th;
  pthread_mutex_init(&log.mu, NULL);
  log.calls = 0;
  CHECK_OK(tensor_from_blob(malloc(64), sizes, NULL, 1, TENSOR_FLOAT32, CPU, free_deleter, &log, &t));
  CHECK(pthread_create(&th, NULL, release_tensor, t) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(log.calls == 1);
  CHECK(pthread_equal(log.thread, th));
  pthread_mutex_destroy(&log.mu);
}

/* ---- refcount stress ----------------------------------------------------------------- */

typedef struct {
  tensor_t *t;
  storage_t *s;
  storage_weak_t *w;
  int failures;
} shared_state;

static void *stress(void *arg) {
  shared_state *st = (shared_state *)arg;
  int64_t sizes[1] = {4};
  int i;
  for (i = 0; i < ITERATIONS; i++) {
    tensor_t *r = tensor_retain(st->t), *v = NULL;
    storage_t *s2 = storage_retain(st->s), *l;
    storage_weak_t *w2 = NULL;
    if (r != st->t || s2 != st->s) st->failures++;
    l = storage_weak_lock(st->w);
    if (l != st->s) st->failures++;
    if (storage_weak_new(st->s, &w2) != TENSOR_OK) st->failures++;
    if (tensor_from_storage(st->s, i % 4, sizes, NULL, 1, TENSOR_UINT8, &v) != TENSOR_OK) st->failures++;
    if (tensor_use_count(st->t) < 2 || storage_use_count(st->s) < 4) st->failures++;
    tensor_release(v);
    storage_weak_release(w2);
    storage_release(l);
    storage_release(s2);
    tensor_release(r);
  }
  return NULL;
}

static void test_refcount_stress(void) {
  deleter_log log;
  shared_state st[THREADS];
  pthread_t th[THREADS];
  int64_t sizes[1] = {8};
  tensor_t *t = NULL;
  storage_t *s;
  storage_weak_t *w = NULL;
  int i, failures = 0;
  pthread_mutex_init(&log.mu, NULL);
  log.calls = 0;

  CHECK_OK(tensor_from_blob(malloc(8), sizes, NULL, 1, TENSOR_UINT8, CPU, free_deleter, &log, &t));
  s = storage_retain(tensor_storage(t));
  CHECK_OK(storage_weak_new(s, &w));
  CHECK(tensor_use_count(t) == 1 && storage_use_count(s) == 2 && storage_weak_count(s) == 2);

  for (i = 0; i < THREADS; i++) {
    st[i].t = t;
    st[i].s = s;
    st[i].w = w;
    st[i].failures = 0;
    CHECK(pthread_create(&th[i], NULL, stress, &st[i]) == 0);
  }
  for (i = 0; i < THREADS; i++) {
    CHECK(pthread_join(th[i], NULL) == 0);
    failures += st[i].failures;
  }
  CHECK(failures == 0);
  /* exact counts after 4 x 20000 balanced rounds */
  CHECK(tensor_use_count(t) == 1);
  CHECK(storage_use_count(s) == 2);
  CHECK(storage_weak_count(s) == 2);
  CHECK(calls_of(&log) == 0);

  tensor_release(t);
  CHECK(calls_of(&log) == 0);
  CHECK(!storage_weak_expired(w));
  storage_release(s);
  CHECK(calls_of(&log) == 1);
  CHECK(storage_weak_expired(w));
  CHECK(storage_weak_lock(w) == NULL);
  storage_weak_release(w);
  pthread_mutex_destroy(&log.mu);
}

/* ---- racing last releases ------------------------------------------------------------ */

typedef struct {
  tensor_t *t;
  storage_weak_t *w;
  pthread_barrier_t *go;
} racer;

static void *race_release(void *arg) {
  racer *r = (racer *)arg;
  storage_t *l;
  pthread_barrier_wait(r->go);
  l = storage_weak_lock(r->w); /* may or may not win against the releases */
  tensor_release(r->t);
  storage_release(l);
  storage_weak_release(r->w);
  return NULL;
}

static void test_racing_last_release(void) {
  deleter_log log;
  pthread_barrier_t go;
  int round, i, wrong = 0;
  int64_t sizes[1] = {2};
  pthread_mutex_init(&log.mu, NULL);
  for (round = 0; round < ROUNDS; round++) {
    racer r[THREADS];
    pthread_t th[THREADS];
    tensor_t *base = NULL;
    storage_t *s;
    log.calls = 0;
    if (tensor_from_blob(malloc(16), sizes, NULL, 1, TENSOR_INT64, CPU, free_deleter, &log, &base) !=
        TENSOR_OK) {
      wrong++;
      break;
    }
    s = tensor_storage(base);
    pthread_barrier_init(&go, NULL, THREADS);
    for (i = 0; i < THREADS; i++) {
      r[i].t = NULL;
      r[i].w = NULL;
      r[i].go = &go;
      if (tensor_from_storage(s, i % 2, sizes, NULL, 1, TENSOR_INT32, &r[i].t) != TENSOR_OK) wrong++;
      if (storage_weak_new(s, &r[i].w) != TENSOR_OK) wrong++;
    }
    tensor_release(base); /* only the 4 racers hold the storage now */
    if (log.calls != 0) wrong++;
    for (i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, race_release, &r[i]);
    for (i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    if (log.calls != 1) wrong++;
  }
  CHECK(wrong == 0);
  pthread_mutex_destroy(&log.mu);
}

/* ---- per-thread error messages -------------------------------------------------------- */

static void *other_thread_errors(void *arg) {
  int *ok = (int *)arg;
  int64_t neg[1] = {-7};
  tensor_t *t = NULL;
  *ok = strcmp(tensor_last_error(), "") == 0;
  *ok &= tensor_empty(neg, 1, TENSOR_FLOAT32, &t) == TENSOR_ERR_INVALID_ARGUMENT;
  *ok &= strstr(tensor_last_error(), "-7") != NULL;
  return NULL;
}

static void test_thread_local_errors(void) {
  int64_t neg[1] = {-3};
  tensor_t *t = NULL;
  pthread_t th;
  int ok = 0;
  CHECK_STATUS(tensor_zeros(neg, 1, TENSOR_FLOAT32, &t), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_zeros");
  CHECK(pthread_create(&th, NULL, other_thread_errors, &ok) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(ok);
  CHECK_ERROR_HAS("tensor_zeros"); /* untouched by the other thread's failure */
  CHECK(strstr(tensor_last_error(), "-7") == NULL);
}

int main(void) {
  test_deleter_on_other_thread();
  test_refcount_stress();
  test_racing_last_release();
  test_thread_local_errors();
  return harness_finish("c_threads");
}
