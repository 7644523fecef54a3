/* The environment variables the library reads at first use: every value it ignores is
 * reported once on stderr (the variable, the value, what it accepts); the switches
 * (TENSOR_NO_CACHING, TENSOR_MEMORY_TRACKING) take the usual boolean spellings, one parser
 * for both. Each case runs in a forked child that sets the variables before its first
 * library call (this parent makes no call before the children). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "harness.h"
#include "child.h"

#define ERR_CAP 8192
#define DEFAULT_LIMIT ((unsigned long long)256 << 20)

struct env_case {
  const char *no_caching;  /* NULL: unset */
  const char *cache_limit; /* NULL: unset */
  const char *tracking;    /* NULL: unset */
  const char *threads;     /* NULL: unset */
};

static void set_or_unset(const char *name, const char *value) {
  if (value != NULL) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
}

/* Reads every variable (twice: the second read must not warn again) and reports what the
 * library made of them on stderr, as "result: limit=L tracking=T threads=N small_cached=C"
 * (C: a freed 128-byte block was kept by this thread's cache). */
static void child_body(void *arg) {
  const struct env_case *c = (const struct env_case *)arg;
  int64_t n[1] = {32};
  tensor_t *t = NULL;
  tensor_memory_stats_t s0, s1;
  int round;
  set_or_unset("TENSOR_NO_CACHING", c->no_caching);
  set_or_unset("TENSOR_CACHE_LIMIT", c->cache_limit);
  set_or_unset("TENSOR_MEMORY_TRACKING", c->tracking);
  set_or_unset("TENSOR_COPY_THREADS", c->threads);
  for (round = 0; round < 2; round++) {
    (void)tensor_copy_threads();
    (void)tensor_memory_tracking_enabled();
    s0 = harness_memory_stats();
  }
  if (tensor_empty(n, 1, TENSOR_FLOAT32, &t) != TENSOR_OK) {
    _exit(3);
  }
  tensor_release(t);
  s1 = harness_memory_stats();
  fprintf(stderr, "result: limit=%llu tracking=%d threads=%lld small_cached=%d\n",
          (unsigned long long)s0.cache_limit_bytes, tensor_memory_tracking_enabled() ? 1 : 0,
          (long long)tensor_copy_threads(), s1.cached_bytes == s0.cached_bytes + 128 ? 1 : 0);
  (void)tensor_set_memory_tracking(0);
  (void)tensor_empty_cache();
}

/* Runs the case; the child must exit normally, print `result`, and print exactly the
 * `warnings` lines "libtensor: ignoring " (each containing `warn1` / `warn2` when given). */
static void expect(struct env_case c, const char *result, int warnings, const char *warn1,
                   const char *warn2) {
  char err[ERR_CAP];
  int status = child_run(child_body, &c, err, sizeof err);
  int ok = child_exited_ok(status) && strstr(err, result) != NULL &&
           child_count(err, "libtensor: ignoring ") == warnings &&
           (warn1 == NULL || strstr(err, warn1) != NULL) &&
           (warn2 == NULL || strstr(err, warn2) != NULL);
  CHECK(ok);
  if (!ok) {
    fprintf(stderr, "expected \"%s\" and %d warning(s) (%s; %s); status %d, stderr:\n%s\n",
            result, warnings, warn1 ? warn1 : "-", warn2 ? warn2 : "-", status, err);
  }
}

int main(void) {
  char want[160];
  /* Under a memory checker the per-thread caches are off unless TENSOR_NO_CACHING says
   * false by name. */
  const char *small_default = child_under_checker() ? "small_cached=0" : "small_cached=1";
  struct env_case none = {NULL, NULL, NULL, NULL};
  struct env_case c;

  snprintf(want, sizeof want, "result: limit=%llu tracking=0 threads=1 %s", DEFAULT_LIMIT,
           small_default);
  expect(none, want, 0, NULL, NULL);

  /* Booleans: every usual spelling, any case; nothing printed. */
  c = none;
  c.no_caching = "yes";
  c.tracking = "TRUE";
  expect(c, "result: limit=0 tracking=1 threads=1 small_cached=0", 0, NULL, NULL);
  c.no_caching = " On";
  c.tracking = "1";
  expect(c, "result: limit=0 tracking=1 threads=1 small_cached=0", 0, NULL, NULL);
  c.no_caching = "Off"; /* false by name: every cache on, even under a memory checker */
  c.tracking = "no";
  snprintf(want, sizeof want, "result: limit=%llu tracking=0 threads=1 small_cached=1",
           DEFAULT_LIMIT);
  expect(c, want, 0, NULL, NULL);
  c.no_caching = "false";
  c.tracking = "off";
  expect(c, want, 0, NULL, NULL);
  c.no_caching = "0";
  c.tracking = "0";
  expect(c, want, 0, NULL, NULL);

  /* Empty counts as unset. */
  c = none;
  c.no_caching = "";
  c.tracking = "";
  snprintf(want, sizeof want, "result: limit=%llu tracking=0 threads=1 %s", DEFAULT_LIMIT,
           small_default);
  expect(c, want, 0, NULL, NULL);

  /* Values the library cannot use: ignored, each with one warning naming the variable, the
   * value and what it accepts. */
  c = none;
  c.no_caching = "yes please";
  c.tracking = "abc";
  expect(c, want, 2,
         "libtensor: ignoring TENSOR_NO_CACHING=\"yes please\" (expected a boolean: 1/0, "
         "true/false, yes/no or on/off)",
         "libtensor: ignoring TENSOR_MEMORY_TRACKING=\"abc\" (expected a boolean");
  c = none;
  c.cache_limit = "12x";
  c.threads = "0";
  expect(c, want, 2, "libtensor: ignoring TENSOR_CACHE_LIMIT=\"12x\" (expected bytes",
         "libtensor: ignoring TENSOR_COPY_THREADS=\"0\" (expected a thread count in 1..=256)");

  /* A valid limit and thread count; TENSOR_NO_CACHING=1 wins over the limit, which is still
   * checked. */
  c = none;
  c.cache_limit = "6M";
  c.threads = "3";
  snprintf(want, sizeof want, "result: limit=%llu tracking=0 threads=3 %s",
           (unsigned long long)6 << 20, small_default);
  expect(c, want, 0, NULL, NULL);
  c = none;
  c.no_caching = "1";
  c.cache_limit = "lots";
  expect(c, "result: limit=0 tracking=0 threads=1 small_cached=0", 1,
         "libtensor: ignoring TENSOR_CACHE_LIMIT=\"lots\"", NULL);
  return harness_finish("test_env_values");
}
