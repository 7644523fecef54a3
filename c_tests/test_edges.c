/* Regression tests for the memory-safety findings of issue 7, through the public C API
 * only: DLPack export of a tensor on a shrunk storage, storage_resize under an outstanding
 * export, copy_ between two storages over the same bytes, 64-bit layout arithmetic on
 * 0-element tensors, statuses the header documents, and equal's alias fast path. */
#include "dlpack_abi.h"

#include <math.h>

#include "harness.h"

/* ---- 1. DLPack export checks the layout against the storage as it is now -------------- */

static void test_export_of_shrunk_storage_refused(void) {
  int64_t sizes[1] = {16};
  tensor_t *t = NULL;
  CHECK_OK(tensor_zeros(sizes, 1, TENSOR_FLOAT32, &t));
  storage_t *s = tensor_storage(t);
  CHECK_OK(storage_resize(s, 8)); /* the tensor needs 64 bytes: 8 remain */
  double v = 0;
  int64_t idx[1] = {15};
  CHECK_STATUS(tensor_get_f64(t, idx, 1, &v), TENSOR_ERR_OUT_OF_BOUNDS);
  DLManagedTensorVersioned *mv = NULL;
  CHECK_STATUS(tensor_to_dlpack(t, &mv), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK(mv == NULL);
  CHECK_ERROR_HAS("tensor_to_dlpack");
  CHECK_ERROR_HAS("64 bytes");
  DLManagedTensor *mu = NULL;
  CHECK_STATUS(tensor_to_dlpack_unversioned(t, &mu), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK(mu == NULL);
  CHECK_ERROR_HAS("tensor_to_dlpack_unversioned");
  /* A view that still fits exports fine; growing back makes the whole tensor exportable. */
  tensor_t *head = NULL;
  CHECK_OK(tensor_narrow(t, 0, 0, 2, &head));
  CHECK_OK(tensor_to_dlpack(head, &mv));
  mv->deleter(mv);
  CHECK_OK(storage_resize(s, 64));
  CHECK_OK(tensor_to_dlpack(t, &mv));
  CHECK(mv != NULL && mv->dl_tensor.shape[0] == 16);
  mv->deleter(mv);
  tensor_release(head);
  tensor_release(t);
}

/* ---- 2. storage_resize while a DLPack export is outstanding ---------------------------- */

static void test_resize_refused_while_exported(void) {
  tensor_t *t = NULL;
  CHECK_OK(tensor_arange(4, TENSOR_INT32, &t));
  storage_t *s = tensor_storage(t);
  void *before = storage_data_ptr(s);
  DLManagedTensorVersioned *a = NULL;
  DLManagedTensor *b = NULL;
  CHECK_OK(tensor_to_dlpack(t, &a));
  CHECK_OK(tensor_to_dlpack_unversioned(t, &b));
  /* Grow and shrink are both refused; nothing moves. */
  CHECK_STATUS(storage_resize(s, 1024), TENSOR_ERR_NOT_RESIZABLE);
  CHECK_ERROR_HAS("storage_resize");
  CHECK_ERROR_HAS("16 bytes");
  CHECK_ERROR_HAS("2 DLPack export");
  CHECK_STATUS(storage_resize(s, 0), TENSOR_ERR_NOT_RESIZABLE);
  CHECK(storage_data_ptr(s) == before && storage_nbytes(s) == 16);
  /* The consumer still reads and writes the exported bytes (valgrind: no use after free). */
  int32_t *data = (int32_t *)a->dl_tensor.data;
  CHECK(data[3] == 3);
  data[3] = 42;
  CHECK(((int32_t *)b->dl_tensor.data)[3] == 42);
  a->deleter(a);
  CHECK_STATUS(storage_resize(s, 1024), TENSOR_ERR_NOT_RESIZABLE);
  CHECK_ERROR_HAS("1 DLPack export");
  b->deleter(b);
  /* Every export returned: resizing works again and keeps the prefix. */
  CHECK_OK(storage_resize(s, 1024));
  int64_t idx[1] = {3};
  int64_t v = 0;
  CHECK_OK(tensor_get_i64(t, idx, 1, &v));
  CHECK(v == 42);
  /* A failed export (shrunk storage) does not count as outstanding. */
  CHECK_OK(storage_resize(s, 4));
  CHECK_STATUS(tensor_to_dlpack(t, &a), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_OK(storage_resize(s, 16)); /* bytes 4..16 are new: write element 3 again */
  CHECK_OK(tensor_set_i64(t, idx, 1, 42));
  /* The export keeps the storage alive after every handle of the producer is gone, and
   * the round trip gives a tensor over the same bytes. */
  CHECK_OK(tensor_to_dlpack(t, &a));
  tensor_release(t);
  tensor_t *back = NULL;
  CHECK_OK(tensor_from_dlpack(a, &back));
  CHECK_OK(tensor_get_i64(back, idx, 1, &v));
  CHECK(v == 42);
  tensor_release(back); /* runs the export's deleter: the storage goes too */
}

/* ---- 3. copy_ overlap from the actual bytes, whatever the storages --------------------- */

static int is_transpose_of_iota(const tensor_t *p) {
  int ok = 1;
  for (int64_t i = 0; i < 4; i++) {
    for (int64_t j = 0; j < 4; j++) {
      int64_t idx[2] = {i, j};
      double v = -1;
      ok &= tensor_get_f64(p, idx, 2, &v) == TENSOR_OK && v == (double)(j * 4 + i);
    }
  }
  return ok;
}

static void test_copy_between_aliasing_storages(void) {
  double buf[16];
  for (int i = 0; i < 16; i++) buf[i] = i;
  int64_t sizes[2] = {4, 4};
  tensor_device_t cpu = {1, 0};
  tensor_t *p = NULL, *alias = NULL, *alias_t = NULL;
  CHECK_OK(tensor_from_blob(buf, sizes, NULL, 2, TENSOR_FLOAT64, cpu, NULL, NULL, &p));
  CHECK_OK(tensor_from_blob(buf, sizes, NULL, 2, TENSOR_FLOAT64, cpu, NULL, NULL, &alias));
  CHECK(!tensor_shares_storage(p, alias));
  CHECK_OK(tensor_transpose(alias, 0, 1, &alias_t));
  CHECK_OK(tensor_copy_(p, alias_t)); /* p.copy_(alias_of_p.T): the snapshot's transpose */
  CHECK(is_transpose_of_iota(p));
  tensor_release(alias_t);
  tensor_release(alias);
  tensor_release(p);

  /* The normal PyTorch <-> libtensor path: a DLPack round trip. */
  tensor_t *q = NULL, *back = NULL, *back_t = NULL, *flat = NULL;
  CHECK_OK(tensor_arange(16, TENSOR_FLOAT64, &flat));
  CHECK_OK(tensor_view(flat, sizes, 2, &q));
  DLManagedTensorVersioned *m = NULL;
  CHECK_OK(tensor_to_dlpack(q, &m));
  CHECK_OK(tensor_from_dlpack(m, &back));
  CHECK(!tensor_shares_storage(q, back));
  CHECK_OK(tensor_transpose(back, 0, 1, &back_t));
  CHECK_OK(tensor_copy_(q, back_t));
  CHECK(is_transpose_of_iota(q));
  /* Shifted by one element across the two storages (a converting copy too). */
  tensor_t *dst = NULL, *src = NULL, *back_flat = NULL;
  int64_t n16[1] = {16};
  CHECK_OK(tensor_view(back, n16, 1, &back_flat));
  CHECK_OK(tensor_narrow(flat, 0, 1, 15, &dst));
  CHECK_OK(tensor_narrow(back_flat, 0, 0, 15, &src));
  double before[16];
  for (int64_t i = 0; i < 16; i++) {
    int64_t idx[1] = {i};
    CHECK_OK(tensor_get_f64(flat, idx, 1, &before[i]));
  }
  CHECK_OK(tensor_copy_(dst, src));
  int shifted = 1;
  for (int64_t i = 1; i < 16; i++) {
    int64_t idx[1] = {i};
    double v = -1;
    shifted &= tensor_get_f64(flat, idx, 1, &v) == TENSOR_OK && v == before[i - 1];
  }
  CHECK(shifted);
  tensor_release(src);
  tensor_release(dst);
  tensor_release(back_flat);
  tensor_release(back_t);
  tensor_release(back);
  tensor_release(q);
  tensor_release(flat);
}

/* ---- 4. checked 64-bit arithmetic on layout values -------------------------------------
 * Tensors without elements may have any offset and strides; every operation on them
 * answers a documented status, the same in release and debug builds (this program runs
 * against both in CI). */

static void test_layout_arithmetic_on_empty_tensors(void) {
  storage_t *s = NULL;
  CHECK_OK(storage_new(0, NULL, &s));
  const int64_t big_off = INT64_MAX - 1;
  tensor_t *t = NULL, *out = NULL;

  /* select: offset + index * stride passes INT64_MAX */
  int64_t sz2[2] = {0, 4}, st2[2] = {1, INT64_MAX / 2};
  CHECK_OK(tensor_from_storage(s, big_off, sz2, st2, 2, TENSOR_FLOAT32, &t));
  CHECK(tensor_numel(t) == 0 && tensor_storage_offset(t) == big_off);
  CHECK_STATUS(tensor_select(t, 1, 3, &out), TENSOR_ERR_OVERFLOW);
  CHECK_ERROR_HAS("tensor_select");
  CHECK_ERROR_HAS("overflows");
  CHECK_OK(tensor_select(t, 1, 0, &out)); /* index 0 adds nothing */
  CHECK(tensor_storage_offset(out) == big_off && tensor_numel(out) == 0);
  tensor_release(out);
  /* data_ptr: as c10's, NULL for a tensor with no elements (the offset may lie anywhere) */
  CHECK(tensor_data_ptr(t) == NULL);
  /* element_offset: no element exists, so the index is out of range (checked first) */
  int64_t idx2[2] = {0, 3}, off = -1;
  CHECK_STATUS(tensor_element_offset(t, idx2, 2, &off), TENSOR_ERR_INDEX);
  CHECK(off == -1);
  tensor_release(t);

  int64_t sz2b[2] = {4, 0}, st2b[2] = {INT64_MAX / 2, 1};
  CHECK_OK(tensor_from_storage(s, big_off, sz2b, st2b, 2, TENSOR_FLOAT32, &t));
  int64_t idx2b[2] = {3, 0};
  CHECK_STATUS(tensor_element_offset(t, idx2b, 2, &off), TENSOR_ERR_INDEX);
  tensor_release(t);

  /* diagonal: offset * stride added to the storage offset */
  int64_t sz3[3] = {0, 4, 4}, st3[3] = {1, INT64_C(1) << 61, INT64_C(1) << 61};
  CHECK_OK(tensor_from_storage(s, big_off, sz3, st3, 3, TENSOR_FLOAT32, &t));
  CHECK_STATUS(tensor_diagonal(t, 1, 1, 2, &out), TENSOR_ERR_OVERFLOW);
  CHECK_ERROR_HAS("tensor_diagonal");
  CHECK_STATUS(tensor_diagonal(t, -1, 1, 2, &out), TENSOR_ERR_OVERFLOW);
  CHECK_OK(tensor_diagonal(t, 0, 1, 2, &out));
  CHECK(tensor_ndim(out) == 2 && tensor_storage_offset(out) == big_off);
  tensor_release(out);
  tensor_release(t);

  /* repeat: a zero repeat leaves nothing to copy; the interleaved strides are not formed */
  int64_t sz3r[3] = {INT64_C(1) << 40, 0, INT64_C(1) << 40};
  CHECK_OK(tensor_from_storage(s, 0, sz3r, NULL, 3, TENSOR_UINT8, &t));
  int64_t reps[3] = {0, 1, INT64_C(1) << 20};
  CHECK_OK(tensor_repeat(t, reps, 3, &out));
  CHECK(tensor_numel(out) == 0 && tensor_sizes(out)[2] == (INT64_C(1) << 60));
  tensor_release(out);
  tensor_release(t);

  /* view / reshape / unflatten to a shape whose contiguous strides overflow: OVERFLOW (not
   * NOT_VIEWABLE, which would send the caller to reshape) */
  int64_t one0[1] = {0};
  CHECK_OK(tensor_from_storage(s, big_off, one0, NULL, 1, TENSOR_FLOAT64, &t));
  int64_t huge[3] = {0, INT64_C(1) << 40, INT64_C(1) << 40};
  CHECK_STATUS(tensor_view(t, huge, 3, &out), TENSOR_ERR_OVERFLOW);
  CHECK_STATUS(tensor_reshape(t, huge, 3, &out), TENSOR_ERR_OVERFLOW);
  CHECK_STATUS(tensor_unflatten(t, 0, huge, 3, &out), TENSOR_ERR_OVERFLOW);
  int64_t fine[3] = {0, 3, 2};
  CHECK_OK(tensor_reshape(t, fine, 3, &out));
  CHECK(tensor_strides(out)[0] == 6 && tensor_storage_offset(out) == big_off);
  tensor_release(out);
  tensor_release(t);
  storage_release(s);

  /* nbytes of an expanded view with more element bytes than size_t holds: saturates */
  tensor_t *one = NULL;
  int64_t sz1[1] = {1}, wide[2] = {INT64_C(1) << 31, INT64_C(1) << 31};
  CHECK_OK(tensor_zeros(sz1, 1, TENSOR_FLOAT64, &one));
  CHECK_OK(tensor_expand(one, wide, 2, &out));
  CHECK(tensor_numel(out) == (INT64_C(1) << 62));
  CHECK(tensor_nbytes(out) == SIZE_MAX);
  tensor_release(out);
  tensor_release(one);
}

/* ---- 5. statuses the header documents -------------------------------------------------
 * (tests/documented_statuses.rs drives every function; these are the cases the issue
 * names.) */

static void test_documented_statuses(void) {
  tensor_t *t = NULL, *out = NULL;
  /* Views of a tensor whose storage was shrunk below it: OUT_OF_BOUNDS, now documented on
   * every view function (squeeze, alias and detach said "only NULL_POINTER,
   * OUT_OF_MEMORY"). */
  CHECK_OK(tensor_arange(12, TENSOR_FLOAT32, &t));
  CHECK_OK(storage_resize(tensor_storage(t), 8));
  CHECK_STATUS(tensor_squeeze(t, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_STATUS(tensor_alias(t, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_STATUS(tensor_detach(t, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_STATUS(tensor_transpose(t, 0, 0, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  int64_t one[1] = {1};
  CHECK_STATUS(tensor_repeat(t, one, 1, &out), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK(out == NULL);
  tensor_release(t);

  /* narrow and view_dtype answer OVERFLOW (documented) on a tensor without elements at a
   * huge offset */
  storage_t *s = NULL;
  CHECK_OK(storage_new(0, NULL, &s));
  int64_t sz[2] = {0, 4}, st[2] = {1, INT64_MAX / 2};
  CHECK_OK(tensor_from_storage(s, INT64_MAX - 1, sz, st, 2, TENSOR_FLOAT32, &t));
  CHECK_STATUS(tensor_narrow(t, 1, 3, 1, &out), TENSOR_ERR_OVERFLOW);
  tensor_release(t);
  int64_t sz2[2] = {4, 0}, st2[2] = {1, 1};
  CHECK_OK(tensor_from_storage(s, INT64_MAX - 1, sz2, st2, 2, TENSOR_FLOAT32, &t));
  CHECK_STATUS(tensor_view_dtype(t, TENSOR_UINT8, &out), TENSOR_ERR_OVERFLOW);
  CHECK_ERROR_HAS("tensor_view_dtype");
  tensor_release(t);
  storage_release(s);
}

/* ---- 6. equal's alias fast path -------------------------------------------------------- */

static void test_equal_alias_fast_path(void) {
  int64_t one[2] = {1, 1}, huge[2] = {INT64_C(1) << 30, INT64_C(1) << 30};
  const tensor_dtype_t dtypes[3] = {TENSOR_FLOAT32, TENSOR_INT64, TENSOR_COMPLEX128};
  for (int k = 0; k < 3; k++) {
    for (int nan = 0; nan < 2; nan++) {
      tensor_t *t = NULL, *e = NULL, *a = NULL;
      CHECK_OK(tensor_full(one, 2, dtypes[k], nan ? NAN : 2.0, &t));
      CHECK_OK(tensor_expand(t, huge, 2, &e)); /* 2^60 elements over one */
      CHECK_OK(tensor_alias(e, &a));
      bool eq = !nan;
      /* NaN converts to 0 in int64 (equal); in float and complex NaN != NaN */
      bool want = dtypes[k] == TENSOR_INT64 || !nan;
      CHECK_OK(tensor_equal(e, e, &eq));
      CHECK(eq == want);
      eq = !want;
      CHECK_OK(tensor_equal(e, a, &eq));
      CHECK(eq == want);
      tensor_release(a);
      tensor_release(e);
      tensor_release(t);
    }
  }
  /* Two storages over the same bytes: the same elements. */
  double buf[4] = {1, 2, NAN, 4};
  int64_t four[1] = {4};
  tensor_device_t cpu = {1, 0};
  tensor_t *p = NULL, *q = NULL, *ph = NULL, *qh = NULL;
  CHECK_OK(tensor_from_blob(buf, four, NULL, 1, TENSOR_FLOAT64, cpu, NULL, NULL, &p));
  CHECK_OK(tensor_from_blob(buf, four, NULL, 1, TENSOR_FLOAT64, cpu, NULL, NULL, &q));
  bool eq = true;
  CHECK_OK(tensor_equal(p, q, &eq));
  CHECK(!eq); /* buf[2] is NaN */
  CHECK_OK(tensor_narrow(p, 0, 0, 2, &ph));
  CHECK_OK(tensor_narrow(q, 0, 0, 2, &qh));
  CHECK_OK(tensor_equal(ph, qh, &eq));
  CHECK(eq);
  tensor_release(qh);
  tensor_release(ph);
  tensor_release(q);
  tensor_release(p);
}

int main(void) {
  test_export_of_shrunk_storage_refused();
  test_resize_refused_while_exported();
  test_copy_between_aliasing_storages();
  test_layout_arithmetic_on_empty_tensors();
  test_documented_statuses();
  test_equal_alias_fast_path();
  return harness_finish("c_edges");
}
