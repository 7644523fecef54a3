/* .safetensors map modes and metadata: tensor_load_safetensors_mode's three modes
 * (READ_ONLY refuses writes; PRIVATE writes stay in the process and never reach the file;
 * SHARED writes reach the file), the __metadata__ pairs read back sorted by key, saved
 * byte-for-byte reproducibly whatever the input order, carried over by a re-save, and
 * every refusal: unknown mode, duplicate / NULL / non-UTF-8 keys and values, a metadata
 * value that is not a string, a key or value with a NUL byte, a misaligned tensor mapped
 * shared, a header over the format's size limit. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "files_util.h"

#define N 1024

static unsigned char file_a[1 << 14], file_b[1 << 14];

/* A .safetensors file with this JSON header (padded to 8 bytes) and data. */
static void write_st(const char *path, const char *json, const unsigned char *data, size_t n) {
  unsigned char bytes[512];
  size_t len = strlen(json), hl = (len + 7) / 8 * 8, i;
  CHECK(8 + hl + n <= sizeof bytes);
  memset(bytes, ' ', sizeof bytes);
  for (i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(bytes + 8, json, len);
  if (n) memcpy(bytes + 8 + hl, data, n);
  write_file(path, bytes, 8 + hl + n);
}

/* Tensor "w" (float32 0..N-1) and "b" (int32 0..3) saved to `path` with the pairs. */
static void save_two(const char *path, const char *const *keys, const char *const *values, size_t n_meta) {
  tensor_t *w = NULL, *b = NULL;
  const char *names[2] = {"w", "b"};
  const tensor_t *ts[2];
  CHECK_OK(tensor_arange(N, TENSOR_FLOAT32, &w));
  CHECK_OK(tensor_arange(4, TENSOR_INT32, &b));
  ts[0] = w;
  ts[1] = b;
  CHECK_OK(tensor_save_safetensors_metadata(path, names, ts, 2, keys, values, n_meta));
  tensor_release(w);
  tensor_release(b);
}

static const float *floats(const tensor_t *t) { return (const float *)tensor_data_ptr(t); }

/* ---- 1. metadata: read back sorted, reproducible saves, a re-save keeps it ----------- */

static void test_metadata_round_trip(void) {
  const char *keys[3] = {"note", "format", ""};
  const char *values[3] = {"h\xc3\xa9llo, \"quoted\"\n", "pt", "empty key"};
  const char *keys2[3] = {"format", "", "note"};
  const char *values2[3] = {"pt", "empty key", "h\xc3\xa9llo, \"quoted\"\n"};
  char a[128], b[128], c[128];
  tensor_safetensors_t *f = NULL, *g = NULL;
  size_t na, nb, i;
  path_of(a, sizeof a, "meta_a.safetensors");
  path_of(b, sizeof b, "meta_b.safetensors");
  path_of(c, sizeof c, "meta_c.safetensors");
  save_two(a, keys, values, 3);
  save_two(b, keys2, values2, 3);
  /* Same pairs in another order: the same bytes. */
  na = read_file(a, file_a, sizeof file_a);
  nb = read_file(b, file_b, sizeof file_b);
  CHECK(na > 8 * N / 2 && na == nb && memcmp(file_a, file_b, na) == 0);

  CHECK_OK(tensor_load_safetensors(a, &f));
  CHECK(tensor_safetensors_metadata_count(f) == 3);
  /* Sorted by key: "", "format", "note". */
  CHECK(strcmp(tensor_safetensors_metadata_key(f, 0), "") == 0);
  CHECK(strcmp(tensor_safetensors_metadata_value(f, 0), "empty key") == 0);
  CHECK(strcmp(tensor_safetensors_metadata_key(f, 1), "format") == 0);
  CHECK(strcmp(tensor_safetensors_metadata_value(f, 1), "pt") == 0);
  CHECK(strcmp(tensor_safetensors_metadata_key(f, 2), "note") == 0);
  CHECK(strcmp(tensor_safetensors_metadata_value(f, 2), values[0]) == 0);
  CHECK(tensor_safetensors_metadata_key(f, 3) == NULL);
  CHECK(tensor_safetensors_metadata_value(f, 3) == NULL);
  CHECK(tensor_safetensors_metadata_key(f, (size_t)-1) == NULL);
  CHECK(tensor_safetensors_metadata_count(NULL) == 0);
  CHECK(tensor_safetensors_metadata_key(NULL, 0) == NULL);
  CHECK(tensor_safetensors_metadata_value(NULL, 0) == NULL);

  /* Re-save every tensor with the loaded pairs: the same file again. */
  {
    size_t n = tensor_safetensors_count(f), m = tensor_safetensors_metadata_count(f);
    const char *names[2], *k[3], *v[3];
    const tensor_t *ts[2];
    tensor_t *owned[2] = {NULL, NULL};
    CHECK(n == 2 && m == 3);
    for (i = 0; i < n && i < 2; i++) {
      names[i] = tensor_safetensors_name(f, i);
      CHECK_OK(tensor_safetensors_at(f, i, &owned[i]));
      ts[i] = owned[i];
    }
    for (i = 0; i < m && i < 3; i++) {
      k[i] = tensor_safetensors_metadata_key(f, i);
      v[i] = tensor_safetensors_metadata_value(f, i);
    }
    CHECK_OK(tensor_save_safetensors_metadata(c, names, ts, 2, k, v, 3));
    nb = read_file(c, file_b, sizeof file_b);
    CHECK(na == nb && memcmp(file_a, file_b, na) == 0);
    tensor_release(owned[0]);
    tensor_release(owned[1]);
  }
  tensor_safetensors_release(f);

  /* No pairs: no __metadata__, byte-for-byte what tensor_save_safetensors writes. */
  save_two(b, NULL, NULL, 0);
  {
    tensor_t *w = NULL, *bb = NULL;
    const char *names[2] = {"w", "b"};
    const tensor_t *ts[2];
    CHECK_OK(tensor_arange(N, TENSOR_FLOAT32, &w));
    CHECK_OK(tensor_arange(4, TENSOR_INT32, &bb));
    ts[0] = w;
    ts[1] = bb;
    CHECK_OK(tensor_save_safetensors(c, names, ts, 2));
    tensor_release(w);
    tensor_release(bb);
  }
  na = read_file(b, file_a, sizeof file_a);
  nb = read_file(c, file_b, sizeof file_b);
  CHECK(na == nb && memcmp(file_a, file_b, na) == 0);
  CHECK(memmem(file_a, na, "__metadata__", 12) == NULL);
  CHECK_OK(tensor_load_safetensors(b, &g));
  CHECK(tensor_safetensors_metadata_count(g) == 0);
  CHECK(tensor_safetensors_metadata_key(g, 0) == NULL);
  tensor_safetensors_release(g);
  unlink(a);
  unlink(b);
  unlink(c);
}

/* ---- 2. the three map modes ------------------------------------------------------- */

static void test_modes(void) {
  const char *keys[1] = {"format"}, *values[1] = {"pt"};
  char p[128];
  tensor_safetensors_t *f = NULL;
  tensor_t *w = NULL, *w2 = NULL;
  size_t n0, n1;
  int i, ok;
  path_of(p, sizeof p, "modes.safetensors");
  save_two(p, keys, values, 1);
  n0 = read_file(p, file_a, sizeof file_a);

  /* READ_ONLY (also tensor_load_safetensors): writes refused, the storage read-only. */
  CHECK_OK(tensor_load_safetensors_mode(p, TENSOR_MAP_READ_ONLY, &f));
  CHECK_OK(tensor_safetensors_get(f, "w", &w));
  CHECK(storage_is_read_only(tensor_storage(w)) && storage_is_mapped(tensor_storage(w)));
  CHECK_STATUS(tensor_fill_f64_(w, 1.0), TENSOR_ERR_READ_ONLY);
  CHECK(tensor_safetensors_metadata_count(f) == 1);
  tensor_release(w);
  tensor_safetensors_release(f);

  /* PRIVATE: writable, the writes seen in this process only; the file keeps its bytes. */
  CHECK_OK(tensor_load_safetensors_mode(p, TENSOR_MAP_PRIVATE, &f));
  CHECK_OK(tensor_safetensors_get(f, "w", &w));
  CHECK(!storage_is_read_only(tensor_storage(w)) && storage_is_mapped(tensor_storage(w)));
  CHECK(strcmp(tensor_safetensors_metadata_value(f, 0), "pt") == 0);
  tensor_safetensors_release(f);
  CHECK_OK(tensor_fill_f64_(w, 7.0));
  ok = 1;
  for (i = 0; i < N; i++) ok &= floats(w)[i] == 7.0f;
  CHECK(ok);
  /* A second mapping (read-only) of the file still sees 0..N-1. */
  CHECK_OK(tensor_load_safetensors(p, &f));
  CHECK_OK(tensor_safetensors_get(f, "w", &w2));
  ok = 1;
  for (i = 0; i < N; i++) ok &= floats(w2)[i] == (float)i;
  CHECK(ok);
  tensor_release(w2);
  tensor_safetensors_release(f);
  tensor_release(w);
  n1 = read_file(p, file_b, sizeof file_b);
  CHECK(n0 == n1 && memcmp(file_a, file_b, n0) == 0);

  /* SHARED: writes reach the file (seen by a later load and in its bytes). */
  CHECK_OK(tensor_load_safetensors_mode(p, TENSOR_MAP_SHARED, &f));
  CHECK_OK(tensor_safetensors_get(f, "w", &w));
  tensor_safetensors_release(f);
  CHECK(!storage_is_read_only(tensor_storage(w)));
  CHECK_OK(tensor_fill_f64_(w, 5.0));
  tensor_release(w);
  CHECK_OK(tensor_load_safetensors(p, &f));
  CHECK_OK(tensor_safetensors_get(f, "w", &w2));
  ok = 1;
  for (i = 0; i < N; i++) ok &= floats(w2)[i] == 5.0f;
  CHECK(ok);
  tensor_release(w2);
  tensor_safetensors_release(f);
  n1 = read_file(p, file_b, sizeof file_b);
  CHECK(n0 == n1 && memcmp(file_a, file_b, n0) != 0);
  {
    /* The file now holds N floats 5.0 (w's bytes, wherever the writer placed them). */
    float five[N];
    for (i = 0; i < N; i++) five[i] = 5.0f;
    CHECK(memmem(file_b, n1, five, sizeof five) != NULL);
  }

  f = NULL;
  CHECK_STATUS(tensor_load_safetensors_mode(p, (tensor_map_mode_t)3, &f), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_load_safetensors_mode");
  CHECK_ERROR_HAS("unknown map mode 3");
  CHECK(f == NULL);
  CHECK_STATUS(tensor_load_safetensors_mode(NULL, TENSOR_MAP_PRIVATE, &f), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_load_safetensors_mode(p, TENSOR_MAP_PRIVATE, NULL), TENSOR_ERR_NULL_POINTER);
  unlink(p);
}

/* ---- 3. refusals ------------------------------------------------------------------ */

static void test_refusals(void) {
  static const unsigned char zeros[8] = {0};
  char p[128], out[128];
  tensor_safetensors_t *f = NULL;
  const char *k2[2] = {"a", "a"}, *v2[2] = {"1", "2"};
  const char *kn[2] = {"a", NULL}, *bad_utf8[1] = {"\xff\xfe"}, *k1[1] = {"a"};
  path_of(p, sizeof p, "crafted.safetensors");
  path_of(out, sizeof out, "out.safetensors");

  /* Saving: duplicate key, NULL arrays and entries, non-UTF-8. */
  save_two(out, k1, v2, 1);
  CHECK_STATUS(tensor_save_safetensors_metadata(out, NULL, NULL, 0, k2, v2, 2), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_save_safetensors_metadata");
  CHECK_ERROR_HAS("metadata key 'a' given twice");
  CHECK_STATUS(tensor_save_safetensors_metadata(out, NULL, NULL, 0, NULL, v2, 1), TENSOR_ERR_NULL_POINTER);
  CHECK_ERROR_HAS("'keys'");
  CHECK_STATUS(tensor_save_safetensors_metadata(out, NULL, NULL, 0, k1, NULL, 1), TENSOR_ERR_NULL_POINTER);
  CHECK_ERROR_HAS("'values'");
  CHECK_STATUS(tensor_save_safetensors_metadata(out, NULL, NULL, 0, kn, v2, 2), TENSOR_ERR_NULL_POINTER);
  CHECK_ERROR_HAS("keys[1] is NULL");
  CHECK_STATUS(tensor_save_safetensors_metadata(out, NULL, NULL, 0, bad_utf8, v2, 1),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("keys[0] is not valid UTF-8");
  CHECK_STATUS(tensor_save_safetensors_metadata(out, NULL, NULL, 0, k1, bad_utf8, 1),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("values[0] is not valid UTF-8");
  /* Every refusal left the earlier file in place. */
  CHECK_OK(tensor_load_safetensors(out, &f));
  CHECK(tensor_safetensors_count(f) == 2 && tensor_safetensors_metadata_count(f) == 1);
  tensor_safetensors_release(f);
  f = NULL;
  /* Only metadata, no tensor: a valid file. */
  CHECK_OK(tensor_save_safetensors_metadata(out, NULL, NULL, 0, k1, v2, 1));
  CHECK_OK(tensor_load_safetensors(out, &f));
  CHECK(tensor_safetensors_count(f) == 0 && tensor_safetensors_metadata_count(f) == 1);
  tensor_safetensors_release(f);
  f = NULL;

  /* Loading: a value that is not a string, a NUL in a key or a value. */
  write_st(p, "{\"__metadata__\":{\"a\":1},\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
           zeros, 1);
  CHECK_STATUS(tensor_load_safetensors(p, &f), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("crafted.safetensors");
  CHECK_ERROR_HAS("expected a string");
  CHECK(f == NULL);
  write_st(p, "{\"__metadata__\":{\"a\\u0000b\":\"v\"},\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
           zeros, 1);
  CHECK_STATUS(tensor_load_safetensors_mode(p, TENSOR_MAP_PRIVATE, &f), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("metadata key");
  CHECK_ERROR_HAS("NUL byte at byte 1");
  write_st(p, "{\"__metadata__\":{\"k\":\"xy\\u0000\"},\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
           zeros, 1);
  CHECK_STATUS(tensor_load_safetensors(p, &f), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("value of metadata key 'k'");
  CHECK_ERROR_HAS("NUL byte at byte 2");
  CHECK(f == NULL);

  /* A misaligned float32 ("b" at data byte 1) loads as a copy: fine read-only or
   * private, refused shared (its writes could not reach the file). */
  write_st(p,
           "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
           "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1,5]}}",
           zeros, 5);
  CHECK_OK(tensor_load_safetensors_mode(p, TENSOR_MAP_PRIVATE, &f));
  tensor_safetensors_release(f);
  f = NULL;
  CHECK_STATUS(tensor_load_safetensors_mode(p, TENSOR_MAP_SHARED, &f), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("the misaligned tensor 'b'");
  CHECK_ERROR_HAS("shared");
  CHECK(f == NULL);
  unlink(p);
  unlink(out);
}

/* ---- 4. a header the format's readers refuse is never written ------------------------ */

/* The format's reference implementation (the safetensors crate, whose reader and writer the
 * Python package runs) refuses a header over 100,000,000 bytes. A save whose header would
 * be longer (metadata, or tensor names) is refused before anything is written: the old
 * file stays byte for byte, and no temporary file is left (main's rmdir finds the
 * directory empty). */
static void test_header_too_large(void) {
  const size_t big = 100000001; /* one string alone is over the limit */
  const char *k[1] = {"big"}, *v[1];
  const char *names[1];
  const tensor_t *ts[1];
  tensor_t *t = NULL;
  char out[128];
  char *huge = malloc(big + 1);
  size_t na, nb;
  CHECK(huge != NULL);
  if (!huge) return;
  memset(huge, 'a', big);
  huge[big] = '\0';
  path_of(out, sizeof out, "kept.safetensors");
  save_two(out, k, k, 1);
  na = read_file(out, file_a, sizeof file_a);
  CHECK(na > 0 && na < sizeof file_a);

  v[0] = huge;
  CHECK_STATUS(tensor_save_safetensors_metadata(out, NULL, NULL, 0, k, v, 1), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_save_safetensors_metadata");
  CHECK_ERROR_HAS("kept.safetensors");
  CHECK_ERROR_HAS("over 100000000");
  nb = read_file(out, file_b, sizeof file_b);
  CHECK(na == nb && memcmp(file_a, file_b, na) == 0);

  CHECK_OK(tensor_arange(3, TENSOR_UINT8, &t));
  names[0] = huge;
  ts[0] = t;
  CHECK_STATUS(tensor_save_safetensors(out, names, ts, 1), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_save_safetensors");
  CHECK_ERROR_HAS("over 100000000");
  nb = read_file(out, file_b, sizeof file_b);
  CHECK(na == nb && memcmp(file_a, file_b, na) == 0);
  tensor_release(t);
  free(huge);
  unlink(out);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/libtensor-stmodes-%ld", (long)getpid());
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return 1;
  test_metadata_round_trip();
  test_modes();
  test_refusals();
  test_header_too_large();
  CHECK(rmdir(dir) == 0);
  CHECK(harness_memory_stats().live_storages == 0);
  return harness_finish("test_safetensors_modes");
}
