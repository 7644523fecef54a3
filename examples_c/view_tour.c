/* A tour of views: what shares memory, what copies, and the one pitfall to know.
 *
 *   1. views (slice, transpose, permute, select, expand) share the base's storage: no
 *      copy, writes show through, strides (in elements) say where each element is;
 *   2. contiguous()/clone() copy; reshape() copies only when a view is impossible;
 *   3. the pitfall: a small view pins its whole storage. Keeping a 2x2 crop of a
 *      4096x4096 image keeps all 64 MiB alive. The fix: clone() the crop, then drop the
 *      view: the big storage is freed (checked here with a weak reference).
 *
 * Build and run: cargo test --test c_api examples_run   (or by hand:
 *   cc -std=c99 -Iinclude examples_c/view_tour.c -Ltarget/debug -ltensor) */
#include <stdio.h>
#include <stdlib.h>

#include "tensor.h"

#define TRY(call)                                                                            \
  do {                                                                                       \
    tensor_status_t st_ = (call);                                                            \
    if (st_ != TENSOR_OK) {                                                                  \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, tensor_status_string(st_), tensor_last_error()); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                            \
    }                                                                     \
  } while (0)

static void show(const char *name, const tensor_t *t) {
  char text[256];
  int64_t nd = tensor_ndim(t);
  printf("%-22s sizes [", name);
  for (int64_t d = 0; d < nd; d++) printf("%s%lld", d ? ", " : "", (long long)tensor_sizes(t)[d]);
  printf("]  strides [");
  for (int64_t d = 0; d < nd; d++) printf("%s%lld", d ? ", " : "", (long long)tensor_strides(t)[d]);
  tensor_format(t, text, sizeof text);
  printf("]  offset %lld\n%s\n", (long long)tensor_storage_offset(t), text);
}

static void views(void) {
  int64_t s34[2] = {3, 4};
  tensor_t *a = NULL, *base = NULL, *row = NULL, *col = NULL, *tr = NULL, *big = NULL;
  TRY(tensor_arange(12, TENSOR_FLOAT32, &a));
  TRY(tensor_view(a, s34, 2, &base));
  show("base = arange(12)", base);
  TRY(tensor_select(base, 0, 1, &row)); /* base[1] */
  TRY(tensor_slice(base, 1, 1, 4, 2, &col)); /* base[:, 1::2] */
  TRY(tensor_transpose(base, 0, 1, &tr));
  int64_t s234[3] = {2, 3, 4};
  TRY(tensor_expand(base, s234, 3, &big)); /* stride 0: no memory */
  show("base[1]", row);
  show("base[:, 1::2]", col);
  show("base.t()", tr);
  show("base.expand(2, 3, 4)", big);
  EXPECT(tensor_shares_storage(row, base) && tensor_shares_storage(tr, base) && tensor_shares_storage(big, base));
  EXPECT(tensor_strides(big)[0] == 0);

  /* A write through a view shows in every other view of the storage. */
  int64_t i0 = 0, i10[2] = {1, 0};
  TRY(tensor_set_f64(col, i10, 2, -1.0)); /* col[1][0] is base[1][1] */
  double v = 0;
  TRY(tensor_get_f64(row, &i0, 1, &v));
  EXPECT(v == 4.0);
  int64_t i1 = 1;
  TRY(tensor_get_f64(row, &i1, 1, &v));
  EXPECT(v == -1.0);
  printf("after col[1][0] = -1: base[1][1] = %g (same memory)\n\n", v);

  /* Copies: contiguous() of a transposed view, and reshape of it (needs a copy). */
  tensor_t *tc = NULL, *flat = NULL, *flat_view = NULL;
  TRY(tensor_contiguous(tr, TENSOR_CONTIGUOUS_FORMAT, &tc));
  EXPECT(!tensor_shares_storage(tc, base));
  int64_t m1 = -1;
  TRY(tensor_reshape(tr, &m1, 1, &flat)); /* a transposed layout cannot be flattened in place */
  TRY(tensor_reshape(base, &m1, 1, &flat_view)); /* a contiguous one can */
  EXPECT(!tensor_shares_storage(flat, base) && tensor_shares_storage(flat_view, base));
  printf("contiguous(base.t()) and base.t().reshape(-1) copy; base.reshape(-1) is a view\n\n");
  tensor_release(flat_view);
  tensor_release(flat);
  tensor_release(tc);
  tensor_release(big);
  tensor_release(tr);
  tensor_release(col);
  tensor_release(row);
  tensor_release(base);
  tensor_release(a);
}

static void pitfall(void) {
  int64_t sizes[2] = {4096, 4096};
  tensor_t *image = NULL, *crop = NULL, *kept = NULL;
  storage_weak_t *weak = NULL;
  TRY(tensor_zeros(sizes, 2, TENSOR_FLOAT32, &image));
  TRY(storage_weak_new(tensor_storage(image), &weak));
  TRY(tensor_slice(image, 0, 100, 102, 1, &crop));
  TRY(tensor_slice(crop, 1, 200, 202, 1, &kept)); /* a 2x2 view */
  tensor_release(crop);
  tensor_release(image);
  /* The pitfall: 16 bytes of data in use, the whole 64 MiB storage still alive. */
  printf("pitfall: a 2x2 view (%zu bytes of elements) keeps a storage of %zu bytes alive\n", tensor_nbytes(kept),
         storage_nbytes(tensor_storage(kept)));
  EXPECT(!storage_weak_expired(weak));
  EXPECT(storage_nbytes(tensor_storage(kept)) == (size_t)4096 * 4096 * 4);

  /* The fix: clone() the small view (its own 16-byte storage), drop the view. */
  tensor_t *small = NULL;
  TRY(tensor_clone(kept, TENSOR_CONTIGUOUS_FORMAT, &small));
  tensor_release(kept);
  EXPECT(storage_weak_expired(weak));
  printf("fix: clone() it and drop the view: storage of %zu bytes; the 64 MiB are freed\n",
         storage_nbytes(tensor_storage(small)));
  EXPECT(storage_nbytes(tensor_storage(small)) == 16);
  storage_weak_release(weak);
  tensor_release(small);
}

int main(void) {
  views();
  pitfall();
  printf("view_tour: ok\n");
  return 0;
}
