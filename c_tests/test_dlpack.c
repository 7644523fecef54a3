/* DLPack import and export (docs/c-api.md, "Interop") from C against the real libtensor.so.
 * The DLPack 1.x structs come from dlpack_abi.h, included before tensor.h. */
#include "dlpack_abi.h"

#include "harness.h"

static double get2(const tensor_t *t, int64_t i, int64_t j) {
  int64_t ix[2];
  double v = -12345.0;
  ix[0] = i;
  ix[1] = j;
  CHECK_OK(tensor_get_f64(t, ix, 2, &v));
  return v;
}

/* ---- a producer: malloc'd managed tensors whose deleter frees everything and counts ---- */

typedef struct {
  int calls;
} counter;

typedef struct {
  DLManagedTensorVersioned m;
  int64_t shape[3];
  int64_t strides[3];
  counter *count;
  double *data;
} producer_v;

static void producer_v_deleter(DLManagedTensorVersioned *self) {
  producer_v *p = (producer_v *)self->manager_ctx;
  p->count->calls++;
  free(p->data);
  free(p);
}

/* A 2x3 float64 tensor holding 0..5 (row-major), or transposed strides when `transposed`. */
static producer_v *make_producer_v(counter *c, int transposed) {
  producer_v *p = (producer_v *)calloc(1, sizeof *p);
  int i;
  p->data = (double *)malloc(6 * sizeof(double));
  for (i = 0; i < 6; i++) p->data[i] = (double)i;
  p->count = c;
  p->shape[0] = 2;
  p->shape[1] = 3;
  p->strides[0] = transposed ? 1 : 3;
  p->strides[1] = transposed ? 2 : 1;
  p->m.version.major = 1;
  p->m.version.minor = 0;
  p->m.manager_ctx = p;
  p->m.deleter = producer_v_deleter;
  p->m.flags = 0;
  p->m.dl_tensor.data = p->data;
  p->m.dl_tensor.device.device_type = 1;
  p->m.dl_tensor.device.device_id = 0;
  p->m.dl_tensor.ndim = 2;
  p->m.dl_tensor.dtype.code = 2;
  p->m.dl_tensor.dtype.bits = 64;
  p->m.dl_tensor.dtype.lanes = 1;
  p->m.dl_tensor.shape = p->shape;
  p->m.dl_tensor.strides = p->strides;
  p->m.dl_tensor.byte_offset = 0;
  return p;
}

typedef struct {
  DLManagedTensor m;
  int64_t shape[1];
  counter *count;
  unsigned char bytes[32];
} producer_u;

static void producer_u_deleter(DLManagedTensor *self) {
  producer_u *p = (producer_u *)self->manager_ctx;
  p->count->calls++;
  free(p);
}

/* ---- export ---------------------------------------------------------------------------- */

static void test_export_versioned(void) {
  tensor_t *base = NULL, *t = NULL;
  DLManagedTensorVersioned *m = NULL;
  int64_t sizes[2] = {3, 4}, strides[2] = {1, 3};
  tensor_memory_stats_t before = harness_memory_stats(), during;
  const float *p;
  uint64_t uses;

  CHECK_OK(tensor_arange(20, TENSOR_FLOAT32, &base));
  /* A transposed view starting at element 2: t[i][j] = 2 + i + 3j. */
  CHECK_OK(tensor_as_strided(base, sizes, strides, 2, 2, &t));
  tensor_release(base);
  uses = tensor_use_count(t);
  CHECK_OK(tensor_to_dlpack(t, &m));
  CHECK(m != NULL);
  CHECK(tensor_use_count(t) == uses + 1); /* the managed tensor holds one reference */
  CHECK(m->version.major == 1);
  CHECK(m->flags == 0);
  CHECK(m->deleter != NULL);
  CHECK(m->dl_tensor.data == tensor_data_ptr(t)); /* first element; byte_offset 0 */
  CHECK(m->dl_tensor.byte_offset == 0);
  CHECK(m->dl_tensor.ndim == 2);
  CHECK(m->dl_tensor.shape[0] == 3 && m->dl_tensor.shape[1] == 4);
  CHECK(m->dl_tensor.strides[0] == 1 && m->dl_tensor.strides[1] == 3);
  CHECK(m->dl_tensor.dtype.code == 2 && m->dl_tensor.dtype.bits == 32 &&
        m->dl_tensor.dtype.lanes == 1);
  CHECK(m->dl_tensor.device.device_type == 1 && m->dl_tensor.device.device_id == 0);

  /* The consumer's view outlives the caller's handle until the deleter runs. */
  tensor_release(t);
  p = (const float *)m->dl_tensor.data;
  CHECK(p[0] == 2.0f);                                       /* [0][0] */
  CHECK(p[2 * m->dl_tensor.strides[0] + 3 * m->dl_tensor.strides[1]] == 13.0f); /* [2][3] */
  during = harness_memory_stats();
  CHECK(during.live_storages == before.live_storages + 1);
  m->deleter(m);
  CHECK(harness_memory_stats().live_storages == before.live_storages); /* exactly the reference it took */
  CHECK(harness_memory_stats().live_bytes == before.live_bytes);
}

static void test_export_dtypes(void) {
  static const struct {
    tensor_dtype_t dtype;
    uint8_t code, bits;
  } table[15] = {
      {TENSOR_UINT8, 1, 8},      {TENSOR_INT8, 0, 8},     {TENSOR_INT16, 0, 16},
      {TENSOR_INT32, 0, 32},     {TENSOR_INT64, 0, 64},   {TENSOR_FLOAT16, 2, 16},
      {TENSOR_FLOAT32, 2, 32},   {TENSOR_FLOAT64, 2, 64}, {TENSOR_COMPLEX64, 5, 64},
      {TENSOR_COMPLEX128, 5, 128}, {TENSOR_BOOL, 6, 8},   {TENSOR_BFLOAT16, 4, 16},
      {TENSOR_UINT16, 1, 16},    {TENSOR_UINT32, 1, 32},  {TENSOR_UINT64, 1, 64},
  };
  int i;
  int64_t sizes[1] = {2};
  for (i = 0; i < 15; i++) {
    tensor_t *t = NULL, *back = NULL;
    DLManagedTensor *m = NULL;
    CHECK_OK(tensor_zeros(sizes, 1, table[i].dtype, &t));
    CHECK_OK(tensor_to_dlpack_unversioned(t, &m));
    CHECK(m->dl_tensor.dtype.code == table[i].code);
    CHECK(m->dl_tensor.dtype.bits == table[i].bits);
    CHECK(m->dl_tensor.dtype.lanes == 1);
    CHECK_OK(tensor_from_dlpack_unversioned(m, &back)); /* and back: same dtype */
    CHECK(tensor_dtype(back) == table[i].dtype);
    CHECK(tensor_data_ptr(back) == tensor_data_ptr(t));
    tensor_release(back); /* runs the export's deleter */
    CHECK(tensor_use_count(t) == 1);
    tensor_release(t);
  }
}

static void test_export_read_only_and_nulls(void) {
  tensor_t *t = NULL;
  DLManagedTensorVersioned *m = NULL;
  DLManagedTensor *u = NULL;
  int64_t sizes[1] = {4};
  CHECK_OK(tensor_zeros(sizes, 1, TENSOR_INT32, &t));
  CHECK_STATUS(tensor_to_dlpack(NULL, &m), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_to_dlpack(t, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_to_dlpack_unversioned(NULL, &u), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_to_dlpack_unversioned(t, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK(m == NULL && u == NULL);
  CHECK(tensor_use_count(t) == 1);
  CHECK_OK(storage_mark_read_only(tensor_storage(t)));
  CHECK_OK(tensor_to_dlpack(t, &m));
  CHECK((m->flags & FLAG_READ_ONLY) != 0);
  m->deleter(m);
  CHECK_STATUS(tensor_to_dlpack_unversioned(t, &u), TENSOR_ERR_READ_ONLY);
  CHECK_ERROR_HAS("read-only");
  CHECK(u == NULL);
  CHECK(tensor_use_count(t) == 1);
  tensor_release(t);
}

/* ---- import ---------------------------------------------------------------------------- */

static void test_import_versioned_deleter_once(void) {
  counter c = {0};
  producer_v *p = make_producer_v(&c, 0);
  tensor_t *t = NULL, *tt = NULL;
  tensor_memory_stats_t before = harness_memory_stats();
  CHECK_OK(tensor_from_dlpack(&p->m, &t));
  CHECK(tensor_data_ptr(t) == p->data);
  CHECK(tensor_ndim(t) == 2 && tensor_strides(t)[0] == 3 && tensor_strides(t)[1] == 1);
  CHECK(get2(t, 1, 2) == 5.0);
  CHECK(storage_nbytes(tensor_storage(t)) == 48);
  CHECK(!storage_is_read_only(tensor_storage(t)));
  CHECK(harness_memory_stats().live_external_storages == before.live_external_storages + 1);
  CHECK_OK(tensor_transpose_2d(t, &tt));
  tensor_release(t);
  CHECK(c.calls == 0); /* the view keeps the storage */
  CHECK(get2(tt, 2, 1) == 5.0);
  tensor_release(tt);
  CHECK(c.calls == 1); /* once, at the last reference */
  CHECK(harness_memory_stats().live_external_storages == before.live_external_storages);
}

static void test_import_read_only_and_null_strides(void) {
  counter c = {0};
  producer_v *p = make_producer_v(&c, 1);
  tensor_t *t = NULL;
  int64_t ix[2] = {0, 0};
  p->m.flags = FLAG_READ_ONLY | FLAG_IS_COPIED;
  CHECK_OK(tensor_from_dlpack(&p->m, &t));
  CHECK(storage_is_read_only(tensor_storage(t)));
  CHECK_STATUS(tensor_set_f64(t, ix, 2, 7.0), TENSOR_ERR_READ_ONLY);
  CHECK(get2(t, 1, 0) == 1.0 && get2(t, 0, 2) == 4.0); /* strides {1, 2} */
  tensor_release(t);
  CHECK(c.calls == 1);

  p = make_producer_v(&c, 0);
  p->m.dl_tensor.strides = NULL; /* compact row-major */
  CHECK_OK(tensor_from_dlpack(&p->m, &t));
  CHECK(tensor_strides(t)[0] == 3 && tensor_strides(t)[1] == 1);
  CHECK(!storage_is_read_only(tensor_storage(t)));
  CHECK_OK(tensor_set_f64(t, ix, 2, 7.0));
  CHECK(p->data[0] == 7.0); /* zero-copy */
  tensor_release(t);
  CHECK(c.calls == 2);
}

static void test_import_unversioned_byte_offset(void) {
  counter c = {0};
  producer_u *p = (producer_u *)calloc(1, sizeof *p);
  tensor_t *t = NULL;
  int64_t ix[1] = {1}, v = 0;
  int16_t want;
  unsigned char *at = p->bytes + 5 + 2; /* element 1 */
  p->count = &c;
  p->shape[0] = 3;
  p->m.manager_ctx = p;
  p->m.deleter = producer_u_deleter;
  p->m.dl_tensor.data = p->bytes;
  p->m.dl_tensor.device.device_type = 1;
  p->m.dl_tensor.ndim = 1;
  p->m.dl_tensor.dtype.code = 0; /* int16 */
  p->m.dl_tensor.dtype.bits = 16;
  p->m.dl_tensor.dtype.lanes = 1;
  p->m.dl_tensor.shape = p->shape;
  p->m.dl_tensor.strides = NULL;
  p->m.dl_tensor.byte_offset = 5; /* 2 whole elements + 1 byte */
  want = (int16_t)-1234;
  memcpy(at, &want, 2);
  CHECK_OK(tensor_from_dlpack_unversioned(&p->m, &t));
  CHECK(tensor_storage_offset(t) == 2);
  CHECK(tensor_data_ptr(t) == (void *)(p->bytes + 5));
  CHECK(storage_data_ptr(tensor_storage(t)) == (void *)(p->bytes + 1));
  CHECK(storage_nbytes(tensor_storage(t)) == 10); /* (2 + 3) elements of 2 bytes */
  CHECK_OK(tensor_get_i64(t, ix, 1, &v));
  CHECK(v == -1234);
  tensor_release(t);
  CHECK(c.calls == 1);
}

static void test_import_refusals(void) {
  counter c = {0};
  producer_v *p = make_producer_v(&c, 0);
  tensor_t *t = NULL;
  int64_t neg[2] = {3, -2}, big_shape[65];
  int i;
  DLManagedTensorVersioned saved = p->m;
  for (i = 0; i < 65; i++) big_shape[i] = 1;

  CHECK_STATUS(tensor_from_dlpack(NULL, &t), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_from_dlpack_unversioned(NULL, &t), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(tensor_from_dlpack(&p->m, NULL), TENSOR_ERR_NULL_POINTER);

  p->m.dl_tensor.strides = neg;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("stride -2");
  p->m = saved;
  p->m.dl_tensor.dtype.lanes = 4;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("lanes 4");
  p->m = saved;
  p->m.dl_tensor.dtype.code = 3; /* opaque handle */
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("code 3, bits 64");
  p->m = saved;
  p->m.dl_tensor.dtype.code = 8; /* float8 e4m3 */
  p->m.dl_tensor.dtype.bits = 8;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("code 8, bits 8");
  p->m = saved;
  p->m.dl_tensor.dtype.bits = 80;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("bits 80");
  p->m = saved;
  p->m.dl_tensor.ndim = 65;
  p->m.dl_tensor.shape = big_shape;
  p->m.dl_tensor.strides = big_shape;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("65");
  p->m = saved;
  p->m.dl_tensor.device.device_type = 6; /* not a DLPack device type */
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("device_type 6");
  p->m = saved;
  p->m.version.major = 2;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("version 2.0");
  p->m = saved;
  p->m.dl_tensor.shape = NULL;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_NULL_POINTER);
  p->m = saved;
  p->m.dl_tensor.data = NULL;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_NULL_POINTER);
  p->m = saved;
  p->m.dl_tensor.byte_offset = UINT64_MAX;
  CHECK_STATUS(tensor_from_dlpack(&p->m, &t), TENSOR_ERR_OVERFLOW);
  CHECK_ERROR_HAS("byte_offset");
  CHECK(t == NULL);   /* out untouched */
  CHECK(c.calls == 0); /* no refusal calls the producer's deleter ... */

  p->m = saved; /* ... so the caller still owns it, and can hand it over for real */
  CHECK_OK(tensor_from_dlpack(&p->m, &t));
  tensor_release(t);
  CHECK(c.calls == 1);
}

static void test_round_trip_shares_bytes(void) {
  tensor_t *a = NULL, *b = NULL, *c = NULL;
  DLManagedTensorVersioned *m = NULL;
  int64_t sizes[2] = {4, 5};
  int64_t ix[2] = {3, 1};
  CHECK_OK(tensor_zeros(sizes, 2, TENSOR_FLOAT64, &a));
  CHECK_OK(tensor_transpose_2d(a, &b));
  CHECK_OK(tensor_to_dlpack(b, &m));
  tensor_release(b);
  CHECK_OK(tensor_from_dlpack(m, &c));
  CHECK(tensor_sizes(c)[0] == 5 && tensor_sizes(c)[1] == 4);
  CHECK(tensor_strides(c)[0] == 1 && tensor_strides(c)[1] == 5);
  CHECK_OK(tensor_set_f64(c, ix, 2, 2.5)); /* c[3][1] is a[1][3] */
  CHECK(get2(a, 1, 3) == 2.5);
  CHECK(tensor_use_count(a) == 1);
  tensor_release(a);
  CHECK(get2(c, 3, 1) == 2.5); /* c keeps the bytes alive */
  tensor_release(c);
}

int main(void) {
  tensor_memory_stats_t start = harness_memory_stats();
  test_export_versioned();
  test_export_dtypes();
  test_export_read_only_and_nulls();
  test_import_versioned_deleter_once();
  test_import_read_only_and_null_strides();
  test_import_unversioned_byte_offset();
  test_import_refusals();
  test_round_trip_shares_bytes();
  CHECK(harness_memory_stats().live_storages == start.live_storages);
  CHECK(harness_memory_stats().live_external_storages == start.live_external_storages);
  return harness_finish("c_dlpack");
}
