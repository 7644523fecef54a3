/* Executors that break tensor_set_copy_executor's contract, each in a child process (a
 * crash or a hang there fails a check here instead of ending the test):
 * 1. a task called after the executor returned: refused, never run on the finished
 *    copy's freed memory (its task context, on the stack of a thread whose stack was
 *    unmapped since), and the copy's result is right;
 * 2. an executor that longjmps out of the copy: the same thread's next
 *    tensor_set_copy_executor is neither refused nor hangs (the library finds the copy's
 *    frames gone), later big copies and executors work, and another thread's setter then
 *    returns too;
 * 3. the same on a thread that then exits: a setter on another thread returns (the
 *    exiting thread gives the abandoned copy back).
 * Each child is killed by an alarm after CHILD_SECONDS: a hang is a failed check. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "harness.h"
#include "child.h"

#define CHILD_SECONDS 60
#define N (1 << 22) /* 16 MiB of float32: a big copy */

/* The failures a child saw, written to its stderr (the parent reads them). */
static int child_failures = 0;
#define EXPECT(cond)                                                              \
  do {                                                                            \
    if (!(cond)) {                                                                \
      child_failures++;                                                           \
      fprintf(stderr, "child: %s:%d: %s (%s)\n", __FILE__, __LINE__, #cond,      \
              tensor_last_error());                                               \
    }                                                                             \
  } while (0)

static void child_end(void) {
  fprintf(stderr, "child: failures %d end\n", child_failures);
  fflush(stderr);
  _exit(child_failures == 0 ? 0 : 3);
}

/* arange(N) float32, checked element by element (the copy's result). */
static int holds_arange(const tensor_t *t) {
  const float *p = (const float *)tensor_data_ptr(t);
  int64_t i;
  if (!p || tensor_numel(t) != N) return 0;
  for (i = 0; i < N; i++)
    if (p[i] != (float)i) return 0;
  return 1;
}

/* A child's start: the alarm, 4 parts a big copy, `executor` set; the copy's source. */
static tensor_t *child_start(tensor_copy_executor_fn executor) {
  tensor_t *src = NULL;
  alarm(CHILD_SECONDS);
  EXPECT(tensor_arange(N, TENSOR_FLOAT32, &src) == TENSOR_OK);
  EXPECT(tensor_set_copy_threads(4, NULL) == TENSOR_OK);
  EXPECT(tensor_set_copy_executor(executor, NULL) == TENSOR_OK);
  return src;
}

/* --- 1. A task after return ------------------------------------------------------- */

static tensor_task_fn saved_fn;
static void *saved_ctx;
static size_t saved_n;

/* Keeps the task for later and runs none now (the library runs the parts itself). */
static void saving_executor(void *ctx, size_t n, tensor_task_fn task_fn, void *task_ctx) {
  (void)ctx;
  saved_fn = task_fn;
  saved_ctx = task_ctx;
  saved_n = n;
}

static void *copy_on_thread(void *arg) {
  tensor_t *src = (tensor_t *)arg, *out = NULL;
  EXPECT(tensor_clone(src, TENSOR_PRESERVE_FORMAT, &out) == TENSOR_OK);
  EXPECT(holds_arange(out));
  tensor_release(out);
  return NULL;
}

static void late_task(void *arg) {
  tensor_t *src;
  pthread_t th;
  pthread_attr_t attr;
  size_t stack_bytes = 1 << 20;
  void *stack;
  size_t i;
  (void)arg;
  src = child_start(saving_executor);
  /* The copy runs on a thread whose stack is ours, unmapped once it has ended: whatever
   * the copy kept there is gone for good. */
  stack = mmap(NULL, stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(stack != MAP_FAILED);
  if (stack == MAP_FAILED) child_end();
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack, stack_bytes);
  EXPECT(pthread_create(&th, &attr, copy_on_thread, src) == 0);
  pthread_join(th, NULL);
  pthread_attr_destroy(&attr);
  EXPECT(munmap(stack, stack_bytes) == 0);
  EXPECT(saved_fn != NULL && saved_n == 4);
  /* The copy has returned: every late task is refused. */
  for (i = 0; i < saved_n + 1 && saved_fn; i++) saved_fn(saved_ctx, i);
  /* And the library still copies, on an executor that does run its tasks later. */
  {
    tensor_t *out = NULL;
    saved_fn = NULL;
    EXPECT(tensor_clone(src, TENSOR_PRESERVE_FORMAT, &out) == TENSOR_OK);
    EXPECT(holds_arange(out));
    for (i = 0; i < saved_n && saved_fn; i++) saved_fn(saved_ctx, i);
    EXPECT(holds_arange(out));
    tensor_release(out);
  }
  EXPECT(tensor_set_copy_executor(NULL, NULL) == TENSOR_OK);
  tensor_release(src);
  child_end();
}

/* --- 2. and 3. An executor that longjmps ------------------------------------------- */

static __thread jmp_buf *jump_to;

/* Runs task 0 (so the copy is under way), then jumps out of the copy. */
static void jumping_executor(void *ctx, size_t n, tensor_task_fn task_fn, void *task_ctx) {
  (void)ctx;
  (void)n;
  task_fn(task_ctx, 0);
  longjmp(*jump_to, 1);
}

/* Runs every task in order, counting its calls. */
static int inline_calls;
static void inline_executor(void *ctx, size_t n, tensor_task_fn task_fn, void *task_ctx) {
  size_t i;
  (void)ctx;
  inline_calls++;
  for (i = 0; i < n; i++) task_fn(task_ctx, i);
}

/* A copy_ into a fresh tensor like `src` (made before, released after: the abandoned copy
 * holds no memory of its own) that the executor abandons: returns through the longjmp. */
static void abandoned_copy(tensor_t *src) {
  jmp_buf env;
  tensor_t *dst = NULL;
  EXPECT(tensor_empty_like(src, TENSOR_PRESERVE_FORMAT, &dst) == TENSOR_OK);
  jump_to = &env;
  if (setjmp(env) == 0) {
    (void)tensor_copy_(dst, src);
    EXPECT(!"the executor was to jump out of the copy");
  }
  tensor_release(dst);
}

static void *set_default(void *arg) {
  (void)arg;
  EXPECT(tensor_set_copy_executor(NULL, NULL) == TENSOR_OK);
  return NULL;
}

static void longjmp_same_thread(void *arg) {
  tensor_t *src = child_start(jumping_executor), *out = NULL;
  pthread_t th;
  (void)arg;
  abandoned_copy(src);
  abandoned_copy(src);
  /* Back outside the library: the setter is neither refused nor waits for the copies the
   * jumps abandoned. */
  EXPECT(tensor_set_copy_executor(inline_executor, NULL) == TENSOR_OK);
  EXPECT(tensor_clone(src, TENSOR_PRESERVE_FORMAT, &out) == TENSOR_OK);
  EXPECT(inline_calls == 1 && holds_arange(out));
  tensor_release(out);
  /* Another thread's setter returns too. */
  EXPECT(pthread_create(&th, NULL, set_default, NULL) == 0);
  pthread_join(th, NULL);
  tensor_release(src);
  child_end();
}

static void *jump_and_exit(void *arg) {
  abandoned_copy((tensor_t *)arg);
  return NULL;
}

static void longjmp_then_exit(void *arg) {
  tensor_t *src = child_start(jumping_executor);
  pthread_t th;
  (void)arg;
  EXPECT(pthread_create(&th, NULL, jump_and_exit, src) == 0);
  pthread_join(th, NULL);
  /* The thread that abandoned the copy has ended: this thread's setter returns. */
  EXPECT(tensor_set_copy_executor(NULL, NULL) == TENSOR_OK);
  tensor_release(src);
  child_end();
}

static void in_child(const char *name, void (*body)(void *)) {
  char err[4096];
  int status = child_run(body, NULL, err, sizeof err);
  int ok = child_exited_ok(status) && strstr(err, "child: failures 0 end") != NULL;
  CHECK(ok);
  if (!ok) {
    fprintf(stderr, "%s: wait status %d%s, child's stderr:\n%s\n", name, status,
            status != -1 && WIFSIGNALED(status) ? " (killed by a signal: crash or hang)" : "",
            err);
  }
}

int main(void) {
  in_child("a task after return", late_task);
  in_child("a longjmp, then the same thread", longjmp_same_thread);
  in_child("a longjmp, then the thread exits", longjmp_then_exit);
  return harness_finish("test_copy_executor_misuse");
}
