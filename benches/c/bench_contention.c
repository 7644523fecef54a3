/* Views under contention through the real libtensor.so: two threads each take
 * transpose(1,3) + release ITERS times, (a) of one shared base tensor, (b) of a base of
 * their own. Best of ROUNDS; ns per view per thread; ratio shared / separate (the issue-10
 * target is <= 1.3). Also reports the single-thread cost vs a malloc(160)/free pair, and
 * the floor of any design in which a view holds a counted reference to its base's storage:
 * two threads doing an atomic increment, a malloc(160)/free pair, and an atomic decrement
 * (a view's retain and release of the storage around private work) on one shared counter
 * vs on counters of their own.
 * Usage: bench_contention [iters [rounds]]   Build and run: benches/c/run.sh contention */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tensor.h"

static long iters = 200000;
static int failed;
static void *volatile sink;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *worker(void *arg) {
  tensor_t *base = (tensor_t *)arg;
  long i;
  for (i = 0; i < iters; i++) {
    tensor_t *v = NULL;
    if (tensor_transpose(base, 1, 3, &v) != TENSOR_OK) failed = 1;
    tensor_release(v);
  }
  return NULL;
}

/* Two counters on cache lines of their own. */
static _Alignas(64) long counters[16];

static void *counter_worker(void *arg) {
  long *c = (long *)arg;
  long i;
  for (i = 0; i < iters; i++) {
    void *p;
    __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
    /* A view's private work between its retain and its release, roughly: the other
     * thread's update then always lands in between (back to back, a thread could keep the
     * line for many pairs and hide the cost). */
    p = malloc(160);
    sink = p;
    free(p);
    __atomic_fetch_sub(c, 1, __ATOMIC_ACQ_REL);
  }
  return NULL;
}

static double run2_with(void *(*fn)(void *), void *a, void *b) {
  pthread_t t1, t2;
  double t0 = now_ns();
  pthread_create(&t1, NULL, fn, a);
  pthread_create(&t2, NULL, fn, b);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  return (now_ns() - t0) / iters;
}

static double run2(tensor_t *a, tensor_t *b) { return run2_with(worker, a, b); }

int main(int argc, char **argv) {
  int64_t sizes[4] = {8, 16, 32, 32};
  tensor_t *a = NULL, *b = NULL;
  int rounds = argc > 2 ? atoi(argv[2]) : 15, r;
  double shared = 1e30, separate = 1e30, single = 1e30, mp = 1e30;
  double pair_shared = 1e30, pair_separate = 1e30;
  if (argc > 1) iters = atol(argv[1]);
  if (tensor_empty(sizes, 4, TENSOR_FLOAT32, &a) != TENSOR_OK) return 1;
  if (tensor_empty(sizes, 4, TENSOR_FLOAT32, &b) != TENSOR_OK) return 1;
  for (r = 0; r < rounds; r++) {
    double t, t0;
    long i;
    t = run2(a, a);
    if (t < shared) shared = t;
    t = run2(a, b);
    if (t < separate) separate = t;
    t0 = now_ns();
    worker(a);
    t = (now_ns() - t0) / iters;
    if (t < single) single = t;
    t0 = now_ns();
    for (i = 0; i < iters; i++) {
      sink = malloc(160);
      free(sink);
    }
    t = (now_ns() - t0) / iters;
    if (t < mp) mp = t;
    t = run2_with(counter_worker, &counters[0], &counters[0]);
    if (t < pair_shared) pair_shared = t;
    t = run2_with(counter_worker, &counters[0], &counters[8]);
    if (t < pair_separate) pair_separate = t;
  }
  tensor_release(a);
  tensor_release(b);
  if (failed) return 1;
  printf("| 2 threads, shared base | %.1f ns | 2 threads, separate bases | %.1f ns | ratio %.2f |"
         " 1 thread %.1f ns = %.2fx malloc pair (%.1f ns) |\n",
         shared, separate, shared / separate, single, single / mp, mp);
  printf("| floor: inc, malloc+free, dec; 2 threads | shared counter %.1f ns | own counters %.1f ns |"
         " +%.1f ns per view: ratio floor (separate + that) / separate = %.2f |\n",
         pair_shared, pair_separate, pair_shared - pair_separate,
         (separate + pair_shared - pair_separate) / separate);
  return 0;
}
