/* DLPack 1.3's C exchange API (docs/c-api.md, "Interop"): tensor_dlpack_exchange_api's
 * table and tensor_dlpack_managed_tensor_allocator, called through the table's typed
 * pointer as a consumer (TVM-FFI-style) would. The structs come from dlpack_abi.h, included
 * before tensor.h, whose forward declaration of struct DLPackExchangeAPI they complete. */
#include "dlpack_abi.h"

#include "harness.h"

/* What SetError received. */
typedef struct {
  int calls;
  char kind[64];
  char message[512];
} sink;

static void set_error(void *ctx, const char *kind, const char *message) {
  sink *s = (sink *)ctx;
  /* Calling back into the library first replaces its last error: the message passed here
   * must be the library's copy, not tensor_last_error's buffer. */
  CHECK(tensor_reshape(NULL, NULL, 0, NULL) == TENSOR_ERR_NULL_POINTER);
  s->calls++;
  snprintf(s->kind, sizeof s->kind, "%s", kind);
  snprintf(s->message, sizeof s->message, "%s", message);
}

static DLTensor proto(int32_t ndim, int64_t *shape, uint8_t code, uint8_t bits, uint16_t lanes) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.shape = shape;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = lanes;
  return t;
}

static const DLPackExchangeAPI *api;

/* One failing call through the table: -1, SetError called once with `kind` and a message
 * naming the function that is also tensor_last_error's, `*out` untouched. */
static void check_fails(DLTensor *p, const char *kind, const char *needle) {
  DLManagedTensorVersioned *sent = (DLManagedTensorVersioned *)&api, *out = sent;
  sink s;
  memset(&s, 0, sizeof s);
  CHECK(api->managed_tensor_allocator(p, &out, &s, set_error) == -1);
  CHECK(out == sent);
  CHECK(s.calls == 1);
  CHECK(strcmp(s.kind, kind) == 0);
  CHECK(strncmp(s.message, "tensor_dlpack_managed_tensor_allocator: ", 40) == 0);
  CHECK(strstr(s.message, needle) != NULL);
  if (s.calls != 1 || strcmp(s.kind, kind) != 0 || strstr(s.message, needle) == NULL)
    fprintf(stderr, "  got kind \"%s\", message \"%s\"; want \"%s\", \"%s\"\n", s.kind, s.message, kind, needle);
  /* tensor_last_error is the allocator's again after a second, NULL-SetError call */
  CHECK(tensor_dlpack_managed_tensor_allocator(p, &out, NULL, NULL) == -1);
  CHECK(out == sent && strcmp(tensor_last_error(), s.message) == 0);
}

static void test_table(void) {
  void *stream = &api;
  DLPackManagedTensorAllocator typed = (DLPackManagedTensorAllocator)tensor_dlpack_managed_tensor_allocator;
  api = tensor_dlpack_exchange_api();
  CHECK(api != NULL && api == tensor_dlpack_exchange_api());
  CHECK(api->header.version.major == 1 && api->header.version.minor == 3);
  CHECK(api->header.prev_api == NULL);
  CHECK(api->managed_tensor_allocator == typed);
  /* No Python objects in a C library: a binding fills these in its own copy. */
  CHECK(api->managed_tensor_from_py_object_no_sync == NULL);
  CHECK(api->managed_tensor_to_py_object_no_sync == NULL);
  CHECK(api->dltensor_from_py_object_no_sync == NULL);
  /* No device work, so no stream to order after: NULL, as dlpack.h allows. */
  CHECK(api->current_work_stream != NULL);
  CHECK(api->current_work_stream(kDLCPU, 0, &stream) == 0 && stream == NULL);
  stream = &api;
  CHECK(api->current_work_stream(kDLCUDA, 1, &stream) == 0 && stream == NULL);
  CHECK(api->current_work_stream(kDLCPU, 0, NULL) == -1);
}

typedef struct {
  int allocs, frees;
  size_t live;
} alloc_log;

static void *counting_allocate(void *ctx, size_t nbytes, size_t alignment) {
  alloc_log *l = (alloc_log *)ctx;
  void *p = NULL;
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

static void test_allocate(void) {
  int64_t shape[3] = {2, 3, 4};
  int64_t strides[3] = {1, 2, 6}; /* ignored: dlpack.h reads dtype, ndim, shape, device */
  DLTensor p = proto(3, shape, kDLFloat, 32, 1);
  DLManagedTensorVersioned *m = NULL;
  tensor_t *t = NULL;
  alloc_log log = {0, 0, 0};
  tensor_allocator_t a;
  sink s;
  float *f;
  int i, ok = 1;
  memset(&s, 0, sizeof s);
  a.ctx = &log;
  a.allocate = counting_allocate;
  a.deallocate = counting_deallocate;
  p.strides = strides;
  p.byte_offset = 12;
  p.data = &log;

  /* Through the library's allocator (here a counting default allocator). */
  CHECK_OK(tensor_set_default_allocator(&a));
  CHECK(api->managed_tensor_allocator(&p, &m, &s, set_error) == 0);
  CHECK(s.calls == 0 && m != NULL);
  if (m == NULL) return;
  CHECK(log.allocs == 1 && log.live == 2 * 3 * 4 * sizeof(float));
  CHECK(m->version.major == 1 && m->version.minor == 3);
  CHECK(m->flags == 0 && m->deleter != NULL);
  CHECK(m->dl_tensor.device.device_type == kDLCPU && m->dl_tensor.device.device_id == 0);
  CHECK(m->dl_tensor.ndim == 3 && m->dl_tensor.byte_offset == 0);
  CHECK(m->dl_tensor.dtype.code == kDLFloat && m->dl_tensor.dtype.bits == 32 && m->dl_tensor.dtype.lanes == 1);
  CHECK(m->dl_tensor.shape != shape && m->dl_tensor.shape[0] == 2 && m->dl_tensor.shape[1] == 3 &&
        m->dl_tensor.shape[2] == 4);
  CHECK(m->dl_tensor.strides != NULL && m->dl_tensor.strides[0] == 12 && m->dl_tensor.strides[1] == 4 &&
        m->dl_tensor.strides[2] == 1);
  CHECK(m->dl_tensor.data != NULL && m->dl_tensor.data != (void *)&log);
  CHECK(((uintptr_t)m->dl_tensor.data) % 64 == 0);
  /* Writable through data; a libtensor import sees the writes. */
  f = (float *)m->dl_tensor.data;
  for (i = 0; i < 24; i++) f[i] = (float)i * 0.5f;
  CHECK_OK(tensor_from_dlpack(m, &t));
  if (t) {
    int64_t ix[3] = {1, 2, 3};
    double v = 0;
    CHECK_OK(tensor_get_f64(t, ix, 3, &v));
    CHECK(v == 23 * 0.5);
    for (i = 0; i < 24; i++) ok &= ((float *)tensor_data_ptr(t))[i] == (float)i * 0.5f;
    CHECK(ok);
    CHECK(log.frees == 0);
    tensor_release(t); /* runs the managed tensor's deleter: the block goes back */
  }
  CHECK(log.allocs == 1 && log.frees == 1 && log.live == 0);

  /* The deleter called directly frees it too. */
  CHECK(tensor_dlpack_managed_tensor_allocator(&p, &m, NULL, NULL) == 0);
  CHECK(log.allocs == 2 && log.live == 96);
  m->deleter(m);
  CHECK(log.frees == 2 && log.live == 0);
  CHECK_OK(tensor_set_default_allocator(NULL));

  /* 0-dim (shape may be NULL), no elements (NULL data), packed float4 pairs, bool. */
  p = proto(0, NULL, kDLFloat, 64, 1);
  CHECK(api->managed_tensor_allocator(&p, &m, &s, set_error) == 0);
  CHECK(m->dl_tensor.ndim == 0 && m->dl_tensor.data != NULL);
  *(double *)m->dl_tensor.data = 2.5;
  m->deleter(m);
  shape[0] = 5;
  shape[1] = 0;
  p = proto(2, shape, kDLInt, 64, 1);
  CHECK(api->managed_tensor_allocator(&p, &m, &s, set_error) == 0);
  CHECK(m->dl_tensor.data == NULL && m->dl_tensor.shape[0] == 5 && m->dl_tensor.shape[1] == 0);
  m->deleter(m);
  shape[0] = 3;
  shape[1] = 2;
  p = proto(2, shape, kDLFloat4_e2m1fn, 4, 2);
  CHECK(api->managed_tensor_allocator(&p, &m, &s, set_error) == 0);
  CHECK(m->dl_tensor.dtype.code == kDLFloat4_e2m1fn && m->dl_tensor.dtype.bits == 4 &&
        m->dl_tensor.dtype.lanes == 2 && m->flags == 0);
  CHECK(m->dl_tensor.strides[0] == 2 && m->dl_tensor.strides[1] == 1);
  memset(m->dl_tensor.data, 0x3c, 6);
  m->deleter(m);
  p = proto(1, shape, kDLBool, 8, 1);
  CHECK(api->managed_tensor_allocator(&p, &m, &s, set_error) == 0);
  m->deleter(m);
  CHECK(s.calls == 0);
}

static void test_errors(void) {
  int64_t shape[2] = {2, 3};
  int64_t neg[2] = {2, -3};
  int64_t huge[2] = {INT64_C(1) << 62, 8};
  int64_t absurd[1] = {INT64_C(1) << 60};
  DLTensor p = proto(2, shape, kDLFloat, 32, 1);
  DLManagedTensorVersioned *sent = (DLManagedTensorVersioned *)&api, *out = sent;
  sink s;
  memset(&s, 0, sizeof s);

  /* NULL prototype or out: ValueError; NULL SetError: -1 and tensor_last_error only. */
  check_fails(NULL, "ValueError", "argument 'prototype' is NULL");
  CHECK(api->managed_tensor_allocator(&p, NULL, &s, set_error) == -1);
  CHECK(s.calls == 1 && strcmp(s.kind, "ValueError") == 0 && strstr(s.message, "argument 'out' is NULL"));
  CHECK(tensor_dlpack_managed_tensor_allocator(NULL, NULL, NULL, NULL) == -1);
  CHECK_ERROR_HAS("tensor_dlpack_managed_tensor_allocator: argument 'out' is NULL");
  CHECK(out == sent);

  /* Devices: only the host. */
  p.device.device_type = kDLCUDA;
  check_fails(&p, "ValueError", "(device_type 2, device_id 0)");
  p.device.device_type = kDLCPU;
  p.device.device_id = 1;
  check_fails(&p, "ValueError", "host memory only");
  p.device.device_id = 0;
  p.device.device_type = kDLTrn;
  check_fails(&p, "ValueError", "device_type 18");
  p.device.device_type = kDLCPU;

  /* dtypes: an unknown code, lanes, a float8 libtensor lacks, unpaired float4 */
  p.dtype.code = 99;
  check_fails(&p, "TypeError", "99");
  p.dtype.code = kDLFloat;
  p.dtype.lanes = 4;
  check_fails(&p, "TypeError", "lanes");
  p.dtype.lanes = 1;
  p.dtype.code = kDLFloat8_e4m3;
  p.dtype.bits = 8;
  check_fails(&p, "TypeError", "float8_e4m3");
  p.dtype.code = kDLFloat4_e2m1fn;
  p.dtype.bits = 4;
  check_fails(&p, "TypeError", "float4");
  p.dtype.code = kDLFloat;
  p.dtype.bits = 32;

  /* shapes: negative ndim, too many dims, NULL shape, negative size, overflow, OOM */
  p.ndim = -1;
  check_fails(&p, "ValueError", "ndim -1");
  p.ndim = 65;
  check_fails(&p, "ValueError", "65");
  p.ndim = 2;
  p.shape = NULL;
  check_fails(&p, "ValueError", "shape is NULL");
  p.shape = neg;
  check_fails(&p, "ValueError", "-3");
  p.shape = huge;
  check_fails(&p, "OverflowError", "overflow");
  p.ndim = 1;
  p.shape = absurd;
  check_fails(&p, "MemoryError", "failed to allocate 4611686018427387904 bytes");
}

int main(void) {
  test_table();
  test_allocate();
  test_errors();
  return harness_finish("dlpack_exchange");
}
