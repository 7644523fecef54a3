/* libtensor flagship example: wrap a camera frame you already own, look at it, crop it
 * without copying, print it, and let the library hand the memory back to you.
 *
 * The frame is laid out like an OpenCV cv::Mat of type CV_8UC3: height x width x
 * channels (HWC), uint8, row-major, allocated with malloc by "someone else".
 * Build and run: make example */
#include <stdio.h>
#include <stdlib.h>

#include "tensor.h"

/* Stop at the first failed call, with the library's message (names the function and values). */
#define TRY(call)                                                                       \
  do {                                                                                  \
    tensor_status_t st_ = (call);                                                       \
    if (st_ != TENSOR_OK) {                                                             \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, tensor_status_string(st_),        \
              tensor_last_error());                                                     \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

enum { H = 4, W = 6, C = 3 };
static int frees = 0;

/* Runs exactly once, when the last tensor (or storage) using the frame is released. */
static void free_frame(void *data, void *ctx) {
  (void)ctx;
  frees++;
  free(data);
}

static void print(const char *label, const tensor_t *t) {
  size_t n = tensor_format(t, NULL, 0); /* snprintf-style: ask for the length first */
  char *text = malloc(n + 1);
  tensor_format(t, text, n + 1);
  printf("%s =\n%s\n", label, text);
  free(text);
}

int main(void) {
  /* 1. A frame owned by the application: pixel (y, x) has channels (10y+x, 100, 200). */
  uint8_t *pixels = malloc(H * W * C);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      uint8_t *px = pixels + (y * W + x) * C;
      px[0] = (uint8_t)(10 * y + x), px[1] = 100, px[2] = 200;
    }

  /* 2. Wrap it without copying. On success the tensor owns the buffer and will call
   *    free_frame(pixels, NULL) once; on failure the buffer would still be ours. */
  const int64_t hwc[3] = {H, W, C};
  const tensor_device_t cpu = {1, 0};
  tensor_t *frame = NULL;
  TRY(tensor_from_blob(pixels, hwc, NULL /* contiguous */, 3, TENSOR_UINT8, cpu, free_frame, NULL,
                       &frame));
  const int64_t *st = tensor_strides(frame); /* borrowed: valid while frame lives */
  printf("frame: %s, %lld elements, strides [%lld, %lld, %lld], contiguous: %d\n",
         tensor_dtype_name(tensor_dtype(frame)), (long long)tensor_numel(frame), (long long)st[0],
         (long long)st[1], (long long)st[2], tensor_is_contiguous(frame, TENSOR_CONTIGUOUS_FORMAT));

  /* 3. Crop rows 1..2, columns 2..4 (frame[1:3, 2:5]) as a view on the same bytes: two
   *    slices, no copy. Python's rules: negative indices count from the end, ends clamp. */
  tensor_t *rows = NULL, *crop = NULL;
  TRY(tensor_slice(frame, 0, 1, 3, 1, &rows));
  TRY(tensor_slice(rows, 1, 2, -1, 1, &crop)); /* columns 2..4 (-1 is the last, excluded) */
  tensor_release(rows);                        /* crop keeps the storage alive */
  print("crop (frame[1:3, 2:5])", crop);

  /* 4. Channels first, as a network wants it: permute is a view (strides [1, 18, 3]);
   *    contiguous() then packs it into a new CHW buffer, the only copy in this program. */
  const int64_t to_chw[3] = {2, 0, 1};
  tensor_t *chw = NULL, *packed = NULL, *red = NULL;
  TRY(tensor_permute(crop, to_chw, 3, &chw));
  TRY(tensor_contiguous(chw, TENSOR_CONTIGUOUS_FORMAT, &packed));
  TRY(tensor_select(packed, 0, 0, &red)); /* channel 0: a 2x3 view of the packed copy */
  print("red channel of the crop (packed CHW copy)", red);
  printf("chw contiguous: %d, packed contiguous: %d, packed shares the frame: %d\n",
         tensor_is_contiguous(chw, TENSOR_CONTIGUOUS_FORMAT),
         tensor_is_contiguous(packed, TENSOR_CONTIGUOUS_FORMAT), tensor_shares_storage(packed, frame));
  tensor_release(red);
  tensor_release(packed);
  tensor_release(chw);

  /* 5. Writes through the view land in the frame: no copy was made. */
  const int64_t px[3] = {0, 0, 1}; /* crop[0, 0, 1] is frame[1, 2, 1] */
  TRY(tensor_set_i64(crop, px, 3, 255));
  printf("pixels[(1*W+2)*C+1] = %d, crop shares the frame's storage: %d, version %llu\n",
         pixels[(1 * W + 2) * C + 1], tensor_shares_storage(crop, frame),
         (unsigned long long)tensor_version(crop));

  /* 6. Memory accounting: one wrapped (external) storage alive; the packed copy is gone. */
  tensor_memory_stats_t ms = {0};
  ms.struct_size = sizeof ms;
  TRY(tensor_memory_stats(&ms));
  printf("live storages %llu (external %llu), live bytes %llu\n",
         (unsigned long long)ms.live_storages, (unsigned long long)ms.live_external_storages,
         (unsigned long long)ms.live_bytes);

  /* 7. Release in any order: the frame is freed when the last of the two goes. */
  tensor_release(frame);
  printf("after releasing frame: deleter ran %d time(s)\n", frees);
  tensor_release(crop);
  printf("after releasing crop:  deleter ran %d time(s)\n", frees);
  return frees == 1 ? 0 : 1;
}
