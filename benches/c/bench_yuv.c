/* Video frames to a normalized float32 RGB CHW tensor, single thread, output reused:
 * tensor_copy_yuv_affine_ (one pass) against libswscale's sws_scale to packed RGB24
 * (SWS_POINT) followed by tensor_copy_affine_ (HWC -> CHW, /255, -mean, /std), against a
 * hand-written C loop doing the same conversion and normalization (this file is built at
 * -O3 -march=native), and against memcpy of the output's bytes; at 1080p and 4K, YUV420P
 * (I420) and NV12. Plus tensor_copy_affine_ex with a BGR -> RGB map against the unmapped
 * tensor_copy_affine_ (uint8 HWC -> float32 CHW). Rounds interleave the contenders; each
 * row gives the best and the median of ROUNDS of this thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID: time slices lost to other processes on a loaded machine do not
 * count), each over the one-pass call's (or, for the channel map, over the unmapped call's)
 * in the same run.
 * The two write-floor rows only write the output's bytes (memset; a non-temporal-store
 * fill): no conversion into that output can take less, so (sws_scale + normalize) / floor
 * bounds the ratio any one-pass call can reach against sws_scale + normalize.
 * Usage: bench_yuv [rounds [cold|warm [rows]]] (cold, the default: caches evicted before
 * each contender, see evict_caches; rows: which frames, in that order, default abcdm, see
 * main)   Build and run: benches/c/run.sh yuv   (BENCH_YUV_ARGS="15 warm c") */
#define _POSIX_C_SOURCE 200809L
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "tensor.h"

/* This thread's CPU time: on a loaded machine, wall time mostly measures the scheduler. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, tensor_last_error());
  exit(1);
}
#define TRY(x) \
  if ((x) != TENSOR_OK) die(#x)

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* The best (smallest) of n: the least disturbed round. */
static double best(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[0];
}

static const double MEAN[3] = {0.485, 0.456, 0.406}, STD[3] = {0.229, 0.224, 0.225};

/* The hand-written loop, written to vectorize: BT.709 limited range, the header's formula
 * in float32, per chroma sample the three chroma terms, then its two pixels of the row;
 * restrict pointers, constants in locals, the chroma step (1: I420, 2: NV12) a constant of
 * each instantiation. Into three contiguous float planes. */
static inline void hand_rows(int w, int h, const uint8_t *restrict y, int ly, const uint8_t *restrict u,
                             const uint8_t *restrict v, int lc, const int cs, float *restrict out,
                             const float *sc, const float *sh) {
  const float ky = 255.0f / 219, kc = 255.0f / 224;
  const float rv = 1.5748f * kc, bu = 1.8556f * kc, gu = -0.187324f * kc, gv = -0.468124f * kc;
  const float s0 = sc[0], s1 = sc[1], s2 = sc[2], h0 = sh[0], h1 = sh[1], h2 = sh[2];
  const size_t plane = (size_t)w * h;
  for (int i = 0; i < h; i++) {
    const uint8_t *restrict yr = y + (size_t)i * ly;
    const uint8_t *restrict ur = u + (size_t)(i / 2) * lc, *restrict vr = v + (size_t)(i / 2) * lc;
    float *restrict r = out + (size_t)i * w, *restrict g = r + plane, *restrict b = r + 2 * plane;
#define HAND_PIXEL(j, cr, cg, cb)                              \
  do {                                                         \
    const float yy = ((float)yr[j] - 16.0f) * ky;              \
    float x0 = yy + (cr), x1 = yy + (cg), x2 = yy + (cb);      \
    x0 = x0 > 0.0f ? x0 : 0.0f;                                \
    x0 = x0 < 255.0f ? x0 : 255.0f;                            \
    x1 = x1 > 0.0f ? x1 : 0.0f;                                \
    x1 = x1 < 255.0f ? x1 : 255.0f;                            \
    x2 = x2 > 0.0f ? x2 : 0.0f;                                \
    x2 = x2 < 255.0f ? x2 : 255.0f;                            \
    r[j] = x0 * s0 + h0;                                       \
    g[j] = x1 * s1 + h1;                                       \
    b[j] = x2 * s2 + h2;                                       \
  } while (0)
    const int pairs = w / 2;
    for (int k = 0; k < pairs; k++) {
      const float uu = (float)ur[k * cs] - 128.0f, vv = (float)vr[k * cs] - 128.0f;
      const float cr = rv * vv, cg = gu * uu + gv * vv, cb = bu * uu;
      HAND_PIXEL(2 * k, cr, cg, cb);
      HAND_PIXEL(2 * k + 1, cr, cg, cb);
    }
    if (w & 1) {
      const float uu = (float)ur[pairs * cs] - 128.0f, vv = (float)vr[pairs * cs] - 128.0f;
      HAND_PIXEL(w - 1, rv * vv, gu * uu + gv * vv, bu * uu);
    }
  }
}
static void hand_i420(int w, int h, const uint8_t *y, int ly, const uint8_t *u, const uint8_t *v, int lc, float *out,
                      const float *sc, const float *sh) {
  hand_rows(w, h, y, ly, u, v, lc, 1, out, sc, sh);
}
static void hand_nv12(int w, int h, const uint8_t *y, int ly, const uint8_t *uv, int lc, float *out, const float *sc,
                      const float *sh) {
  hand_rows(w, h, y, ly, uv, uv + 1, lc, 2, out, sc, sh);
}

/* The write floor: the cheapest way found to only write `n` bytes (a multiple of 64, at a
 * 64-byte aligned address) with non-temporal stores, the widest this build's flags allow;
 * the other floor row is memset. No conversion can write its output faster. Both write a
 * value that is not zero: on this host streaming stores of zero lines take half the time of
 * any other value (a 1080p output: 0.45-0.59 against 0.90-0.98 ms), which a normalized
 * image's output never is. */
#if defined(__AVX512F__)
#define NT_NAME "non-temporal fill (AVX-512) of output"
static void nt_fill(void *p, size_t n, float x) {
  const __m512 v = _mm512_set1_ps(x);
  for (char *q = p, *e = q + n; q < e; q += 64) _mm512_stream_ps((float *)q, v);
  _mm_sfence();
}
#elif defined(__AVX2__)
#define NT_NAME "non-temporal fill (AVX2) of output"
static void nt_fill(void *p, size_t n, float x) {
  const __m256 v = _mm256_set1_ps(x);
  for (char *q = p, *e = q + n; q < e; q += 64) {
    _mm256_stream_ps((float *)q, v);
    _mm256_stream_ps((float *)(q + 32), v);
  }
  _mm_sfence();
}
#elif defined(__SSE2__)
#define NT_NAME "non-temporal fill (SSE2) of output"
static void nt_fill(void *p, size_t n, float x) {
  const __m128 v = _mm_set1_ps(x);
  for (char *q = p, *e = q + n; q < e; q += 16) _mm_stream_ps((float *)q, v);
  _mm_sfence();
}
#else
#define NT_NAME "plain fill of the output (no SIMD)"
static void nt_fill(void *p, size_t n, float x) {
  float *q = p;
  for (size_t i = 0; i < n / sizeof(float); i++) q[i] = x;
}
#endif

/* cold (the default): before each timed contender, the caches are filled with other data by
 * reading a buffer of twice the last-level cache (32 MiB here; clean lines, so evicting
 * them later costs nothing), so no contender finds the output, the planes or the packed
 * RGB buffer left in the cache by the previous one. warm: no eviction (the earlier method:
 * what each contender finds depends on what ran before it). */
static int cold = 1;
static volatile uint64_t evict_sink;
static void evict_caches(void) {
  static uint64_t *buf = NULL;
  const size_t n = (size_t)64 << 20;
  if (!buf) {
    buf = malloc(n);
    if (!buf) exit(1);
    memset(buf, 1, n);
  }
  uint64_t s = 0;
  for (size_t i = 0; i < n / 8; i += 8) s += buf[i]; /* one load per 64-byte line */
  evict_sink = s;
}

static uint32_t rng = 1;
static uint8_t rnd(int lo, int n) {
  rng = rng * 1664525u + 1013904223u;
  return (uint8_t)(lo + (rng >> 24) % n);
}

/* A plane as a decoder allocates it (FFmpeg's av_frame_get_buffer: 64-byte aligned data
 * and line sizes). Not malloc: once the 1080p rows free their buffers, glibc's dynamic mmap
 * threshold serves the 4K planes from the heap at 16 mod 64, where the one-pass NV12 call
 * measured up to 2.8x its time on aligned planes (see BENCHMARKS.md). */
static uint8_t *plane_alloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 64, (n + 63) / 64 * 64) != 0) {
    fprintf(stderr, "posix_memalign(%zu) failed\n", n);
    exit(1);
  }
  return p;
}

static void frame_rows(int w, int h, int nv12, int rounds) {
  const tensor_device_t cpu = {1, 0};
  const int ly = (w + 63) / 64 * 64, hc = (h + 1) / 2, wc = (w + 1) / 2;
  const int lc = nv12 ? ly : (wc + 63) / 64 * 64;
  uint8_t *yb = plane_alloc((size_t)ly * h), *ub = plane_alloc((size_t)lc * hc);
  uint8_t *vb = nv12 ? NULL : plane_alloc((size_t)lc * hc); /* NV12: U and V interleaved in ub */
  for (size_t i = 0; i < (size_t)ly * h; i++) yb[i] = rnd(16, 220);
  for (size_t i = 0; i < (size_t)lc * hc; i++) ub[i] = rnd(16, 225);
  for (size_t i = 0; vb && i < (size_t)lc * hc; i++) vb[i] = rnd(16, 225);
  tensor_t *y = NULL, *u = NULL, *v = NULL;
  int64_t ys[2] = {h, w}, ybs[2] = {ly, 1};
  TRY(tensor_from_blob_bytes(yb, ys, ybs, 2, TENSOR_UINT8, cpu, NULL, NULL, &y));
  if (nv12) {
    int64_t s[3] = {hc, wc, 2}, bs[3] = {lc, 2, 1};
    TRY(tensor_from_blob_bytes(ub, s, bs, 3, TENSOR_UINT8, cpu, NULL, NULL, &u));
  } else {
    int64_t s[2] = {hc, wc}, bs[2] = {lc, 1};
    TRY(tensor_from_blob_bytes(ub, s, bs, 2, TENSOR_UINT8, cpu, NULL, NULL, &u));
    TRY(tensor_from_blob_bytes(vb, s, bs, 2, TENSOR_UINT8, cpu, NULL, NULL, &v));
  }
  double sc[3], sh[3];
  float scf[3], shf[3];
  for (int c = 0; c < 3; c++) {
    sc[c] = 1.0 / (255 * STD[c]), sh[c] = -MEAN[c] / STD[c];
    scf[c] = (float)sc[c], shf[c] = (float)sh[c];
  }
  tensor_t *out = NULL, *rgb = NULL, *chw = NULL;
  int64_t cs[3] = {3, h, w}, hwc[3] = {h, w, 3}, perm[3] = {2, 0, 1};
  TRY(tensor_empty(cs, 3, TENSOR_FLOAT32, &out));
  TRY(tensor_empty(hwc, 3, TENSOR_UINT8, &rgb));
  TRY(tensor_permute(rgb, perm, 3, &chw));
  size_t obytes = (size_t)3 * w * h * 4;
  float *hand = malloc(obytes);
  char *mc = malloc(obytes);
  memset(hand, 0, obytes);
  memset(mc, 0, obytes);
  struct SwsContext *sws =
      sws_getContext(w, h, nv12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P, w, h, AV_PIX_FMT_RGB24, SWS_POINT, NULL, NULL, NULL);
  const int *co = sws_getCoefficients(SWS_CS_ITU709);
  sws_setColorspaceDetails(sws, co, 0, co, 1, 0, 1 << 16, 1 << 16);
  const uint8_t *src[4] = {yb, ub, nv12 ? NULL : vb, NULL};
  int sl[4] = {ly, lc, nv12 ? 0 : lc, 0};
  uint8_t *dp[4] = {tensor_data_ptr(rgb), NULL, NULL, NULL};
  int dl[4] = {3 * w, 0, 0, 0};
  const int color = TENSOR_YUV_BT709 | TENSOR_YUV_LIMITED;
  enum { K = 6 };
  double *t[K];
  for (int k = 0; k < K; k++) t[k] = malloc(sizeof(double) * (size_t)rounds);
  void *od = tensor_data_ptr(out); /* tensor_empty: 64-byte aligned, obytes a multiple of 64 */
  for (int r = -1; r < rounds; r++) { /* round -1: warm-up */
    for (int k = 0; k < K; k++) {
      if (cold) evict_caches();
      double t0 = now_ms();
      switch (k) {
        case 0:
          TRY(tensor_copy_yuv_affine_(out, y, u, v, color, 0, sc, sh, 3));
          break;
        case 1:
          sws_scale(sws, src, sl, 0, h, dp, dl);
          TRY(tensor_copy_affine_(out, chw, 0, sc, sh, 3));
          break;
        case 2:
          if (nv12)
            hand_nv12(w, h, yb, ly, ub, lc, hand, scf, shf);
          else
            hand_i420(w, h, yb, ly, ub, vb, lc, hand, scf, shf);
          break;
        case 3:
          memcpy(mc, od, obytes);
          break;
        case 4:
          memset(od, 1 + (r & 0x7f), obytes);
          break;
        default:
          nt_fill(od, obytes, (float)(r + 2));
      }
      double t1 = now_ms();
      if (r >= 0) t[k][r] = t1 - t0;
    }
  }
  /* the hand loop computes what the one-pass call computes (up to float contraction) */
  TRY(tensor_copy_yuv_affine_(out, y, u, v, color, 0, sc, sh, 3));
  const float *o = tensor_data_ptr(out);
  double worst = 0;
  for (size_t i = 0; i < (size_t)3 * w * h; i += 7) {
    double d = o[i] - hand[i];
    if (d < 0) d = -d;
    if (d > worst) worst = d;
  }
  const char *names[K] = {"one pass: tensor_copy_yuv_affine_", "sws_scale RGB24 + tensor_copy_affine_",
                          "hand C loop -O3 -march=native",     "memcpy of the output bytes",
                          "write floor: memset of the output",  "write floor: " NT_NAME};
  double m[K], med[K];
  for (int k = 0; k < K; k++) m[k] = best(t[k], rounds), med[k] = t[k][rounds / 2]; /* best sorts */
  const char *fmt = nv12 ? "NV12" : "YUV420P";
  for (int k = 0; k < K; k++)
    printf("| %dx%d %-7s | %-38s | %8.2f | %6.2fx | %8.2f | %6.2fx |\n", w, h, fmt, names[k], m[k], m[k] / m[0],
           med[k], med[k] / med[0]);
  /* sws_scale + copy_affine_ = t_sws + t_normalize, and t_normalize writes these same output
   * bytes: no one-pass call (which must write them too) can beat it by more than
   * (sws + normalize) / floor. */
  const double floor_ms = m[4] < m[5] ? m[4] : m[5], floor_med = med[4] < med[5] ? med[4] : med[5];
  printf("(%dx%d %s: write floor %.2f ms (%s; median %.2f ms); sws_scale + normalize / floor = %.2fx (medians "
         "%.2fx), the best ratio any one pass could reach (the target needs 2.00x); one pass / floor = %.2fx "
         "(medians %.2fx); one pass vs hand loop max |difference| %.2g)\n",
         w, h, fmt, floor_ms, m[4] < m[5] ? "memset" : "non-temporal fill", floor_med, m[1] / floor_ms,
         med[1] / floor_med, m[0] / floor_ms, med[0] / floor_med, worst);
  for (int k = 0; k < K; k++) free(t[k]);
  sws_freeContext(sws);
  free(mc);
  free(hand);
  tensor_release(chw);
  tensor_release(rgb);
  tensor_release(out);
  tensor_release(v);
  tensor_release(u);
  tensor_release(y);
  free(vb);
  free(ub);
  free(yb);
}

/* tensor_copy_affine_ex with {2, 1, 0} against tensor_copy_affine_: uint8 HWC -> float32 CHW. */
static void channel_map_rows(int w, int h, int rounds) {
  tensor_t *img = NULL, *chw = NULL, *out = NULL;
  int64_t hwc[3] = {h, w, 3}, perm[3] = {2, 0, 1}, cs[3] = {3, h, w};
  TRY(tensor_empty(hwc, 3, TENSOR_UINT8, &img));
  memset(tensor_data_ptr(img), 77, (size_t)3 * w * h);
  TRY(tensor_permute(img, perm, 3, &chw));
  TRY(tensor_empty(cs, 3, TENSOR_FLOAT32, &out));
  double sc[3], sh[3];
  for (int c = 0; c < 3; c++) sc[c] = 1.0 / (255 * STD[c]), sh[c] = -MEAN[c] / STD[c];
  const int64_t bgr[3] = {2, 1, 0};
  double *a = malloc(sizeof(double) * (size_t)rounds), *b = malloc(sizeof(double) * (size_t)rounds);
  for (int r = -1; r < rounds; r++) {
    double t0 = now_ms();
    TRY(tensor_copy_affine_(out, chw, 0, sc, sh, 3));
    double t1 = now_ms();
    TRY(tensor_copy_affine_ex(out, chw, 0, sc, sh, 3, bgr));
    double t2 = now_ms();
    if (r >= 0) a[r] = t1 - t0, b[r] = t2 - t1;
  }
  double ma = best(a, rounds), mb = best(b, rounds);
  double da = a[rounds / 2], db = b[rounds / 2]; /* best sorts */
  printf("| %dx%d uint8 HWC | %-38s | %8.2f | %6.2fx | %8.2f | %6.2fx |\n", w, h, "tensor_copy_affine_ (BGR order kept)",
         ma, 1.0, da, 1.0);
  printf("| %dx%d uint8 HWC | %-38s | %8.2f | %6.2fx | %8.2f | %6.2fx |\n", w, h, "tensor_copy_affine_ex {2, 1, 0} (RGB)",
         mb, mb / ma, db, db / da);
  free(a);
  free(b);
  tensor_release(out);
  tensor_release(chw);
  tensor_release(img);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  if (rounds < 1) rounds = 1;
  if (argc > 2 && strcmp(argv[2], "warm") == 0) cold = 0;
  else if (argc > 2 && strcmp(argv[2], "cold") != 0) {
    fprintf(stderr, "usage: bench_yuv [rounds [cold|warm [rows]]]\n");
    return 2;
  }
  printf("best and median of %d rounds, thread CPU ms, %s; ratio = time / the one-pass call's (channel map: / the "
         "unmapped call's)\n",
         rounds, cold ? "cold caches before each contender" : "warm (no eviction between contenders)");
  printf("| %-17s | %-38s | %8s | %7s | %8s | %7s |\n", "frame", "contender", "best ms", "ratio", "median", "ratio");
  printf("|-------------------|----------------------------------------|---------:|--------:|---------:|--------:|\n");
  /* rows: a = 1080p YUV420P, b = 1080p NV12, c = 4K YUV420P, d = 4K NV12, m = the channel map */
  const char *rows = argc > 3 ? argv[3] : "abcdm";
  for (const char *c = rows; *c; c++) {
    if (*c >= 'a' && *c <= 'd') frame_rows(*c < 'c' ? 1920 : 3840, *c < 'c' ? 1080 : 2160, (*c - 'a') & 1, rounds);
    if (*c == 'm') {
      channel_map_rows(1920, 1080, rounds);
      channel_map_rows(3840, 2160, rounds);
    }
  }
  return 0;
}
