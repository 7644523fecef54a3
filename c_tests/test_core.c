/* The core C API (docs/c-api.md, "Handles and ownership" to "Copies", and "Memory"),
 * exercised from C against the real libtensor.so: ownership and deleters, weak references,
 * every error code reachable with core functions, NULL handling, element access for all
 * dtypes, layout flags, memory statistics, custom allocators and tensor_format. Threads
 * are in test_threads.c. */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

static const tensor_device_t CPU = {1, 0};
static const tensor_device_t CUDA0 = {2, 0};

/* ---- deleters that record their calls --------------------------------------------- */

typedef struct {
  int calls;
  void *data;
} deleter_log;

static void log_deleter(void *data, void *ctx) {
  deleter_log *l = (deleter_log *)ctx;
  l->calls++;
  l->data = data;
}

static void free_deleter(void *data, void *ctx) {
  log_deleter(data, ctx);
  free(data);
}

/* ---- 1. lifetime ------------------------------------------------------------------- */

static void test_from_blob_lifetime(void) {
  deleter_log log = {0, NULL};
  float *buf = (float *)malloc(6 * sizeof(float));
  int64_t sizes[2] = {2, 3};
  int64_t flat[1] = {6};
  int64_t i5[1] = {5};
  tensor_t *t = NULL, *t2 = NULL, *r;
  storage_t *s;
  double v = 0;
  int i;
  for (i = 0; i < 6; i++) buf[i] = (float)i;

  CHECK_OK(tensor_from_blob(buf, sizes, NULL, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, &t));
  CHECK(tensor_data_ptr(t) == buf);
  CHECK(tensor_use_count(t) == 1);
  s = tensor_storage(t);
  CHECK(storage_use_count(s) == 1);
  CHECK(storage_nbytes(s) == 24); /* exactly the bytes the layout reaches */
  CHECK(!storage_is_resizable(s));

  /* retain/release of the same handle */
  r = tensor_retain(t);
  CHECK(r == t);
  CHECK(tensor_use_count(t) == 2);
  tensor_release(r);
  CHECK(tensor_use_count(t) == 1);
  CHECK(log.calls == 0);

  /* a second tensor on the same storage keeps the data alive */
  CHECK_OK(tensor_from_storage(s, 0, flat, NULL, 1, TENSOR_FLOAT32, &t2));
  CHECK(storage_use_count(s) == 2);
  CHECK(tensor_shares_storage(t, t2));
  tensor_release(t);
  CHECK(log.calls == 0);
  CHECK_OK(tensor_get_f64(t2, i5, 1, &v));
  CHECK(v == 5.0);
  CHECK(storage_use_count(tensor_storage(t2)) == 1);
  tensor_release(t2); /* last strong reference: the deleter runs now, once */
  CHECK(log.calls == 1);
  CHECK(log.data == buf);
}

static void test_storage_from_blob_lifetime(void) {
  deleter_log log = {0, NULL};
  char *buf = (char *)malloc(32);
  storage_t *s = NULL, *s2;
  tensor_t *t = NULL;
  int64_t sizes[1] = {8};
  CHECK_OK(storage_from_blob(buf, 32, CPU, free_deleter, &log, &s));
  CHECK(storage_data_ptr(s) == buf);
  CHECK(storage_nbytes(s) == 32);
  CHECK(storage_device(s).device_type == 1 && storage_device(s).device_id == 0);
  CHECK(!storage_is_resizable(s));
  CHECK_OK(tensor_from_storage(s, 0, sizes, NULL, 1, TENSOR_INT32, &t));
  s2 = storage_retain(s);
  CHECK(s2 == s);
  CHECK(storage_use_count(s) == 3);
  storage_release(s2);
  storage_release(s); /* the tensor still holds one */
  CHECK(log.calls == 0);
  tensor_release(t);
  CHECK(log.calls == 1);
  CHECK(log.data == buf);

  /* A NULL deleter: the caller keeps ownership of the memory. */
  {
    char stack_buf[16];
    storage_t *n = NULL;
    CHECK_OK(storage_from_blob(stack_buf, sizeof stack_buf, CPU, NULL, NULL, &n));
    storage_release(n);
  }
}

static void test_failed_calls_do_not_take_ownership(void) {
  deleter_log log = {0, NULL};
  float *buf = (float *)malloc(16 * sizeof(float));
  int64_t neg[2] = {2, -3};
  int64_t ok[2] = {4, 4};
  int64_t huge[2] = {INT64_C(1) << 62, 8};
  int64_t neg_strides[2] = {4, -1};
  int64_t strides_ok[2] = {4, 1};
  tensor_t *sentinel = (tensor_t *)&log; /* any non-NULL value: must stay untouched */
  tensor_t *t = sentinel;
  storage_t *ss = (storage_t *)&log, *s = ss;
  tensor_device_t bad_dev = {99, 0};
  tensor_device_t neg_id = {1, -1};

  CHECK_STATUS(tensor_from_blob(buf, neg, NULL, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_from_blob");
  CHECK_ERROR_HAS("-3");
  CHECK_STATUS(tensor_from_blob(buf, ok, NULL, 2, (tensor_dtype_t)42, CPU, free_deleter, &log, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("unknown dtype code 42");
  CHECK_STATUS(tensor_from_blob(buf, ok, NULL, 2, TENSOR_FLOAT32, bad_dev, free_deleter, &log, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_from_blob(buf, ok, NULL, 2, TENSOR_FLOAT32, neg_id, free_deleter, &log, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_from_blob(buf, ok, neg_strides, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_from_blob(buf, huge, NULL, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, &t),
               TENSOR_ERR_OVERFLOW);
  {
    /* stride 0: the extent is 4 bytes but numel (2^65) overflows: refused (the layout is
       checked before any storage is made), and the buffer stays the caller's */
    int64_t zero_strides[2] = {0, 0};
    CHECK_STATUS(tensor_from_blob(buf, huge, zero_strides, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, &t),
                 TENSOR_ERR_OVERFLOW);
    CHECK_ERROR_HAS("numel");
  }
  CHECK_STATUS(tensor_from_blob(buf, ok, NULL, 65, TENSOR_FLOAT32, CPU, free_deleter, &log, &t),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_from_blob(NULL, ok, NULL, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, &t),
               TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_from_blob(buf, NULL, NULL, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, &t),
               TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_from_blob(buf, ok, strides_ok, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, NULL),
               TENSOR_ERR_NULL_POINTER);
  CHECK(t == sentinel);

  CHECK_STATUS(storage_from_blob(buf, 64, bad_dev, free_deleter, &log, &s), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("storage_from_blob");
  CHECK_ERROR_HAS("99");
  CHECK_STATUS(storage_from_blob(NULL, 64, CPU, free_deleter, &log, &s), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(storage_from_blob(buf, 64, CPU, free_deleter, &log, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(storage_from_blob(buf, SIZE_MAX, CPU, free_deleter, &log, &s), TENSOR_ERR_OVERFLOW);
  CHECK(s == ss);

  CHECK(log.calls == 0);
  buf[15] = 1.0f; /* still ours: valgrind would flag a use after free */
  /* ownership is still ours: the successful call takes it, and frees it once */
  CHECK_OK(tensor_from_blob(buf, ok, strides_ok, 2, TENSOR_FLOAT32, CPU, free_deleter, &log, &t));
  tensor_release(t);
  CHECK(log.calls == 1);
}

/* ---- weak references ---------------------------------------------------------------- */

static void test_weak_references(void) {
  deleter_log log = {0, NULL};
  void *buf = malloc(40);
  storage_t *s = NULL, *locked;
  storage_weak_t *w = NULL, *w2 = NULL, *wsent = (storage_weak_t *)&log, *wout = wsent;
  tensor_t *t = NULL;
  int64_t sizes[1] = {10};

  CHECK_OK(storage_from_blob(buf, 40, CPU, free_deleter, &log, &s));
  CHECK(storage_use_count(s) == 1);
  CHECK(storage_weak_count(s) == 1); /* c10: weak refs + 1 while strong > 0 */
  CHECK_OK(storage_weak_new(s, &w));
  CHECK(storage_weak_count(s) == 2);
  CHECK(storage_use_count(s) == 1);
  CHECK_OK(storage_weak_new(s, &w2));
  CHECK(storage_weak_count(s) == 3);
  CHECK(!storage_weak_expired(w));

  locked = storage_weak_lock(w);
  CHECK(locked == s);
  CHECK(storage_use_count(s) == 2);
  CHECK(storage_weak_count(s) == 3);
  storage_release(locked);
  CHECK(storage_use_count(s) == 1);

  /* a tensor holds the storage strongly */
  CHECK_OK(tensor_from_storage(s, 0, sizes, NULL, 1, TENSOR_FLOAT32, &t));
  storage_release(s);
  CHECK(!storage_weak_expired(w));
  CHECK(log.calls == 0);
  CHECK(storage_use_count(tensor_storage(t)) == 1);
  storage_weak_release(w2);
  CHECK(storage_weak_count(tensor_storage(t)) == 2);

  tensor_release(t); /* strong 0: data freed while a weak reference remains */
  CHECK(log.calls == 1);
  CHECK(storage_weak_expired(w));
  CHECK(storage_weak_lock(w) == NULL);
  CHECK(storage_weak_lock(w) == NULL);
  storage_weak_release(w); /* frees the StorageImpl object; valgrind checks */
  CHECK(log.calls == 1);

  CHECK_STATUS(storage_weak_new(NULL, &wout), TENSOR_ERR_NULL_POINTER);
  CHECK(wout == wsent);
  CHECK(storage_weak_lock(NULL) == NULL);
  CHECK(storage_weak_expired(NULL));
  storage_weak_release(NULL);

  /* a library-allocated storage behaves the same */
  CHECK_OK(storage_new(16, NULL, &s));
  CHECK_STATUS(storage_weak_new(s, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_OK(storage_weak_new(s, &w));
  storage_release(s);
  CHECK(storage_weak_expired(w));
  CHECK(storage_weak_lock(w) == NULL);
  storage_weak_release(w);
}

/* ---- 2. errors ---------------------------------------------------------------------- */

static void test_status_strings(void) {
  static const tensor_status_t codes[] = {
      TENSOR_OK,          TENSOR_ERR_NULL_POINTER, TENSOR_ERR_INVALID_ARGUMENT, TENSOR_ERR_INDEX,
      TENSOR_ERR_SHAPE,   TENSOR_ERR_NOT_VIEWABLE, TENSOR_ERR_DTYPE,            TENSOR_ERR_DEVICE,
      TENSOR_ERR_OUT_OF_BOUNDS, TENSOR_ERR_OVERFLOW, TENSOR_ERR_OUT_OF_MEMORY,  TENSOR_ERR_OVERLAP,
      TENSOR_ERR_NOT_RESIZABLE, TENSOR_ERR_READ_ONLY, TENSOR_ERR_IO,
      TENSOR_ERR_INTERNAL};
  size_t n = sizeof codes / sizeof codes[0], i, j;
  const char *unknown = tensor_status_string((tensor_status_t)12345);
  CHECK(unknown != NULL);
  CHECK(tensor_status_string((tensor_status_t)-1) != NULL);
  CHECK(tensor_status_string((tensor_status_t)14) != NULL);
  for (i = 0; i < n; i++) {
    const char *s = tensor_status_string(codes[i]);
    CHECK(s != NULL && s[0] != '\0');
    CHECK(s != NULL && strcmp(s, unknown) != 0);
    for (j = 0; j < i; j++) CHECK(strcmp(s, tensor_status_string(codes[j])) != 0);
  }
}

static void test_error_codes(void) {
  int64_t sizes[2] = {2, 3};
  int64_t neg[2] = {2, -1};
  int64_t many[65];
  int64_t idx[2] = {2, 0};
  int64_t idx_ok[2] = {1, 2};
  int64_t huge[2] = {INT64_C(1) << 62, 4};
  int64_t huge_bytes[1] = {INT64_C(1) << 61}; /* numel fits, bytes (x8) do not */
  int64_t absurd[1] = {INT64_C(1) << 60};     /* 4 EiB of float32: fits int64, never allocatable */
  int64_t seven[1] = {7};
  int64_t six[1] = {6};
  tensor_t *t = NULL, *keep = NULL, *out;
  storage_t *s = NULL;
  int64_t v = 12345;
  double d = 0.5;
  int i;
  for (i = 0; i < 65; i++) many[i] = 1;

  CHECK_OK(tensor_zeros(sizes, 2, TENSOR_FLOAT32, &keep));
  out = keep; /* out-parameters must stay untouched on every failure below */

  /* NULL_POINTER */
  CHECK_STATUS(tensor_empty(NULL, 2, TENSOR_FLOAT32, &out), TENSOR_ERR_NULL_POINTER);
  CHECK_ERROR_HAS("tensor_empty: argument 'sizes' is NULL");
  CHECK_STATUS(tensor_empty(sizes, 2, TENSOR_FLOAT32, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_size(NULL, 0, &v), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_size(keep, 0, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_get_f64(keep, NULL, 2, &d), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_set_f64(NULL, idx_ok, 2, 1.0), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_memory_stats(NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(storage_resize(NULL, 8), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(storage_mark_read_only(NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_from_storage(NULL, 0, sizes, NULL, 2, TENSOR_FLOAT32, &out),
               TENSOR_ERR_NULL_POINTER);

  /* INVALID_ARGUMENT */
  CHECK_STATUS(tensor_empty(neg, 2, TENSOR_FLOAT32, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_empty");
  CHECK_ERROR_HAS("-1");
  CHECK_STATUS(tensor_zeros(many, 65, TENSOR_FLOAT32, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("65");
  CHECK_OK(tensor_zeros(many, 64, TENSOR_FLOAT32, &t)); /* 64 is the maximum, and allowed */
  CHECK(tensor_ndim(t) == 64 && tensor_numel(t) == 1);
  tensor_release(t);
  CHECK_STATUS(tensor_ones(sizes, -1, TENSOR_FLOAT32, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_full(sizes, 2, (tensor_dtype_t)8, 1.0, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_full: unknown dtype code 8");
  CHECK_STATUS(tensor_empty(sizes, 2, (tensor_dtype_t)-5, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(tensor_arange(-1, TENSOR_INT64, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK(!tensor_is_contiguous(keep, (tensor_memory_format_t)7));
  CHECK(!tensor_is_contiguous(keep, (tensor_memory_format_t)-1));
  CHECK(!tensor_is_contiguous(keep, TENSOR_PRESERVE_FORMAT));
  CHECK(tensor_is_contiguous(keep, TENSOR_CONTIGUOUS_FORMAT));
  CHECK_STATUS(tensor_get_f64(keep, idx_ok, -1, &d), TENSOR_ERR_INVALID_ARGUMENT);

  /* INDEX */
  CHECK_STATUS(tensor_size(keep, 2, &v), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("tensor_size: Dimension out of range (expected to be in range of [-2, 1], but got 2)");
  CHECK_STATUS(tensor_stride(keep, -3, &v), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("got -3");
  CHECK_STATUS(tensor_get_f64(keep, idx, 2, &d), TENSOR_ERR_INDEX);
  CHECK_ERROR_HAS("index 2 is out of bounds for dimension 0 with size 2");
  CHECK_STATUS(tensor_set_i64(keep, idx, 2, 1), TENSOR_ERR_INDEX);
  CHECK_STATUS(tensor_get_i64(keep, idx_ok, 1, &v), TENSOR_ERR_INDEX); /* wrong index count */
  CHECK_STATUS(tensor_element_offset(keep, idx, 2, &v), TENSOR_ERR_INDEX);

  /* OUT_OF_BOUNDS */
  CHECK_OK(storage_new(24, NULL, &s));
  CHECK_STATUS(tensor_from_storage(s, 0, seven, NULL, 1, TENSOR_FLOAT32, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_ERROR_HAS("tensor_from_storage");
  CHECK_ERROR_HAS("[7]");
  CHECK_ERROR_HAS("out of bounds for storage of size 24");
  CHECK_STATUS(tensor_from_storage(s, 1, six, NULL, 1, TENSOR_FLOAT32, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_STATUS(tensor_from_storage(s, 0, six, NULL, 1, TENSOR_FLOAT64, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_STATUS(tensor_from_storage(s, -1, six, NULL, 1, TENSOR_FLOAT32, &out), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_OK(tensor_from_storage(s, 0, six, NULL, 1, TENSOR_FLOAT32, &t)); /* exactly fits */
  /* the storage shrinks later: element access re-checks the bounds */
  CHECK_OK(storage_resize(s, 8));
  CHECK_STATUS(tensor_get_f64(t, six, 1, &d), TENSOR_ERR_INDEX); /* index 6 of size 6 */
  {
    int64_t i0[1] = {0};
    CHECK_STATUS(tensor_get_f64(t, i0, 1, &d), TENSOR_ERR_OUT_OF_BOUNDS);
    CHECK_ERROR_HAS("tensor_get_f64");
    CHECK_STATUS(tensor_set_f64(t, i0, 1, 1.0), TENSOR_ERR_OUT_OF_BOUNDS);
    CHECK_OK(storage_resize(s, 24));
    CHECK_OK(tensor_set_f64(t, i0, 1, 1.0));
  }
  tensor_release(t);
  storage_release(s);

  /* OVERFLOW */
  CHECK_STATUS(tensor_empty(huge, 2, TENSOR_UINT8, &out), TENSOR_ERR_OVERFLOW);
  CHECK_ERROR_HAS("overflow");
  CHECK_STATUS(tensor_zeros(huge_bytes, 1, TENSOR_FLOAT64, &out), TENSOR_ERR_OVERFLOW);
  {
    storage_t *s8 = NULL, *ssent = (storage_t *)&v, *sout = ssent;
    int64_t one[1] = {1};
    CHECK_OK(storage_new(8, NULL, &s8));
    CHECK_STATUS(tensor_from_storage(s8, INT64_MAX, one, NULL, 1, TENSOR_UINT8, &out), TENSOR_ERR_OVERFLOW);
    CHECK_STATUS(tensor_from_storage(s8, 0, huge, NULL, 2, TENSOR_UINT8, &out), TENSOR_ERR_OVERFLOW);
    storage_release(s8);
    CHECK_STATUS(storage_new(SIZE_MAX, NULL, &sout), TENSOR_ERR_OVERFLOW);
    CHECK(sout == ssent);
  }

  /* OUT_OF_MEMORY: an absurd size that does not overflow */
  CHECK_STATUS(tensor_empty(absurd, 1, TENSOR_FLOAT32, &out), TENSOR_ERR_OUT_OF_MEMORY);
  CHECK_ERROR_HAS("tensor_empty: failed to allocate 4611686018427387904 bytes");

  CHECK(out == keep);
  CHECK(v == 12345);
  CHECK(d == 0.5);
  tensor_release(keep);
}

static void test_not_resizable_read_only_device(void) {
  float buf[6] = {0, 1, 2, 3, 4, 5};
  int64_t sizes[2] = {2, 3};
  int64_t i12[2] = {1, 2};
  tensor_t *t = NULL, *g = NULL;
  storage_t *s = NULL;
  double d = -1;
  int64_t v = 0;
  char text[128];

  /* NOT_RESIZABLE */
  CHECK_OK(tensor_from_blob(buf, sizes, NULL, 2, TENSOR_FLOAT32, CPU, NULL, NULL, &t));
  CHECK_STATUS(storage_resize(tensor_storage(t), 48), TENSOR_ERR_NOT_RESIZABLE);
  CHECK_ERROR_HAS("storage_resize");
  CHECK(storage_nbytes(tensor_storage(t)) == 24);

  /* READ_ONLY */
  CHECK(!storage_is_read_only(tensor_storage(t)));
  CHECK_OK(tensor_set_f64(t, i12, 2, 7.0));
  CHECK(buf[5] == 7.0f);
  CHECK_OK(storage_mark_read_only(tensor_storage(t)));
  CHECK(storage_is_read_only(tensor_storage(t)));
  v = (int64_t)tensor_version(t);
  CHECK_STATUS(tensor_set_f64(t, i12, 2, 9.0), TENSOR_ERR_READ_ONLY);
  CHECK_ERROR_HAS("tensor_set_f64");
  CHECK_STATUS(tensor_set_i64(t, i12, 2, 9), TENSOR_ERR_READ_ONLY);
  CHECK(buf[5] == 7.0f);
  CHECK((int64_t)tensor_version(t) == v); /* a failed write does not bump */
  CHECK_OK(tensor_get_f64(t, i12, 2, &d)); /* reading is fine */
  CHECK(d == 7.0);
  tensor_release(t);

  CHECK_OK(storage_new(16, NULL, &s));
  CHECK_OK(storage_mark_read_only(s));
  CHECK_OK(storage_mark_read_only(s)); /* idempotent */
  CHECK_STATUS(storage_resize(s, 32), TENSOR_ERR_READ_ONLY);
  storage_release(s);

  /* DEVICE: metadata works on any device, element access needs host memory */
  CHECK_OK(tensor_from_blob(buf, sizes, NULL, 2, TENSOR_FLOAT32, CUDA0, NULL, NULL, &g));
  CHECK(tensor_device(g).device_type == 2 && tensor_device(g).device_id == 0);
  CHECK(tensor_numel(g) == 6);
  CHECK(tensor_data_ptr(g) == buf);
  CHECK(tensor_is_contiguous(g, TENSOR_CONTIGUOUS_FORMAT));
  CHECK_OK(tensor_size(g, -1, &v));
  CHECK(v == 3);
  d = -1;
  CHECK_STATUS(tensor_get_f64(g, i12, 2, &d), TENSOR_ERR_DEVICE);
  CHECK_ERROR_HAS("tensor_get_f64");
  CHECK_ERROR_HAS("device type 2");
  CHECK(d == -1);
  CHECK_STATUS(tensor_set_f64(g, i12, 2, 1.0), TENSOR_ERR_DEVICE);
  CHECK(tensor_format(g, text, sizeof text) > 0); /* prints without reading the data */
  CHECK(strstr(text, "tensor(") == text);
  tensor_release(g);
  CHECK(buf[5] == 7.0f);
}

/* ---- NULL handling ------------------------------------------------------------------ */

static void test_null_handles(void) {
  char text[8] = "xxxxxxx";
  tensor_t *t = NULL;
  CHECK(tensor_retain(NULL) == NULL);
  tensor_release(NULL);
  storage_release(NULL);
  storage_weak_release(NULL);
  CHECK(storage_retain(NULL) == NULL);
  CHECK(tensor_use_count(NULL) == 0);
  CHECK(storage_use_count(NULL) == 0);
  CHECK(storage_weak_count(NULL) == 0);
  CHECK(tensor_ndim(NULL) == 0);
  CHECK(tensor_sizes(NULL) == NULL);
  CHECK(tensor_strides(NULL) == NULL);
  CHECK(tensor_storage_offset(NULL) == 0);
  CHECK(tensor_numel(NULL) == 0);
  CHECK(tensor_itemsize(NULL) == 0);
  CHECK(tensor_nbytes(NULL) == 0);
  CHECK(tensor_device(NULL).device_type == 0);
  CHECK(tensor_data_ptr(NULL) == NULL);
  CHECK(tensor_storage(NULL) == NULL);
  CHECK(tensor_version(NULL) == 0);
  CHECK(!tensor_is_contiguous(NULL, TENSOR_CONTIGUOUS_FORMAT));
  CHECK(!tensor_is_non_overlapping_and_dense(NULL));
  CHECK(tensor_suggest_memory_format(NULL) == TENSOR_CONTIGUOUS_FORMAT);
  CHECK(storage_data_ptr(NULL) == NULL);
  CHECK(storage_nbytes(NULL) == 0);
  CHECK(storage_device(NULL).device_type == 0);
  CHECK(!storage_is_resizable(NULL));
  CHECK(!storage_is_read_only(NULL));
  CHECK(tensor_format(NULL, text, sizeof text) == 0);
  CHECK(text[0] == '\0');
  CHECK_OK(tensor_arange(3, TENSOR_INT64, &t));
  CHECK(!tensor_shares_storage(NULL, t));
  CHECK(!tensor_shares_storage(t, NULL));
  CHECK(tensor_shares_storage(t, t));
  tensor_release(t);
}

/* ---- 3 & 6. dtypes and element access ----------------------------------------------- */

typedef struct {
  tensor_dtype_t code;
  const char *name;
  size_t itemsize;
  int is_float;   /* keeps 2.5 exactly */
  int is_bool;
  int is_unsigned;
} dtype_info;

static const dtype_info DTYPES[15] = {
    {TENSOR_UINT8, "uint8", 1, 0, 0, 1},         {TENSOR_INT8, "int8", 1, 0, 0, 0},
    {TENSOR_INT16, "int16", 2, 0, 0, 0},         {TENSOR_INT32, "int32", 4, 0, 0, 0},
    {TENSOR_INT64, "int64", 8, 0, 0, 0},         {TENSOR_FLOAT16, "float16", 2, 1, 0, 0},
    {TENSOR_FLOAT32, "float32", 4, 1, 0, 0},     {TENSOR_FLOAT64, "float64", 8, 1, 0, 0},
    {TENSOR_COMPLEX64, "complex64", 8, 1, 0, 0}, {TENSOR_COMPLEX128, "complex128", 16, 1, 0, 0},
    {TENSOR_BOOL, "bool", 1, 0, 1, 0},           {TENSOR_BFLOAT16, "bfloat16", 2, 1, 0, 0},
    {TENSOR_UINT16, "uint16", 2, 0, 0, 1},       {TENSOR_UINT32, "uint32", 4, 0, 0, 1},
    {TENSOR_UINT64, "uint64", 8, 0, 0, 1}};

static void test_dtypes(void) {
  static const int32_t unknown[] = {8, 12, 13, 14, 16, 22, 30, 46, -1, 1000};
  int64_t sizes[2] = {2, 3};
  int64_t i12[2] = {1, 2}, i00[2] = {0, 0}, im1[2] = {-1, -1}, i4[1] = {4};
  size_t k;
  for (k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
    CHECK(tensor_dtype_itemsize((tensor_dtype_t)unknown[k]) == 0);
    CHECK(tensor_dtype_name((tensor_dtype_t)unknown[k]) == NULL);
  }
  for (k = 0; k < 15; k++) {
    const dtype_info *di = &DTYPES[k];
    tensor_t *t = NULL, *o = NULL, *a = NULL;
    double d = -100;
    int64_t v = -100;
    CHECK(tensor_dtype_itemsize(di->code) == di->itemsize);
    CHECK(tensor_dtype_name(di->code) != NULL && strcmp(tensor_dtype_name(di->code), di->name) == 0);

    CHECK_OK(tensor_zeros(sizes, 2, di->code, &t));
    CHECK(tensor_dtype(t) == di->code);
    CHECK(tensor_itemsize(t) == di->itemsize);
    CHECK(tensor_nbytes(t) == 6 * di->itemsize);
    CHECK(tensor_version(t) == 0);
    CHECK_OK(tensor_get_f64(t, i12, 2, &d));
    CHECK(d == 0.0);

    CHECK_OK(tensor_set_i64(t, i12, 2, 5));
    CHECK(tensor_version(t) == 1);
    CHECK_OK(tensor_get_i64(t, i12, 2, &v));
    CHECK(v == (di->is_bool ? 1 : 5));
    CHECK_OK(tensor_get_i64(t, im1, 2, &v)); /* negative indices wrap to the same element */
    CHECK(v == (di->is_bool ? 1 : 5));
    CHECK_OK(tensor_get_i64(t, i00, 2, &v)); /* the neighbours are untouched */
    CHECK(v == 0);

    /* float -> integer truncates toward zero, as torch.tensor(2.5).to(dtype) */
    CHECK_OK(tensor_set_f64(t, i00, 2, 2.5));
    CHECK(tensor_version(t) == 2);
    CHECK_OK(tensor_get_f64(t, i00, 2, &d));
    CHECK(d == (di->is_float ? 2.5 : (di->is_bool ? 1.0 : 2.0)));
    CHECK_OK(tensor_get_f64(t, i12, 2, &d));
    CHECK(d == (di->is_bool ? 1.0 : 5.0));
    CHECK(tensor_version(t) == 2); /* reads do not bump */

    if (di->is_unsigned && di->itemsize == 1) {
      CHECK_OK(tensor_set_i64(t, i00, 2, -1)); /* wraps modulo 2^8 like torch */
      CHECK_OK(tensor_get_i64(t, i00, 2, &v));
      CHECK(v == 255);
    }
    if (!di->is_bool && !di->is_unsigned) {
      CHECK_OK(tensor_set_f64(t, i00, 2, -2.75));
      CHECK_OK(tensor_get_f64(t, i00, 2, &d));
      CHECK(d == (di->is_float ? -2.75 : -2.0));
    }

    CHECK_OK(tensor_ones(sizes, 2, di->code, &o));
    CHECK_OK(tensor_get_i64(o, i12, 2, &v));
    CHECK(v == 1);
    CHECK_OK(tensor_arange(6, di->is_bool ? TENSOR_INT32 : di->code, &a));
    CHECK_OK(tensor_get_i64(a, i4, 1, &v));
    CHECK(v == 4);
    tensor_release(a);
    tensor_release(o);
    tensor_release(t);
  }
}

static void test_element_bits(void) {
  /* Independent of our own readers: look at the bytes the setters wrote. */
  int64_t one[1] = {1};
  int64_t i0[1] = {0};
  tensor_t *t = NULL;
  uint16_t bits;
  CHECK_OK(tensor_zeros(one, 1, TENSOR_FLOAT32, &t));
  CHECK_OK(tensor_set_f64(t, i0, 1, 1.5));
  CHECK(*(float *)tensor_data_ptr(t) == 1.5f);
  tensor_release(t);
  CHECK_OK(tensor_zeros(one, 1, TENSOR_FLOAT16, &t));
  CHECK_OK(tensor_set_f64(t, i0, 1, 1.5));
  memcpy(&bits, tensor_data_ptr(t), 2);
  CHECK(bits == 0x3E00); /* torch.tensor(1.5, dtype=torch.float16).view(torch.int16) == 15872 */
  tensor_release(t);
  CHECK_OK(tensor_zeros(one, 1, TENSOR_BFLOAT16, &t));
  CHECK_OK(tensor_set_f64(t, i0, 1, 1.5));
  memcpy(&bits, tensor_data_ptr(t), 2);
  CHECK(bits == 0x3FC0); /* 16320 */
  tensor_release(t);
  CHECK_OK(tensor_full(one, 1, TENSOR_COMPLEX64, 3.0, &t));
  CHECK(((float *)tensor_data_ptr(t))[0] == 3.0f && ((float *)tensor_data_ptr(t))[1] == 0.0f);
  tensor_release(t);
  CHECK_OK(tensor_full(one, 1, TENSOR_INT32, -7.9, &t));
  CHECK(*(int32_t *)tensor_data_ptr(t) == -7);
  tensor_release(t);
  /* 0-dim tensors: sizes may be NULL, one element, indexed with n == 0 */
  CHECK_OK(tensor_full(NULL, 0, TENSOR_FLOAT64, 3.5, &t));
  CHECK(tensor_ndim(t) == 0 && tensor_numel(t) == 1);
  {
    double d = 0;
    int64_t v = 0;
    CHECK_OK(tensor_get_f64(t, NULL, 0, &d));
    CHECK(d == 3.5);
    CHECK_STATUS(tensor_size(t, 0, &v), TENSOR_ERR_INDEX);
  }
  tensor_release(t);
}

/* ---- 6. layout accessors and flags --------------------------------------------------- */

static int same(const int64_t *a, const int64_t *b, int n) {
  int i;
  for (i = 0; i < n; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

static void test_layouts(void) {
  int64_t nchw[4] = {2, 3, 4, 5};
  int64_t contig[4] = {60, 20, 5, 1};
  int64_t cl[4] = {60, 1, 15, 3};
  int64_t ncdhw[5] = {2, 3, 4, 5, 6};
  int64_t cl3d[5] = {360, 1, 90, 18, 3};
  int64_t exp_sizes[2] = {3, 4}, exp_strides[2] = {0, 1};
  int64_t tr_sizes[2] = {3, 2}, tr_strides[2] = {1, 3};
  int64_t crop_sizes[2] = {2, 2}, crop_strides[2] = {3, 1};
  int64_t idx[2], off = -1, v = 0;
  tensor_t *t = NULL, *c = NULL, *c3 = NULL, *e = NULL, *tr = NULL, *crop = NULL, *base = NULL;
  double d = 0;

  CHECK_OK(tensor_empty(nchw, 4, TENSOR_FLOAT32, &t));
  CHECK(tensor_ndim(t) == 4);
  CHECK(same(tensor_sizes(t), nchw, 4));
  CHECK(same(tensor_strides(t), contig, 4));
  CHECK(tensor_is_contiguous(t, TENSOR_CONTIGUOUS_FORMAT));
  CHECK(!tensor_is_contiguous(t, TENSOR_CHANNELS_LAST));
  CHECK(tensor_is_non_overlapping_and_dense(t));
  CHECK(tensor_suggest_memory_format(t) == TENSOR_CONTIGUOUS_FORMAT);
  CHECK(((uintptr_t)tensor_data_ptr(t) % 64) == 0);
  CHECK_OK(tensor_stride(t, 1, &v));
  CHECK(v == 20);

  CHECK_OK(tensor_empty_strided(nchw, cl, 4, TENSOR_FLOAT32, &c));
  CHECK(same(tensor_strides(c), cl, 4));
  CHECK(!tensor_is_contiguous(c, TENSOR_CONTIGUOUS_FORMAT));
  CHECK(tensor_is_contiguous(c, TENSOR_CHANNELS_LAST));
  CHECK(!tensor_is_contiguous(c, TENSOR_CHANNELS_LAST_3D));
  CHECK(tensor_is_non_overlapping_and_dense(c));
  CHECK(tensor_suggest_memory_format(c) == TENSOR_CHANNELS_LAST);
  CHECK(storage_nbytes(tensor_storage(c)) == 120 * 4);

  CHECK_OK(tensor_empty_strided(ncdhw, cl3d, 5, TENSOR_UINT8, &c3));
  CHECK(tensor_is_contiguous(c3, TENSOR_CHANNELS_LAST_3D));
  CHECK(!tensor_is_contiguous(c3, TENSOR_CONTIGUOUS_FORMAT));
  CHECK(tensor_suggest_memory_format(c3) == TENSOR_CHANNELS_LAST_3D);

  /* expanded (stride 0): storage holds 4 floats, the tensor shows 12 */
  CHECK_OK(tensor_empty_strided(exp_sizes, exp_strides, 2, TENSOR_FLOAT32, &e));
  CHECK(storage_nbytes(tensor_storage(e)) == 16);
  {
    /* the bytes a layout needs: what empty_strided allocated, plus the offset; 0 with a
       size-0 dim; refused for bad values */
    size_t nb = 1;
    int64_t zero_sizes[2] = {3, 0}, neg[2] = {-1, 2}, huge[2] = {INT64_MAX / 2, 4}, st[2] = {4, 1};
    CHECK_OK(tensor_storage_nbytes_needed(exp_sizes, exp_strides, 2, 0, TENSOR_FLOAT32, &nb));
    CHECK(nb == 16);
    CHECK_OK(tensor_storage_nbytes_needed(nchw, cl, 4, 0, TENSOR_FLOAT32, &nb));
    CHECK(nb == storage_nbytes(tensor_storage(c)));
    CHECK_OK(tensor_storage_nbytes_needed(exp_sizes, exp_strides, 2, 5, TENSOR_FLOAT64, &nb));
    CHECK(nb == (5 + 4) * 8);
    CHECK_OK(tensor_storage_nbytes_needed(zero_sizes, st, 2, 7, TENSOR_FLOAT32, &nb));
    CHECK(nb == 0);
    CHECK_OK(tensor_storage_nbytes_needed(NULL, NULL, 0, 2, TENSOR_INT16, &nb));
    CHECK(nb == 6); /* a 0-dim tensor at offset 2: one element */
    nb = 99;
    CHECK(tensor_storage_nbytes_needed(neg, st, 2, 0, TENSOR_FLOAT32, &nb) == TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(tensor_storage_nbytes_needed(exp_sizes, exp_strides, 2, -1, TENSOR_FLOAT32, &nb) ==
          TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(tensor_storage_nbytes_needed(exp_sizes, exp_strides, 2, 0, 99, &nb) == TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(tensor_storage_nbytes_needed(huge, st, 2, 0, TENSOR_FLOAT32, &nb) == TENSOR_ERR_OVERFLOW);
    CHECK(strstr(tensor_last_error(), "tensor_storage_nbytes_needed") != NULL);
    CHECK(tensor_storage_nbytes_needed(exp_sizes, exp_strides, 2, 0, TENSOR_FLOAT32, NULL) ==
          TENSOR_ERR_NULL_POINTER);
    CHECK(nb == 99); /* untouched on failure */
  }
  {
    /* format strides: as the tensors above were made; c10's rules for size-0/1 dims */
    int64_t st[5] = {-7, -7, -7, -7, -7}, z[4] = {0, 2, 0, 3}, one[3] = {4, 1, 5}, five[5] = {2, 3, 4, 5, 6};
    CHECK_OK(tensor_format_strides(nchw, 4, TENSOR_CHANNELS_LAST, st));
    CHECK(same(st, cl, 4));
    CHECK_OK(tensor_format_strides(nchw, 4, TENSOR_CONTIGUOUS_FORMAT, st));
    CHECK(same(st, contig, 4));
    CHECK_OK(tensor_format_strides(z, 4, TENSOR_CHANNELS_LAST, st));
    CHECK(st[0] == 0 && st[1] == 1 && st[2] == 6 && st[3] == 2); /* torch: (0, 1, 6, 2) */
    CHECK_OK(tensor_format_strides(one, 3, TENSOR_CONTIGUOUS_FORMAT, st));
    CHECK(st[0] == 5 && st[1] == 5 && st[2] == 1);
    CHECK_OK(tensor_format_strides(five, 5, TENSOR_CHANNELS_LAST_3D, st));
    CHECK(st[0] == 360 && st[1] == 1 && st[2] == 90 && st[3] == 18 && st[4] == 3);
    CHECK_OK(tensor_format_strides(NULL, 0, TENSOR_CONTIGUOUS_FORMAT, NULL));
    st[0] = -7;
    CHECK(tensor_format_strides(one, 3, TENSOR_CHANNELS_LAST, st) == TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(tensor_format_strides(nchw, 4, TENSOR_PRESERVE_FORMAT, st) == TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(tensor_format_strides(nchw, 4, 42, st) == TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(tensor_format_strides(nchw, 4, TENSOR_CONTIGUOUS_FORMAT, NULL) == TENSOR_ERR_NULL_POINTER);
    CHECK(strstr(tensor_last_error(), "tensor_format_strides") != NULL);
    CHECK(st[0] == -7); /* untouched on failure */
  }
  {
    /* PyTorch's dim wrapping: negative dims from the end, a 0-dim tensor as one dim */
    int64_t w = -1;
    CHECK_OK(tensor_wrap_dim(-1, 4, &w));
    CHECK(w == 3);
    CHECK_OK(tensor_wrap_dim(2, 4, &w));
    CHECK(w == 2);
    CHECK_OK(tensor_wrap_dim(-1, 0, &w));
    CHECK(w == 0);
    w = 9;
    CHECK(tensor_wrap_dim(4, 4, &w) == TENSOR_ERR_INDEX);
    CHECK(strstr(tensor_last_error(), "Dimension out of range") != NULL);
    CHECK(tensor_wrap_dim(-5, 4, &w) == TENSOR_ERR_INDEX);
    CHECK(tensor_wrap_dim(1, 0, &w) == TENSOR_ERR_INDEX);
    CHECK(tensor_wrap_dim(0, 65, &w) == TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(tensor_wrap_dim(0, 1, NULL) == TENSOR_ERR_NULL_POINTER);
    CHECK(w == 9);
  }
  CHECK(tensor_numel(e) == 12);
  CHECK(!tensor_is_contiguous(e, TENSOR_CONTIGUOUS_FORMAT));
  CHECK(!tensor_is_non_overlapping_and_dense(e));
  /* one element written through an expanded tensor shows in every row (as x[1, 2] = 5 in
     PyTorch, which accepts single-element writes into an expanded tensor) */
  idx[0] = 1;
  idx[1] = 2;
  CHECK_OK(tensor_set_f64(e, idx, 2, 5.0));
  idx[0] = 0;
  CHECK_OK(tensor_get_f64(e, idx, 2, &d));
  CHECK(d == 5.0);
  CHECK_OK(tensor_element_offset(e, idx, 2, &off));
  CHECK(off == 2);

  /* views built with tensor_from_storage on one base */
  CHECK_OK(tensor_arange(6, TENSOR_FLOAT32, &base));
  CHECK_OK(tensor_from_storage(tensor_storage(base), 0, tr_sizes, tr_strides, 2, TENSOR_FLOAT32, &tr));
  CHECK(!tensor_is_contiguous(tr, TENSOR_CONTIGUOUS_FORMAT));
  CHECK(tensor_is_non_overlapping_and_dense(tr)); /* a transpose is dense */
  idx[0] = 2;
  idx[1] = 1;
  CHECK_OK(tensor_get_f64(tr, idx, 2, &d));
  CHECK(d == 5.0);
  CHECK_OK(tensor_from_storage(tensor_storage(base), 1, crop_sizes, crop_strides, 2, TENSOR_FLOAT32,
                               &crop));
  CHECK(tensor_storage_offset(crop) == 1);
  CHECK((char *)tensor_data_ptr(crop) == (char *)tensor_data_ptr(base) + 4);
  CHECK(!tensor_is_contiguous(crop, TENSOR_CONTIGUOUS_FORMAT));
  CHECK(!tensor_is_non_overlapping_and_dense(crop));
  idx[0] = 1;
  idx[1] = 1;
  CHECK_OK(tensor_element_offset(crop, idx, 2, &off));
  CHECK(off == 5);
  CHECK(tensor_shares_storage(crop, base) && tensor_shares_storage(tr, crop));
  CHECK(!tensor_shares_storage(crop, t));

  tensor_release(crop);
  tensor_release(tr);
  tensor_release(base);
  tensor_release(e);
  tensor_release(c3);
  tensor_release(c);
  tensor_release(t);
}

/* ---- 9. memory statistics ----------------------------------------------------------- */

static void test_memory_stats(void) {
  int64_t ten[1] = {10};
  int64_t mib[1] = {1 << 20};
  int64_t zero[1] = {0};
  tensor_memory_stats_t s0, s1, s2, partial;
  tensor_t *t = NULL, *big = NULL, *ext = NULL, *z = NULL;
  char blob[16];

  s0 = harness_memory_stats();
  CHECK(s0.struct_size == sizeof s0);
  CHECK(s0.peak_bytes >= s0.live_bytes);
  CHECK_OK(tensor_empty(ten, 1, TENSOR_FLOAT32, &t));
  s1 = harness_memory_stats();
  CHECK(s1.live_storages == s0.live_storages + 1);
  CHECK(s1.live_bytes == s0.live_bytes + 40);
  CHECK(s1.total_allocations == s0.total_allocations + 1);
  CHECK(s1.live_external_storages == s0.live_external_storages);

  CHECK_OK(tensor_from_blob(blob, ten, NULL, 1, TENSOR_UINT8, CPU, NULL, NULL, &ext));
  s2 = harness_memory_stats();
  CHECK(s2.live_storages == s1.live_storages + 1);
  CHECK(s2.live_external_storages == s1.live_external_storages + 1);
  CHECK(s2.live_bytes == s1.live_bytes);                 /* wrapped memory is not ours */
  CHECK(s2.total_allocations == s1.total_allocations);
  tensor_release(ext);
  s2 = harness_memory_stats();
  CHECK(s2.live_external_storages == s1.live_external_storages);
  CHECK(s2.live_storages == s1.live_storages);

  CHECK_OK(tensor_zeros(zero, 1, TENSOR_FLOAT32, &z)); /* 0 bytes: a storage, no allocation */
  s2 = harness_memory_stats();
  CHECK(s2.live_storages == s1.live_storages + 1);
  CHECK(s2.total_allocations == s1.total_allocations);
  tensor_release(z);

  CHECK_OK(tensor_empty(mib, 1, TENSOR_FLOAT32, &big)); /* 4 MiB */
  tensor_release(big);
  tensor_release(t);
  s2 = harness_memory_stats();
  CHECK(s2.live_storages == s0.live_storages);
  CHECK(s2.live_bytes == s0.live_bytes);
  CHECK(s2.total_allocations == s0.total_allocations + 2);
  CHECK(s2.peak_bytes >= s0.live_bytes + 40 + (UINT64_C(4) << 20));

  /* an older, smaller struct: only the fields that fit are written */
  memset(&partial, 0xAB, sizeof partial);
  partial.struct_size = sizeof(size_t) + sizeof(uint64_t); /* struct_size + live_storages */
  CHECK_OK(tensor_memory_stats(&partial));
  CHECK(partial.live_storages == s0.live_storages);
  CHECK(partial.live_bytes == UINT64_C(0xABABABABABABABAB));
  CHECK(partial.live_external_storages == UINT64_C(0xABABABABABABABAB));
  /* a newer, bigger struct: the fields this library knows are written, the rest kept */
  {
    struct {
      tensor_memory_stats_t known;
      uint64_t future_field;
    } bigger;
    memset(&bigger, 0xCD, sizeof bigger);
    bigger.known.struct_size = sizeof bigger;
    CHECK_OK(tensor_memory_stats(&bigger.known));
    CHECK(bigger.known.struct_size == sizeof bigger);
    CHECK(bigger.known.live_external_storages == s0.live_external_storages);
    CHECK(bigger.future_field == UINT64_C(0xCDCDCDCDCDCDCDCD));
  }
  partial.struct_size = 4;
  CHECK_STATUS(tensor_memory_stats(&partial), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("struct_size");
}

/* ---- 4. custom allocators ------------------------------------------------------------ */

typedef struct {
  int allocs, frees, fail;
  size_t live;
  size_t last_alignment;
} alloc_log;

static void *counting_allocate(void *ctx, size_t nbytes, size_t alignment) {
  alloc_log *l = (alloc_log *)ctx;
  void *p = NULL;
  l->last_alignment = alignment;
  if (l->fail) return NULL;
  if (posix_memalign(&p, alignment, nbytes) != 0) return NULL;
  l->allocs++;
  l->live += nbytes;
  return p;
}

static void counting_deallocate(void *ctx, void *ptr, size_t nbytes) {
  alloc_log *l = (alloc_log *)ctx;
  l->frees++;
  l->live -= nbytes;
  free(ptr);
}

static void test_allocators(void) {
  alloc_log log = {0, 0, 0, 0, 0};
  tensor_allocator_t a;
  tensor_allocator_t half_null;
  storage_t *s = NULL, *keep = NULL, *sent = (storage_t *)&log, *out = sent;
  tensor_t *t = NULL, *tout = NULL;
  int64_t sizes[2] = {4, 4};
  unsigned char *p;
  int i, prefix_ok = 1;

  a.ctx = &log;
  a.allocate = counting_allocate;
  a.deallocate = counting_deallocate;
  half_null = a;
  half_null.deallocate = NULL;

  CHECK_OK(storage_new(100, &a, &s));
  CHECK(log.allocs == 1 && log.live == 100);
  CHECK(log.last_alignment == 64);
  CHECK(storage_is_resizable(s));
  CHECK(storage_nbytes(s) == 100);
  p = (unsigned char *)storage_data_ptr(s);
  for (i = 0; i < 100; i++) p[i] = (unsigned char)i;
  CHECK_OK(storage_resize(s, 200)); /* grows: the first 100 bytes are kept */
  CHECK(log.allocs == 2 && log.frees == 1 && log.live == 200);
  CHECK(storage_nbytes(s) == 200);
  p = (unsigned char *)storage_data_ptr(s);
  for (i = 0; i < 100; i++) prefix_ok &= p[i] == (unsigned char)i;
  CHECK(prefix_ok);
  CHECK_OK(storage_resize(s, 10)); /* shrinks: the first 10 are kept */
  p = (unsigned char *)storage_data_ptr(s);
  prefix_ok = 1;
  for (i = 0; i < 10; i++) prefix_ok &= p[i] == (unsigned char)i;
  CHECK(prefix_ok);
  CHECK(log.allocs == 3 && log.frees == 2 && log.live == 10);
  CHECK_OK(storage_resize(s, 0)); /* 0 bytes: no block at all */
  CHECK(storage_data_ptr(s) == NULL && storage_nbytes(s) == 0);
  CHECK(log.allocs == 3 && log.frees == 3 && log.live == 0);
  storage_release(s);
  CHECK(log.allocs == log.frees);

  /* a failing allocator: OUT_OF_MEMORY, nothing leaks, out untouched */
  log.fail = 1;
  CHECK_STATUS(storage_new(64, &a, &out), TENSOR_ERR_OUT_OF_MEMORY);
  CHECK_ERROR_HAS("storage_new: failed to allocate 64 bytes");
  CHECK(out == sent);
  CHECK_STATUS(storage_new(64, &half_null, &out), TENSOR_ERR_NULL_POINTER);
  CHECK(out == sent);
  CHECK_STATUS(tensor_set_default_allocator(&half_null), TENSOR_ERR_NULL_POINTER);

  /* the default allocator: every later creation uses it */
  CHECK_OK(tensor_set_default_allocator(&a));
  tout = (tensor_t *)sent;
  CHECK_STATUS(tensor_zeros(sizes, 2, TENSOR_FLOAT32, &tout), TENSOR_ERR_OUT_OF_MEMORY);
  CHECK(tout == (tensor_t *)sent);
  log.fail = 0;
  CHECK_OK(tensor_zeros(sizes, 2, TENSOR_FLOAT32, &t));
  CHECK(log.allocs == 4 && log.live == 64);
  CHECK_OK(storage_new(8, NULL, &keep));
  CHECK(log.allocs == 5 && log.live == 72);
  CHECK_OK(tensor_set_default_allocator(NULL)); /* back to the built-in allocator */
  CHECK_OK(storage_new(8, NULL, &s));
  CHECK(log.allocs == 5);
  storage_release(s);
  /* storages keep the allocator that made them */
  CHECK_OK(storage_resize(keep, 16));
  CHECK(log.allocs == 6 && log.live == 80);
  storage_release(keep);
  tensor_release(t);
  CHECK(log.allocs == log.frees && log.live == 0);
}

/* ---- 6. tensor_format ------------------------------------------------------------------ */

static void check_format(const tensor_t *t, const char *want) {
  char buf[256];
  size_t n = tensor_format(t, buf, sizeof buf);
  CHECK(n == strlen(want));
  CHECK(strcmp(buf, want) == 0);
  if (strcmp(buf, want) != 0) fprintf(stderr, "  got:  %s\n  want: %s\n", buf, want);
}

static void test_format(void) {
  /* expected strings are repr() of the same tensors in PyTorch 2.x */
  static const char *want = "tensor([[0., 1., 2.],\n        [3., 4., 5.]])";
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s3[1] = {3}, s2[1] = {2}, s0[1] = {0}, s25[1] = {25};
  int64_t i0[1] = {0}, i1[1] = {1}, i2[1] = {2};
  tensor_t *a = NULL, *m = NULL, *t = NULL;
  char small[10];
  size_t n;

  CHECK_OK(tensor_arange(6, TENSOR_FLOAT32, &a));
  CHECK_OK(tensor_from_storage(tensor_storage(a), 0, s23, NULL, 2, TENSOR_FLOAT32, &m));
  check_format(m, want);

  /* snprintf-style: truncated, NUL-terminated, returns the full length */
  memset(small, 'z', sizeof small);
  n = tensor_format(m, small, sizeof small);
  CHECK(n == strlen(want));
  CHECK(strcmp(small, "tensor([[") == 0);
  CHECK(tensor_format(m, NULL, 0) == strlen(want));
  small[0] = 'q';
  CHECK(tensor_format(m, small, 1) == strlen(want));
  CHECK(small[0] == '\0');
  tensor_release(m);
  tensor_release(a);

  CHECK_OK(tensor_arange(6, TENSOR_INT32, &a));
  CHECK_OK(tensor_from_storage(tensor_storage(a), 0, s23, NULL, 2, TENSOR_INT32, &m));
  check_format(m, "tensor([[0, 1, 2],\n        [3, 4, 5]], dtype=torch.int32)");
  tensor_release(m);
  tensor_release(a);

  CHECK_OK(tensor_arange(6, TENSOR_UINT8, &a));
  CHECK_OK(tensor_from_storage(tensor_storage(a), 0, s32, NULL, 2, TENSOR_UINT8, &m));
  check_format(m, "tensor([[0, 1],\n        [2, 3],\n        [4, 5]], dtype=torch.uint8)");
  tensor_release(m);
  tensor_release(a);

  CHECK_OK(tensor_full(NULL, 0, TENSOR_FLOAT32, 3.5, &t));
  check_format(t, "tensor(3.5000)");
  tensor_release(t);

  CHECK_OK(tensor_zeros(s3, 1, TENSOR_FLOAT32, &t));
  CHECK_OK(tensor_set_f64(t, i0, 1, 0.5));
  CHECK_OK(tensor_set_f64(t, i1, 1, 1.25));
  CHECK_OK(tensor_set_f64(t, i2, 1, -2.0));
  check_format(t, "tensor([ 0.5000,  1.2500, -2.0000])");
  tensor_release(t);

  CHECK_OK(tensor_zeros(s2, 1, TENSOR_BOOL, &t));
  CHECK_OK(tensor_set_i64(t, i0, 1, 1));
  check_format(t, "tensor([ True, False])");
  tensor_release(t);

  CHECK_OK(tensor_arange(4, TENSOR_FLOAT64, &t));
  check_format(t, "tensor([0., 1., 2., 3.], dtype=torch.float64)");
  tensor_release(t);

  CHECK_OK(tensor_empty(s0, 1, TENSOR_FLOAT32, &t));
  check_format(t, "tensor([])");
  tensor_release(t);
  CHECK_OK(tensor_empty(s0, 1, TENSOR_INT64, &t));
  check_format(t, "tensor([], dtype=torch.int64)");
  tensor_release(t);

  /* the column width comes from the nonzero finite values only */
  CHECK_OK(tensor_zeros(s2, 1, TENSOR_FLOAT32, &t));
  CHECK_OK(tensor_set_f64(t, i0, 1, -0.0));
  CHECK_OK(tensor_set_f64(t, i1, 1, 1.0));
  check_format(t, "tensor([-0., 1.])");
  tensor_release(t);

  /* complex: separate formats for the real and imaginary parts */
  CHECK_OK(tensor_zeros(s2, 1, TENSOR_COMPLEX64, &t));
  {
    float *p = (float *)tensor_data_ptr(t);
    p[0] = 1.0f, p[1] = 2.0f, p[2] = -0.0f, p[3] = -0.5f;
  }
  check_format(t, "tensor([1.+2.0000j, -0.-0.5000j])");
  tensor_release(t);

  /* a suffix that would pass 80 columns goes on its own line */
  CHECK_OK(tensor_arange(125, TENSOR_UINT8, &a));
  CHECK_OK(tensor_from_storage(tensor_storage(a), 100, s25, NULL, 1, TENSOR_UINT8, &m));
  check_format(m,
               "tensor([100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113,\n"
               "        114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124],\n"
               "       dtype=torch.uint8)");
  tensor_release(m);
  tensor_release(a);
}

/* Freed big blocks (>= 2 MiB) are cached for reuse, not counted as live, and handed back to
 * the system by tensor_empty_cache. */
static void test_empty_cache(void) {
  int64_t four_mib[1] = {1 << 20};
  tensor_t *t = NULL, *u = NULL;
  tensor_memory_stats_t s0, s1;
  (void)tensor_empty_cache();
  CHECK(tensor_empty_cache() == 0); /* nothing cached any more */
  s0 = harness_memory_stats();
  CHECK_OK(tensor_empty(four_mib, 1, TENSOR_FLOAT32, &t));
  tensor_release(t);
  s1 = harness_memory_stats();
  CHECK(s1.live_bytes == s0.live_bytes); /* a cached block is not live */
  CHECK_OK(tensor_empty(four_mib, 1, TENSOR_FLOAT32, &u)); /* reuses the cached block */
  tensor_release(u);
  CHECK(tensor_empty_cache() >= (uint64_t)4 << 20);
  CHECK(tensor_empty_cache() == 0);
}

int main(void) {
  tensor_memory_stats_t before, after;
  CHECK(strcmp(tensor_last_error(), "") == 0); /* no failed call yet */
  before = harness_memory_stats();
  test_from_blob_lifetime();
  test_storage_from_blob_lifetime();
  test_failed_calls_do_not_take_ownership();
  test_weak_references();
  test_status_strings();
  test_error_codes();
  test_not_resizable_read_only_device();
  test_null_handles();
  test_dtypes();
  test_element_bits();
  test_layouts();
  test_memory_stats();
  test_allocators();
  test_format();
  test_empty_cache();
  after = harness_memory_stats();
  /* everything created above was released */
  CHECK(after.live_storages == before.live_storages);
  CHECK(after.live_bytes == before.live_bytes);
  CHECK(after.live_external_storages == before.live_external_storages);
  return harness_finish("c_core");
}
