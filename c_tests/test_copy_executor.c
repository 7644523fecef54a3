/* Big copies on the host's executor (tensor_set_copy_executor): every part runs exactly
 * once, the results equal the single-threaded copy's, and the library starts no thread of
 * its own (the process's thread count, from /proc/self/task, is sampled inside every part
 * and after). The part count: the CPU count when no thread count was set, the thread
 * count once set (1: the executor is not called). A lenient executor (parts skipped,
 * repeated, out of range) still gives the right result; one on two pthreads of its own
 * too; setting the executor from inside it is refused; NULL restores the default. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

#define MAX_PARTS 256

static int threads_now(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  int n = 0;
  if (!d) return -1;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

/* What the counting executor saw. */
typedef struct {
  atomic_int calls, tasks, max_threads;
  size_t last_n;
  int runs[MAX_PARTS];
  int set_inside; /* the status of tensor_set_copy_executor called from inside */
  int mode;       /* 0: in order, 1: reversed, 2: lenient (skip odd, repeat even, 1 past) */
} counter_t;

typedef struct {
  counter_t *c;
  tensor_task_fn task_fn;
  void *task_ctx;
} wrapped_t;

static void run_one(counter_t *c, tensor_task_fn task_fn, void *task_ctx, size_t i) {
  int t = threads_now();
  if (i < MAX_PARTS) c->runs[i]++;
  atomic_fetch_add(&c->tasks, 1);
  if (t > atomic_load(&c->max_threads)) atomic_store(&c->max_threads, t);
  task_fn(task_ctx, i);
}

static void counting_executor(void *ctx, size_t n, tensor_task_fn task_fn, void *task_ctx) {
  counter_t *c = (counter_t *)ctx;
  size_t i;
  atomic_fetch_add(&c->calls, 1);
  c->last_n = n;
  c->set_inside = tensor_set_copy_executor(NULL, NULL);
  if (c->mode == 0)
    for (i = 0; i < n; i++) run_one(c, task_fn, task_ctx, i);
  else if (c->mode == 1)
    for (i = n; i-- > 0;) run_one(c, task_fn, task_ctx, i);
  else
    for (i = 0; i <= n; i += 2) {
      task_fn(task_ctx, i); /* i == n (n even): out of range, ignored */
      task_fn(task_ctx, i); /* a repeat: does nothing */
    }
}

/* An executor on two pthreads of its own plus the calling thread, taking parts from a
 * shared counter. */
typedef struct {
  atomic_size_t next;
  size_t n;
  tensor_task_fn task_fn;
  void *task_ctx;
} pool_job_t;

static void *pool_worker(void *arg) {
  pool_job_t *j = (pool_job_t *)arg;
  size_t i;
  while ((i = atomic_fetch_add(&j->next, 1)) < j->n) j->task_fn(j->task_ctx, i);
  return NULL;
}

static atomic_int pool_calls;

static void pthread_executor(void *ctx, size_t n, tensor_task_fn task_fn, void *task_ctx) {
  pool_job_t j;
  pthread_t th[2];
  int k, started[2];
  (void)ctx;
  atomic_fetch_add(&pool_calls, 1);
  atomic_init(&j.next, 0);
  j.n = n;
  j.task_fn = task_fn;
  j.task_ctx = task_ctx;
  for (k = 0; k < 2; k++) started[k] = pthread_create(&th[k], NULL, pool_worker, &j) == 0;
  pool_worker(&j);
  for (k = 0; k < 2; k++)
    if (started[k]) pthread_join(th[k], NULL);
}

/* The big copies of the test, each giving a fresh tensor: 0 a transposed 16 MiB
 * complex128 made contiguous, 1 float32 -> complex128 (a 16 MiB output), 2 copy_ of a
 * broadcast row into a 16 MiB destination. */
static tensor_t *big_copy(int which, tensor_t *tr, tensor_t *f32, tensor_t *row) {
  int64_t sq[2] = {1024, 1024};
  tensor_t *out = NULL;
  if (which == 0) CHECK_OK(tensor_contiguous(tr, TENSOR_CONTIGUOUS_FORMAT, &out));
  if (which == 1) CHECK_OK(tensor_to_dtype(f32, TENSOR_COMPLEX128, &out));
  if (which == 2) {
    CHECK_OK(tensor_empty(sq, 2, TENSOR_COMPLEX128, &out));
    CHECK_OK(tensor_copy_(out, row));
  }
  return out;
}

static int equal(const tensor_t *a, const tensor_t *b) {
  bool eq = false;
  return a && b && tensor_equal(a, b, &eq) == TENSOR_OK && eq;
}

/* The references checked against the formulas, not only against each other: 0 holds the
 * transpose of arange (element (i, j) = j * 1024 + i), 1 and 2 real parts 0..2^20 - 1 and
 * the row index's column (c), every imaginary part 0. */
static int refs_hold_their_formulas(tensor_t *const ref[3]) {
  int64_t i, j;
  for (int k = 0; k < 3; k++) {
    const double *p = (const double *)tensor_data_ptr(ref[k]);
    if (!p || !tensor_is_contiguous(ref[k], TENSOR_CONTIGUOUS_FORMAT)) return 0;
    for (i = 0; i < 1024; i++)
      for (j = 0; j < 1024; j++) {
        int64_t e = i * 1024 + j;
        double want = k == 0 ? (double)(j * 1024 + i) : k == 1 ? (double)e : (double)j;
        if (p[2 * e] != want || p[2 * e + 1] != 0.0) return 0;
      }
  }
  return 1;
}

static int all_once(const counter_t *c, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (c->runs[i] != 1) return 0;
  for (; i < MAX_PARTS; i++)
    if (c->runs[i] != 0) return 0;
  return 1;
}

int main(void) {
  int64_t sq[2] = {1024, 1024};
  tensor_t *base = NULL, *v = NULL, *tr = NULL, *f32 = NULL, *row = NULL;
  tensor_t *ref[3] = {NULL, NULL, NULL};
  counter_t c;
  int baseline, k, mode;
  int64_t prev = 0;
  cpu_set_t cpus;
  int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;

  CHECK_OK(tensor_arange(1024 * 1024, TENSOR_COMPLEX128, &base));
  CHECK_OK(tensor_view(base, sq, 2, &v));
  CHECK_OK(tensor_transpose(v, 0, 1, &tr));
  CHECK_OK(tensor_arange(1024 * 1024, TENSOR_FLOAT32, &f32));
  CHECK_OK(tensor_arange(1024, TENSOR_COMPLEX128, &row));
  /* The references: single-threaded (the default count, no executor). */
  CHECK(tensor_copy_threads() == 1);
  for (k = 0; k < 3; k++) ref[k] = big_copy(k, tr, f32, row);
  CHECK(refs_hold_their_formulas(ref));
  baseline = threads_now();
  CHECK(baseline >= 1);

  /* 1. No thread count set: as many parts as CPUs (one part: the executor is not called). */
  memset(&c, 0, sizeof c);
  CHECK_OK(tensor_set_copy_executor(counting_executor, &c));
  {
    tensor_t *out = big_copy(0, tr, f32, row);
    CHECK(equal(out, ref[0]));
    tensor_release(out);
  }
  if (atomic_load(&c.calls) == 1) {
    CHECK(c.last_n >= 2 && (int)c.last_n <= ncpu && all_once(&c, c.last_n));
    CHECK(atomic_load(&c.max_threads) == baseline);
  } else {
    CHECK(atomic_load(&c.calls) == 0 && ncpu == 1);
  }
  CHECK(threads_now() == baseline);

  /* 2. The thread count set: that many parts, in order and reversed, each exactly once;
   * no thread started while they ran; identical results. Setting the executor from inside
   * it is refused (and changes nothing). */
  CHECK_OK(tensor_set_copy_threads(4, &prev));
  for (mode = 0; mode < 2; mode++) {
    for (k = 0; k < 3; k++) {
      tensor_t *out;
      memset(&c, 0, sizeof c);
      c.mode = mode;
      c.set_inside = -1;
      out = big_copy(k, tr, f32, row);
      CHECK(atomic_load(&c.calls) == 1 && c.last_n == 4);
      CHECK(atomic_load(&c.tasks) == 4 && all_once(&c, 4));
      CHECK(atomic_load(&c.max_threads) == baseline);
      CHECK(c.set_inside == TENSOR_ERR_INVALID_ARGUMENT);
      CHECK(equal(out, ref[k]));
      tensor_release(out);
    }
  }
  CHECK(threads_now() == baseline);

  /* 3. A lenient executor: odd parts skipped (run by the library on the copying thread),
   * even ones repeated, one past the end: still the right result. */
  CHECK_OK(tensor_set_copy_threads(5, NULL));
  for (k = 0; k < 3; k++) {
    tensor_t *out;
    memset(&c, 0, sizeof c);
    c.mode = 2;
    out = big_copy(k, tr, f32, row);
    CHECK(atomic_load(&c.calls) == 1 && c.last_n == 5);
    CHECK(equal(out, ref[k]));
    tensor_release(out);
  }

  /* 4. Count 1: copies stay on the calling thread; the executor is not called. */
  CHECK_OK(tensor_set_copy_threads(1, NULL));
  memset(&c, 0, sizeof c);
  {
    tensor_t *out = big_copy(1, tr, f32, row);
    CHECK(atomic_load(&c.calls) == 0 && equal(out, ref[1]));
    tensor_release(out);
  }

  /* 5. An executor with threads of its own, running parts concurrently. */
  CHECK_OK(tensor_set_copy_threads(3, NULL));
  CHECK_OK(tensor_set_copy_executor(pthread_executor, NULL));
  for (k = 0; k < 3; k++) {
    tensor_t *out = big_copy(k, tr, f32, row);
    CHECK(equal(out, ref[k]));
    tensor_release(out);
  }
  CHECK(atomic_load(&pool_calls) == 3);

  /* 6. NULL restores the default: the library's own threads, the executor not called. */
  CHECK_OK(tensor_set_copy_executor(NULL, NULL));
  {
    tensor_t *out = big_copy(2, tr, f32, row);
    CHECK(atomic_load(&pool_calls) == 3 && equal(out, ref[2]));
    tensor_release(out);
  }
  CHECK_OK(tensor_set_copy_threads(1, NULL));

  for (k = 0; k < 3; k++) tensor_release(ref[k]);
  tensor_release(base);
  tensor_release(v);
  tensor_release(tr);
  tensor_release(f32);
  tensor_release(row);
  CHECK(harness_memory_stats().live_storages == 0);
  return harness_finish("test_copy_executor");
}
