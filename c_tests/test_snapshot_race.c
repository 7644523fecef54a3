/* The memory snapshot never runs a deleter: while worker threads create and release many
 * short-lived wrapped storages and tensors (each with a deleter that records the thread it
 * ran on), the main thread takes snapshots in a loop. A snapshot that held a reference of
 * its own to an object being released would, whenever the worker's release came while it
 * held it, drop the last reference itself and run the deleter on the snapshotting thread,
 * breaking "the deleter runs on the thread that drops the last reference" (which deleters
 * bound to a thread's GL / CUDA context or a decoder's frame pool depend on). Every
 * deleter must run exactly once, on the worker that released the object.
 * Under valgrind (TENSOR_TEST_UNDER_VALGRIND=1, set by tests/c_api.rs) the rounds are
 * fewer: valgrind runs one thread at a time. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

#define WORKERS 2
#define BATCH 48

static pthread_t snapshot_thread;
static int snapshot_thread_set = 0;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long deleter_calls = 0;
static long on_snapshot_thread = 0;
static long on_wrong_worker = 0;
static int workers_done = 0;
static float buffer[4];

typedef struct {
  pthread_t self;
  int rounds;
  int failures;
} worker;

static void record_thread(void *data, void *ctx) {
  worker *w = (worker *)ctx;
  pthread_t me = pthread_self();
  (void)data;
  pthread_mutex_lock(&mu);
  deleter_calls++;
  if (snapshot_thread_set && pthread_equal(me, snapshot_thread)) on_snapshot_thread++;
  if (!pthread_equal(me, w->self)) on_wrong_worker++;
  pthread_mutex_unlock(&mu);
}

static void *work(void *arg) {
  worker *w = (worker *)arg;
  int64_t four[1] = {4};
  int r, i;
  w->self = pthread_self();
  for (r = 0; r < w->rounds; r++) {
    storage_t *s[BATCH];
    tensor_t *t[BATCH];
    for (i = 0; i < BATCH; i++) {
      s[i] = NULL;
      t[i] = NULL;
      if (storage_from_blob(buffer, sizeof buffer, (tensor_device_t){1, 0}, record_thread, w,
                            &s[i]) != TENSOR_OK)
        w->failures++;
      if (tensor_from_blob(buffer, four, NULL, 1, TENSOR_FLOAT32, (tensor_device_t){1, 0},
                           record_thread, w, &t[i]) != TENSOR_OK)
        w->failures++;
    }
    for (i = 0; i < BATCH; i++) {
      storage_release(s[i]);
      tensor_release(t[i]);
    }
  }
  pthread_mutex_lock(&mu);
  workers_done++;
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(void) {
  const char *vg = getenv("TENSOR_TEST_UNDER_VALGRIND");
  int rounds = vg && vg[0] == '1' ? 20 : 3000;
  worker w[WORKERS];
  pthread_t th[WORKERS];
  long snapshots = 0, done = 0;
  int i, started = 0;

  snapshot_thread = pthread_self();
  snapshot_thread_set = 1;
  CHECK(tensor_set_memory_tracking(1) == false);
  for (i = 0; i < WORKERS; i++) {
    w[i].rounds = rounds;
    w[i].failures = 0;
    if (pthread_create(&th[i], NULL, work, &w[i]) == 0) started++;
  }
  CHECK(started == WORKERS);
  /* Snapshots until every worker has finished (each worker's work is bounded). */
  while (done < started) {
    size_t count = 0;
    if (tensor_memory_snapshot(NULL, 0, &count) != TENSOR_OK) break;
    snapshots++;
    pthread_mutex_lock(&mu);
    done = workers_done;
    pthread_mutex_unlock(&mu);
  }
  for (i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
    CHECK(w[i].failures == 0);
  }
  printf("test_snapshot_race: %ld snapshots, %ld deleter calls, %ld on the snapshotting "
         "thread\n",
         snapshots, deleter_calls, on_snapshot_thread);
  CHECK(snapshots > 0);
  CHECK(deleter_calls == (long)started * rounds * BATCH * 2);
  CHECK(on_snapshot_thread == 0);
  CHECK(on_wrong_worker == 0);
  CHECK(tensor_set_memory_tracking(0) == true);
  return harness_finish("test_snapshot_race");
}
