/* The consistent names and their 0.x aliases: tensor_fill_f64_ / tensor_fill_f64,
 * tensor_fill_i64_ / tensor_fill_i64, tensor_load_safetensors / tensor_safetensors_load and
 * tensor_load_safetensors_mode / tensor_safetensors_load_mode
 * give the same results and the same statuses on bad input, and each failure's message
 * starts with the name that was called. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* The last error starts with "<name>: ". */
static int message_names(const char *name) {
  const char *e = tensor_last_error();
  size_t n = strlen(name);
  return strncmp(e, name, n) == 0 && e[n] == ':' && e[n + 1] == ' ';
}

typedef tensor_status_t (*fill_f64_fn)(struct tensor_t *, double);
typedef tensor_status_t (*fill_i64_fn)(struct tensor_t *, int64_t);
typedef tensor_status_t (*load_fn)(const char *, struct tensor_safetensors_t **);

static struct tensor_t *zeros(tensor_dtype_t dtype) {
  int64_t sizes[2] = {3, 4};
  struct tensor_t *t = NULL;
  CHECK_OK(tensor_zeros(sizes, 2, dtype, &t));
  return t;
}

/* A tensor over a read-only storage. */
static struct tensor_t *read_only(void) {
  struct tensor_t *t = zeros(TENSOR_INT64);
  CHECK_OK(storage_mark_read_only(tensor_storage(t)));
  return t;
}

static void test_fill(void) {
  const fill_f64_fn f64[2] = {tensor_fill_f64_, tensor_fill_f64};
  const char *f64_names[2] = {"tensor_fill_f64_", "tensor_fill_f64"};
  const fill_i64_fn i64[2] = {tensor_fill_i64_, tensor_fill_i64};
  const char *i64_names[2] = {"tensor_fill_i64_", "tensor_fill_i64"};
  struct tensor_t *a[2], *b[2], *ro;
  bool eq = false;
  int64_t idx[2] = {2, 3}, v = 0;
  double d = 0;
  int k;
  for (k = 0; k < 2; k++) {
    a[k] = zeros(TENSOR_FLOAT32);
    CHECK_OK(f64[k](a[k], 2.5));
    CHECK(tensor_version(a[k]) == 1);
    b[k] = zeros(TENSOR_INT64);
    CHECK_OK(i64[k](b[k], INT64_MAX - 1)); /* exact in int64 */
    CHECK(tensor_version(b[k]) == 1);
  }
  CHECK_OK(tensor_get_f64(a[0], idx, 2, &d));
  CHECK(d == 2.5);
  CHECK_OK(tensor_get_i64(b[1], idx, 2, &v));
  CHECK(v == INT64_MAX - 1);
  CHECK_OK(tensor_equal(a[0], a[1], &eq));
  CHECK(eq);
  eq = false;
  CHECK_OK(tensor_equal(b[0], b[1], &eq));
  CHECK(eq);

  /* Bad input: the same status from both names, each message naming the one called. */
  ro = read_only();
  for (k = 0; k < 2; k++) {
    CHECK_STATUS(f64[k](NULL, 1.0), TENSOR_ERR_NULL_POINTER);
    CHECK(message_names(f64_names[k]));
    CHECK_STATUS(i64[k](NULL, 1), TENSOR_ERR_NULL_POINTER);
    CHECK(message_names(i64_names[k]));
    CHECK_STATUS(f64[k](ro, 1.0), TENSOR_ERR_READ_ONLY);
    CHECK(message_names(f64_names[k]));
    CHECK_STATUS(i64[k](ro, 1), TENSOR_ERR_READ_ONLY);
    CHECK(message_names(i64_names[k]));
    tensor_release(a[k]);
    tensor_release(b[k]);
  }
  CHECK(tensor_version(ro) == 0);
  tensor_release(ro);
}

static void test_load_safetensors(const char *dir) {
  const load_fn load[2] = {tensor_load_safetensors, tensor_safetensors_load};
  const char *names[2] = {"tensor_load_safetensors", "tensor_safetensors_load"};
  char path[128], missing[128], garbage[128];
  const char *tnames[2] = {"w", "b"};
  struct tensor_t *ts[2];
  struct tensor_safetensors_t *f[2] = {NULL, NULL};
  struct tensor_safetensors_t *none = NULL;
  FILE *g;
  size_t i;
  int k;
  snprintf(path, sizeof path, "%s/names.safetensors", dir);
  snprintf(missing, sizeof missing, "%s/missing.safetensors", dir);
  snprintf(garbage, sizeof garbage, "%s/garbage.safetensors", dir);
  ts[0] = zeros(TENSOR_FLOAT32);
  CHECK_OK(tensor_fill_f64_(ts[0], -1.25));
  ts[1] = zeros(TENSOR_INT64);
  CHECK_OK(tensor_fill_i64_(ts[1], 7));
  CHECK_OK(tensor_save_safetensors(path, tnames, (const struct tensor_t *const *)ts, 2));
  g = fopen(garbage, "wb");
  CHECK(g != NULL);
  if (g) {
    fputs("not a safetensors file", g);
    fclose(g);
  }

  for (k = 0; k < 2; k++) CHECK_OK(load[k](path, &f[k]));
  CHECK(tensor_safetensors_count(f[0]) == 2 && tensor_safetensors_count(f[1]) == 2);
  for (i = 0; i < 2; i++) {
    struct tensor_t *x = NULL, *y = NULL;
    bool eq = false;
    CHECK(strcmp(tensor_safetensors_name(f[0], i), tensor_safetensors_name(f[1], i)) == 0);
    CHECK_OK(tensor_safetensors_at(f[0], i, &x));
    CHECK_OK(tensor_safetensors_at(f[1], i, &y));
    CHECK_OK(tensor_equal(x, y, &eq));
    CHECK(eq);
    CHECK(tensor_dtype(x) == tensor_dtype(y));
    tensor_release(x);
    tensor_release(y);
  }

  /* The mode variant and its alias: the same tensors, each naming itself. */
  for (k = 0; k < 2; k++) {
    typedef tensor_status_t (*load_mode_fn)(const char *, tensor_map_mode_t,
                                            struct tensor_safetensors_t **);
    const load_mode_fn load_mode[2] = {tensor_load_safetensors_mode, tensor_safetensors_load_mode};
    const char *mode_names[2] = {"tensor_load_safetensors_mode", "tensor_safetensors_load_mode"};
    struct tensor_safetensors_t *g2 = NULL;
    struct tensor_t *x = NULL, *y = NULL;
    bool eq = false;
    CHECK_OK(load_mode[k](path, TENSOR_MAP_PRIVATE, &g2));
    CHECK(tensor_safetensors_count(g2) == 2);
    CHECK_OK(tensor_safetensors_at(g2, 0, &x));
    CHECK_OK(tensor_safetensors_at(f[0], 0, &y));
    CHECK_OK(tensor_equal(x, y, &eq));
    CHECK(eq);
    tensor_release(x);
    tensor_release(y);
    tensor_safetensors_release(g2);
    CHECK_STATUS(load_mode[k](path, (tensor_map_mode_t)99, &none), TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(message_names(mode_names[k]));
    CHECK_STATUS(load_mode[k](missing, TENSOR_MAP_READ_ONLY, &none), TENSOR_ERR_IO);
    CHECK(message_names(mode_names[k]));
  }

  for (k = 0; k < 2; k++) {
    CHECK_STATUS(load[k](NULL, &none), TENSOR_ERR_NULL_POINTER);
    CHECK(message_names(names[k]));
    CHECK_STATUS(load[k](path, NULL), TENSOR_ERR_NULL_POINTER);
    CHECK(message_names(names[k]));
    CHECK_STATUS(load[k](missing, &none), TENSOR_ERR_IO);
    CHECK(message_names(names[k]));
    CHECK_STATUS(load[k](garbage, &none), TENSOR_ERR_IO);
    CHECK(message_names(names[k]));
    CHECK(none == NULL);
    tensor_safetensors_release(f[k]);
    tensor_release(ts[k]);
  }
  unlink(path);
  unlink(garbage);
}

int main(void) {
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/libtensor-names-%ld", (long)getpid());
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return 1;
  test_fill();
  test_load_safetensors(dir);
  rmdir(dir);
  return harness_finish("test_names");
}
