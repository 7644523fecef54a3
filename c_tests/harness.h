/* Minimal test harness for the C and C++ tests: CHECK macros that count, and a summary
 * line "<name>: N passed, N failed" printed by harness_finish(). Each test program includes
 * this after tensor.h and returns harness_finish("name") from main. */
#ifndef LIBTENSOR_TEST_HARNESS_H
#define LIBTENSOR_TEST_HARNESS_H

#include <stdio.h>
#include <string.h>

#include "tensor.h"

static int harness_passed = 0;
static int harness_failed = 0;

static void harness_result(int ok, const char *file, int line, const char *what) {
  if (ok) {
    harness_passed++;
  } else {
    harness_failed++;
    fprintf(stderr, "%s:%d: CHECK failed: %s (last error: \"%s\")\n", file, line, what,
            tensor_last_error());
  }
}

/* A boolean property. */
#define CHECK(cond) harness_result((cond) ? 1 : 0, __FILE__, __LINE__, #cond)
/* A call that must succeed. */
#define CHECK_OK(expr) harness_result((expr) == TENSOR_OK, __FILE__, __LINE__, #expr " == TENSOR_OK")
/* A call that must fail with one status. */
#define CHECK_STATUS(expr, want) harness_result((expr) == (want), __FILE__, __LINE__, #expr " == " #want)
/* The last error message contains a substring. */
#define CHECK_ERROR_HAS(sub) \
  harness_result(strstr(tensor_last_error(), (sub)) != NULL, __FILE__, __LINE__, "last error contains \"" sub "\"")

/* The library's memory statistics now (every field of this header's struct). */
static inline tensor_memory_stats_t harness_memory_stats(void) {
  tensor_memory_stats_t s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  CHECK_OK(tensor_memory_stats(&s));
  return s;
}

static int harness_finish(const char *name) {
  printf("%s: %d passed, %d failed\n", name, harness_passed, harness_failed);
  return harness_failed == 0 && harness_passed > 0 ? 0 : 1;
}

#endif
