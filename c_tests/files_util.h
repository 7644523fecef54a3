/* File helpers shared by the file tests: a scratch directory (`dir`, made by the test's
 * main with mkdtemp), paths in it, and whole-file writes and reads. Include after
 * harness.h. */
#ifndef LIBTENSOR_C_TESTS_FILES_UTIL_H
#define LIBTENSOR_C_TESTS_FILES_UTIL_H

#include <stdio.h>

static char dir[64];

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(n == 0 || fwrite(data, 1, n, f) == n);
  fclose(f);
}

static size_t read_file(const char *path, unsigned char *buf, size_t cap) {
  FILE *f = fopen(path, "rb");
  size_t n;
  if (!f) return 0;
  n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

#endif
