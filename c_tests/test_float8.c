/* The float8 and float4 dtypes from C (docs/c-api.md sections 4 and 11): codes, names and
 * item sizes; conversions to and from the older dtypes (PyTorch's rounding and overflow
 * rules, checked exhaustively against torch by tests/float8_torch.py; a few anchors here);
 * float4_e2m1fn_x2 as bit copies only; DLPack 1.3 export and import of the new type codes,
 * the padded-sub-byte refusal and the kDLTrn device tag. */
#include "dlpack_abi.h"

#include <math.h>
#include <string.h>

#include "harness.h"

typedef struct {
  tensor_dtype_t code;
  int32_t c10;
  const char *name;
  uint8_t dl_code, dl_bits;
  uint16_t dl_lanes;
} narrow_info;

static const narrow_info NARROW[6] = {
    {TENSOR_FLOAT8_E5M2, 23, "float8_e5m2", kDLFloat8_e5m2, 8, 1},
    {TENSOR_FLOAT8_E4M3FN, 24, "float8_e4m3fn", kDLFloat8_e4m3fn, 8, 1},
    {TENSOR_FLOAT8_E5M2FNUZ, 25, "float8_e5m2fnuz", kDLFloat8_e5m2fnuz, 8, 1},
    {TENSOR_FLOAT8_E4M3FNUZ, 26, "float8_e4m3fnuz", kDLFloat8_e4m3fnuz, 8, 1},
    {TENSOR_FLOAT8_E8M0FNU, 44, "float8_e8m0fnu", kDLFloat8_e8m0fnu, 8, 1},
    {TENSOR_FLOAT4_E2M1FN_X2, 45, "float4_e2m1fn_x2", kDLFloat4_e2m1fn, 4, 2}};

/* A contiguous float32 tensor holding vals[0..n). */
static tensor_t *f32_of(const float *vals, int64_t n) {
  tensor_t *t = NULL;
  CHECK_OK(tensor_empty(&n, 1, TENSOR_FLOAT32, &t));
  if (t != NULL) memcpy(tensor_data_ptr(t), vals, (size_t)n * sizeof(float));
  return t;
}

static void test_names_and_sizes(void) {
  size_t k;
  for (k = 0; k < 6; k++) {
    const narrow_info *n = &NARROW[k];
    tensor_t *t = NULL;
    int64_t sizes[2] = {2, 3};
    CHECK(n->code == n->c10);
    CHECK(tensor_dtype_itemsize(n->code) == 1);
    CHECK(tensor_dtype_name(n->code) != NULL && strcmp(tensor_dtype_name(n->code), n->name) == 0);
    CHECK_OK(tensor_zeros(sizes, 2, n->code, &t));
    CHECK(tensor_nbytes(t) == 6);
    tensor_release(t);
  }
}

/* float32 -> float8 -> float32 on a few anchors of each format's rules. */
static void test_conversions(void) {
  static const float src[8] = {1.0f, 1.0625f, 464.0f, 1e9f, -0.0f, 1e-30f, 3.0f, -2.75f};
  /* e4m3fn: 1.0625 ties to even (1); overflow saturates to 448; -0 stays; tiny -> 0;
   * -2.75 is exact */
  static const float e4m3fn[8] = {1.0f, 1.0f, 448.0f, 448.0f, -0.0f, 0.0f, 3.0f, -2.75f};
  /* e5m2: 1.0625 -> 1; 464 -> 448; 1e9 -> inf; -2.75 ties to even (-3) */
  static const float e5m2[8] = {1.0f, 1.0f, 448.0f, INFINITY, -0.0f, 0.0f, 3.0f, -3.0f};
  /* e4m3fnuz: 464 is past 240: NaN; -0 has no code: +0 */
  tensor_t *f = f32_of(src, 8), *e = NULL, *back = NULL, *i = NULL, *b16 = NULL, *e2 = NULL;
  const float *out;
  int k;
  CHECK_OK(tensor_to_dtype(f, TENSOR_FLOAT8_E4M3FN, &e));
  CHECK_OK(tensor_to_dtype(e, TENSOR_FLOAT32, &back));
  out = (const float *)tensor_data_ptr(back);
  for (k = 0; k < 8; k++) CHECK(memcmp(&out[k], &e4m3fn[k], sizeof(float)) == 0);
  CHECK(((const uint8_t *)tensor_data_ptr(e))[2] == 0x7E);
  tensor_release(back);
  tensor_release(e);

  CHECK_OK(tensor_to_dtype(f, TENSOR_FLOAT8_E5M2, &e));
  CHECK_OK(tensor_to_dtype(e, TENSOR_FLOAT32, &back));
  out = (const float *)tensor_data_ptr(back);
  for (k = 0; k < 8; k++) CHECK(memcmp(&out[k], &e5m2[k], sizeof(float)) == 0);
  /* float8 -> int64 truncates; -> bfloat16 is exact; float8 -> float8 through float32 */
  CHECK_OK(tensor_to_dtype(e, TENSOR_INT64, &i));
  CHECK(((const int64_t *)tensor_data_ptr(i))[7] == -3);
  CHECK_OK(tensor_to_dtype(e, TENSOR_BFLOAT16, &b16));
  CHECK(((const uint16_t *)tensor_data_ptr(b16))[6] == 0x4040); /* 3.0 */
  CHECK_OK(tensor_to_dtype(b16, TENSOR_FLOAT8_E4M3FNUZ, &e2));
  CHECK(((const uint8_t *)tensor_data_ptr(e2))[3] == 0x80); /* inf -> the fnuz NaN */
  CHECK(((const uint8_t *)tensor_data_ptr(e2))[4] == 0x00); /* no -0 */
  tensor_release(e2);
  tensor_release(b16);
  tensor_release(i);
  tensor_release(back);
  tensor_release(e);

  /* e8m0fnu: sign ignored, 3.0 (significand 1.5) rounds up to 4; fill and copy_ work */
  CHECK_OK(tensor_to_dtype(f, TENSOR_FLOAT8_E8M0FNU, &e));
  CHECK(((const uint8_t *)tensor_data_ptr(e))[6] == 129);
  CHECK(((const uint8_t *)tensor_data_ptr(e))[7] == 128);
  CHECK_OK(tensor_fill_f64_(e, 0.25));
  CHECK(((const uint8_t *)tensor_data_ptr(e))[0] == 125);
  CHECK_OK(tensor_copy_(f, e));
  CHECK(((const float *)tensor_data_ptr(f))[5] == 0.25f);
  tensor_release(e);
  tensor_release(f);
}

/* float4_e2m1fn_x2: copies into itself keep every byte; everything that needs values is
 * refused with DTYPE (PyTorch has no conversion for it either). */
static void test_float4(void) {
  int64_t sizes[2] = {4, 3}, tsizes[2] = {3, 4}, tstrides[2] = {1, 3};
  tensor_t *u = NULL, *f4 = NULL, *tr = NULL, *c = NULL, *f = NULL, *o = NULL;
  bool eq = true;
  double d;
  int64_t ix[2] = {0, 0};
  int r, k;
  CHECK_OK(tensor_arange(12, TENSOR_UINT8, &u));
  CHECK_OK(tensor_view_dtype(u, TENSOR_FLOAT4_E2M1FN_X2, &f4));
  CHECK_OK(tensor_as_strided(f4, tsizes, tstrides, 2, 0, &tr));
  CHECK_OK(tensor_contiguous(tr, TENSOR_CONTIGUOUS_FORMAT, &c));
  for (r = 0; r < 3; r++)
    for (k = 0; k < 4; k++) CHECK(((const uint8_t *)tensor_data_ptr(c))[r * 4 + k] == k * 3 + r);
  CHECK_OK(tensor_zeros(sizes, 2, TENSOR_FLOAT32, &f));
  CHECK_STATUS(tensor_to_dtype(tr, TENSOR_FLOAT32, &o), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("\"copy_\" not implemented for 'Float4_e2m1fn_x2'");
  CHECK(o == NULL);
  CHECK_STATUS(tensor_copy_(f, f4), TENSOR_ERR_DTYPE);
  CHECK_STATUS(tensor_fill_f64_(c, 1.0), TENSOR_ERR_DTYPE);
  CHECK_STATUS(tensor_equal(c, c, &eq), TENSOR_ERR_DTYPE);
  CHECK_STATUS(tensor_get_f64(c, ix, 2, &d), TENSOR_ERR_DTYPE);
  CHECK_STATUS(tensor_ones(sizes, 2, TENSOR_FLOAT4_E2M1FN_X2, &o), TENSOR_ERR_DTYPE);
  CHECK(o == NULL);
  tensor_release(f);
  tensor_release(c);
  tensor_release(tr);
  tensor_release(f4);
  tensor_release(u);
}

/* ---- DLPack --------------------------------------------------------------------------- */

static int deleter_calls = 0;
static void count_deleter(DLManagedTensorVersioned *self) {
  (void)self;
  deleter_calls++;
}

static DLManagedTensorVersioned producer(void *data, int64_t *shape, DLDataType dt, int32_t device,
                                         uint64_t flags) {
  DLManagedTensorVersioned m;
  memset(&m, 0, sizeof m);
  m.version.major = 1;
  m.version.minor = 3;
  m.deleter = count_deleter;
  m.flags = flags;
  m.dl_tensor.data = data;
  m.dl_tensor.device.device_type = device;
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype = dt;
  m.dl_tensor.shape = shape;
  return m;
}

static void test_dlpack(void) {
  size_t k;
  uint8_t bytes[4] = {0x38, 0x40, 0x7E, 0xFF};
  int64_t shape[1] = {4};
  for (k = 0; k < 6; k++) {
    const narrow_info *n = &NARROW[k];
    tensor_t *t = NULL, *back = NULL;
    DLManagedTensorVersioned *m = NULL, in;
    DLDataType dt;
    CHECK_OK(tensor_zeros(shape, 1, n->code, &t));
    CHECK_OK(tensor_to_dlpack(t, &m));
    CHECK(m->version.major == DLPACK_MAJOR_VERSION && m->version.minor == DLPACK_MINOR_VERSION);
    CHECK(m->dl_tensor.dtype.code == n->dl_code && m->dl_tensor.dtype.bits == n->dl_bits &&
          m->dl_tensor.dtype.lanes == n->dl_lanes);
    CHECK((m->flags & FLAG_IS_SUBBYTE_TYPE_PADDED) == 0);
    CHECK_OK(tensor_from_dlpack(m, &back)); /* our own export round-trips */
    CHECK(tensor_dtype(back) == n->code && tensor_data_ptr(back) == tensor_data_ptr(t));
    tensor_release(back);
    tensor_release(t);

    /* A producer's tensor of this type, versions 1.0 to 1.3 */
    dt.code = n->dl_code;
    dt.bits = n->dl_bits;
    dt.lanes = n->dl_lanes;
    in = producer(bytes, shape, dt, kDLCPU, 0);
    in.version.minor = (uint32_t)(k % 4);
    deleter_calls = 0;
    CHECK_OK(tensor_from_dlpack(&in, &t));
    CHECK(tensor_dtype(t) == n->code && tensor_data_ptr(t) == (void *)bytes);
    tensor_release(t);
    CHECK(deleter_calls == 1);
  }
  {
    /* float4 with the padded-sub-byte flag, or as single values (lanes 1): refused, and
     * the producer keeps its tensor */
    DLDataType f4 = {kDLFloat4_e2m1fn, 4, 2}, f4_single = {kDLFloat4_e2m1fn, 4, 1};
    DLDataType e3m4 = {kDLFloat8_e3m4, 8, 1}, f6 = {kDLFloat6_e2m3fn, 6, 1};
    DLDataType e4m3 = {kDLFloat8_e4m3fn, 8, 1};
    DLManagedTensorVersioned in = producer(bytes, shape, f4, kDLCPU, FLAG_IS_SUBBYTE_TYPE_PADDED);
    tensor_t *t = NULL;
    double v = 0;
    int64_t ix[1] = {2};
    deleter_calls = 0;
    CHECK_STATUS(tensor_from_dlpack(&in, &t), TENSOR_ERR_DTYPE);
    CHECK_ERROR_HAS("PADDED");
    in = producer(bytes, shape, f4_single, kDLCPU, 0);
    CHECK_STATUS(tensor_from_dlpack(&in, &t), TENSOR_ERR_DTYPE);
    CHECK_ERROR_HAS("packed pairs");
    in = producer(bytes, shape, e3m4, kDLCPU, 0);
    CHECK_STATUS(tensor_from_dlpack(&in, &t), TENSOR_ERR_DTYPE);
    CHECK_ERROR_HAS("float8_e3m4");
    in = producer(bytes, shape, f6, kDLCPU, 0);
    CHECK_STATUS(tensor_from_dlpack(&in, &t), TENSOR_ERR_DTYPE);
    CHECK_ERROR_HAS("float6");
    CHECK(deleter_calls == 0 && t == NULL);

    /* kDLTrn: accepted as a device tag; its memory is not the host's */
    in = producer(bytes, shape, e4m3, kDLTrn, 0);
    CHECK_OK(tensor_from_dlpack(&in, &t));
    CHECK(tensor_device(t).device_type == kDLTrn);
    CHECK_STATUS(tensor_get_f64(t, ix, 1, &v), TENSOR_ERR_DEVICE);
    tensor_release(t);
    CHECK(deleter_calls == 1);
    /* on the CPU, the same bytes read as e4m3fn */
    in = producer(bytes, shape, e4m3, kDLCPU, 0);
    CHECK_OK(tensor_from_dlpack(&in, &t));
    CHECK_OK(tensor_get_f64(t, ix, 1, &v));
    CHECK(v == 448.0);
    tensor_release(t);
  }
}

int main(void) {
  test_names_and_sizes();
  test_conversions();
  test_float4();
  test_dlpack();
  return harness_finish("test_float8");
}
