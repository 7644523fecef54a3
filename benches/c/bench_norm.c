/* Image normalization, the video-loop case: a uint8 HWC frame, permuted to CHW (a view),
 * written into one float32 CHW tensor allocated once and reused for every frame, scaled
 * and shifted per channel (ImageNet's 1/(255 std) and -mean/std) by one
 * tensor_copy_affine_ call, against a hand-written C loop computing the same float32
 * formula (x * scale[c] + shift[c], each operation rounded to float32) into the same
 * output. This file is built at -O3 -march=native, so the loop is what the compiler makes
 * of it for this CPU.
 *
 * Contenders, all writing the same output: copy_affine_, the hand loop, and three floors
 * that only write the output's bytes (what no conversion into that output can beat): glibc
 * memset with 0x3f (not 0: on the Zen 4 VM this was measured on, memset with zero took
 * 1.3-1.4 ms at 4K against 3.6 ms with another byte, a zeroing path no float output gets), a
 * fill with plain 32-byte stores and a fill with streaming (non-temporal) stores.
 * Each round runs every contender, in an order rotated from round to round; in the default
 * mode ("self") each contender runs twice in a row and the second run is timed, so it
 * finds the output where its own previous frame left it (in L3 after plain stores, in
 * memory after streaming ones), as in a video loop; mode "alt" times every run with no
 * repeat, so each finds the output where the previous contender left it. Each time is the
 * best of ROUNDS of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID); ratio =
 * t(copy_affine_) / t(hand loop), <= 1.0 means copy_affine_ is at least as fast; floor =
 * the fastest of the three fills. Also printed: a malloc(160)/free pair in ns (the host's
 * noise gauge, before and after) and the L3 size (sysfs, which the library reads too).
 * Usage: bench_norm [rounds [self|alt]]   Build and run: benches/c/run.sh norm */
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

/* The output filled with plain 32-byte stores. */
static void store_fill(float *o, int64_t n) {
  const __m256 v = _mm256_set1_ps(2.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_store_ps(o + i, v);
  for (; i < n; i++) o[i] = 2.0f;
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

enum { OURS, HAND, MEMSET, STORE, NT, NCONT };

struct frame {
  tensor_t *out, *view;
  float *o;
  const uint8_t *px;
  int64_t hw;
  const double *scale, *shift;
  const float *fs, *fb;
};

static void run(const struct frame *f, int k) {
  switch (k) {
    case OURS:
      if (tensor_copy_affine_(f->out, f->view, 0, f->scale, f->shift, 3) != TENSOR_OK)
        die("copy_affine_");
      break;
    case HAND: hand(f->o, f->px, f->hw, f->fs, f->fb); break;
    case MEMSET: memset(f->o, 0x3f, (size_t)(3 * f->hw) * sizeof(float)); break;
    case STORE: store_fill(f->o, 3 * f->hw); break;
    default: nt_fill(f->o, 3 * f->hw); break;
  }
  __asm__ volatile("" : : "r"(f->o) : "memory");
}

static void one(const char *name, int64_t H, int64_t W, int rounds, int self) {
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
  const struct frame f = {out, view, o, px, hw, scale, shift, fs, fb};
  double best[NCONT];
  for (int k = 0; k < NCONT; k++) best[k] = 1e30;
  for (int r = 0; r < rounds; r++) {
    for (int j = 0; j < NCONT; j++) {
      const int k = (r + j) % NCONT;
      if (self) run(&f, k);
      double t0 = now_ms();
      run(&f, k);
      double t = now_ms() - t0;
      if (t < best[k]) best[k] = t;
    }
  }
  double floor = best[MEMSET];
  if (best[STORE] < floor) floor = best[STORE];
  if (best[NT] < floor) floor = best[NT];
  printf("| %-5s | %5.1f MiB | %7.3f | %7.3f | %5.2fx | %7.3f | %7.3f | %7.3f | %5.2fx | %5.2fx |\n",
         name, 3.0 * (double)hw * 4 / (1 << 20), best[OURS], best[HAND], best[OURS] / best[HAND],
         best[MEMSET], best[STORE], best[NT], best[OURS] / floor, best[HAND] / floor);
  tensor_release(out);
  tensor_release(view);
  tensor_release(img);
}

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 21;
  const char *mode = argc > 2 ? argv[2] : "self";
  const int self = strcmp(mode, "self") == 0;
  if (rounds < 1 || (!self && strcmp(mode, "alt") != 0)) {
    fprintf(stderr, "usage: bench_norm [rounds [self|alt]]\n");
    return 2;
  }
  long l3 = -1;
  FILE *fl = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  if (fl) {
    if (fscanf(fl, "%ld", &l3) != 1) l3 = -1;
    fclose(fl);
  }
  printf("uint8 HWC -> float32 CHW normalized, output reused, best of %d (CPU time), mode %s; "
         "L3 (sysfs index3) %ld KiB; malloc pair %.1f ns\n",
         rounds, self ? "self" : "alt", l3, malloc_pair_ns());
  printf("| frame | output | affine ms | hand ms | ratio | memset ms | store fill ms | NT fill ms "
         "| affine / floor | hand / floor |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  one("720p", 720, 1280, rounds, self);
  one("1080p", 1080, 1920, rounds, self);
  one("4K", 2160, 3840, rounds, self);
  printf("malloc pair after: %.1f ns\n", malloc_pair_ns());
  return 0;
}
