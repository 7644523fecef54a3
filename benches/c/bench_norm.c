/* Image normalization, the video-loop case: a uint8 HWC frame, permuted to CHW (a view),
 * written into one float32 CHW tensor allocated once and reused for every frame, scaled
 * and shifted per channel (ImageNet's 1/(255 std) and -mean/std) by one
 * tensor_copy_affine_ call, against a hand-written C loop computing the same float32
 * formula (x * scale[c] + shift[c], each operation rounded to float32) into the same
 * output. This file is built at -O3 -march=native, so the loop is what the compiler makes
 * of it for this CPU. The two alternate within each round; each takes the best of ROUNDS
 * of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID); ratio = t(copy_affine_) / t(hand
 * loop), <= 1.0 means copy_affine_ is at least as fast. Two floors in the same rounds: a
 * fill of the output with streaming stores (the least a pass that streams the output
 * costs) and glibc memset of it, each best of ROUNDS after the pair's rounds. Also printed: a malloc(160)/free
 * pair in ns (the host's noise gauge) and the L3 size the library reads.
 * Usage: bench_norm [rounds]   Build and run: benches/c/run.sh norm */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <immintrin.h>

#include "tensor.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, tensor_last_error());
  exit(1);
}

/* The hand loop: out[c][y][x] = px[(y W + x) 3 + c] * scale[c] + shift[c]. */
static void hand(float *restrict out, const uint8_t *restrict px, int64_t hw, const float *scale,
                 const float *shift) {
  for (int c = 0; c < 3; c++) {
    float *o = out + c * hw;
    const float a = scale[c], b = shift[c];
    for (int64_t i = 0; i < hw; i++) o[i] = (float)px[3 * i + c] * a + b;
  }
}

/* The output filled with streaming stores (32-byte aligned: a tensor's data is). */
static void nt_fill(float *o, int64_t n) {
  const __m256 v = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(o + i, v);
  for (; i < n; i++) o[i] = 1.0f;
  _mm_sfence();
}

/* ns per malloc(160)/free pair, best of 5 rounds of 200000. */
static double malloc_pair_ns(void) {
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = now_ms();
    for (int i = 0; i < 200000; i++) {
      void *volatile p = malloc(160);
      free(p);
    }
    double t = (now_ms() - t0) * 1e6 / 200000;
    if (t < best) best = t;
  }
  return best;
}

static void one(const char *name, int64_t H, int64_t W, int rounds) {
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  double scale[3], shift[3];
  float fs[3], fb[3];
  for (int c = 0; c < 3; c++) {
    scale[c] = 1.0 / (255.0 * stdv[c]);
    shift[c] = -mean[c] / stdv[c];
    fs[c] = (float)scale[c];
    fb[c] = (float)shift[c];
  }
  int64_t hwc[3] = {H, W, 3}, chw[3] = {3, H, W}, perm[3] = {2, 0, 1};
  tensor_t *img = NULL, *view = NULL, *out = NULL;
  if (tensor_empty(hwc, 3, TENSOR_UINT8, &img) != TENSOR_OK) die("empty");
  uint8_t *px = tensor_data_ptr(img);
  for (int64_t i = 0; i < H * W * 3; i++) px[i] = (uint8_t)(i * 2654435761u >> 24);
  if (tensor_permute(img, perm, 3, &view) != TENSOR_OK) die("permute");
  if (tensor_empty(chw, 3, TENSOR_FLOAT32, &out) != TENSOR_OK) die("empty");
  float *o = tensor_data_ptr(out);
  const int64_t hw = H * W;
  /* Both write the same reused output; each is checked against the other once. */
  if (tensor_copy_affine_(out, view, 0, scale, shift, 3) != TENSOR_OK) die("copy_affine_");
  float *ref = malloc((size_t)(3 * hw) * sizeof(float));
  if (!ref) die("malloc");
  hand(ref, px, hw, fs, fb);
  if (memcmp(ref, o, (size_t)(3 * hw) * sizeof(float)) != 0) die("hand loop != copy_affine_");
  free(ref);
  if ((uintptr_t)o % 32 != 0) die("output not 32-byte aligned");
  double t_ours = 1e30, t_hand = 1e30, t_nt = 1e30, t_set = 1e30;
  for (int r = 0; r < rounds; r++) {
    double t0 = now_ms();
    if (tensor_copy_affine_(out, view, 0, scale, shift, 3) != TENSOR_OK) die("copy_affine_");
    double t1 = now_ms();
    hand(o, px, hw, fs, fb);
    __asm__ volatile("" : : "r"(o) : "memory");
    double t2 = now_ms();
    if (t1 - t0 < t_ours) t_ours = t1 - t0;
    if (t2 - t1 < t_hand) t_hand = t2 - t1;
  }
  /* The floors after the pair's rounds (a streaming fill evicts the output from cache,
   * which would change what the pair measures). */
  for (int r = 0; r < rounds; r++) {
    double t2 = now_ms();
    nt_fill(o, 3 * hw);
    double t3 = now_ms();
    memset(o, 0, (size_t)(3 * hw) * sizeof(float));
    __asm__ volatile("" : : "r"(o) : "memory");
    double t4 = now_ms();
    if (t3 - t2 < t_nt) t_nt = t3 - t2;
    if (t4 - t3 < t_set) t_set = t4 - t3;
  }
  printf("| %-5s %4lldx%-4lld | %7.1f MiB | %8.3f | %8.3f | %5.2fx | %8.3f | %8.3f |\n", name,
         (long long)H, (long long)W, 3.0 * (double)hw * 4 / (1 << 20), t_ours, t_hand,
         t_ours / t_hand, t_nt, t_set);
  tensor_release(out);
  tensor_release(view);
  tensor_release(img);
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 21;
  long l3 = -1;
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  if (f) {
    if (fscanf(f, "%ld", &l3) != 1) l3 = -1;
    fclose(f);
  }
  printf("uint8 HWC -> float32 CHW normalized, output reused, best of %d (CPU time); "
         "L3 (sysfs index3) %ld KiB; malloc pair %.1f ns\n",
         rounds, l3, malloc_pair_ns());
  printf("| frame          |      output | affine ms | hand ms | ratio | NT fill ms | memset ms |\n");
  printf("|----------------|------------:|---------:|--------:|------:|---------:|---------:|\n");
  one("720p", 720, 1280, rounds);
  one("1080p", 1080, 1920, rounds);
  one("4K", 2160, 3840, rounds);
  printf("malloc pair after: %.1f ns\n", malloc_pair_ns());
  return 0;
}
