/* Times one model through libtensor_aoti: load time, the median of N runs (after 3 warm-up
 * runs) on the saved inputs, and the process's peak RSS. Prints one line:
 * "load_ms run_us rss_kb". Usage: bench_run MODEL.pt2 N CL INPUT.npy...  (CL: 1 when the
 * inputs are channels-last) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tensor.h"
#include "tensor_aoti.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static long rss_kb(void) {
  char line[256];
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  if (f) fclose(f);
  return kb;
}

int main(int argc, char **argv) {
  tensor_aoti_model_t *m = NULL;
  tensor_t *in[16], *out[16];
  int n, nin = argc - 4, i, k, cl;
  double t0, load, *times;
  if (argc < 4 || nin > 16) return 2;
  n = atoi(argv[2]);
  cl = atoi(argv[3]);
  t0 = now();
  if (tensor_aoti_load(argv[1], &m) != TENSOR_OK) {
    fprintf(stderr, "%s\n", tensor_aoti_last_error());
    return 1;
  }
  load = now() - t0;
  for (i = 0; i < nin; i++) {
    tensor_t *t = NULL;
    if (tensor_load_npy(argv[4 + i], TENSOR_MAP_PRIVATE, &t) != TENSOR_OK) return 1;
    if (cl) {
      tensor_contiguous(t, TENSOR_CHANNELS_LAST, &in[i]);
      tensor_release(t);
    } else {
      in[i] = t;
    }
  }
  times = malloc(sizeof(double) * (size_t)n);
  for (k = -3; k < n; k++) {
    size_t j, nout = tensor_aoti_num_outputs(m);
    t0 = now();
    if (tensor_aoti_run(m, in, (size_t)nin, out, nout) != TENSOR_OK) {
      fprintf(stderr, "%s\n", tensor_aoti_last_error());
      return 1;
    }
    if (k >= 0) times[k] = now() - t0;
    for (j = 0; j < nout; j++) tensor_release(out[j]);
  }
  qsort(times, (size_t)n, sizeof(double), cmp);
  printf("%.3f %.3f %ld\n", load * 1e3, times[n / 2] * 1e6, rss_kb());
  for (i = 0; i < nin; i++) tensor_release(in[i]);
  tensor_aoti_release(m);
  free(times);
  return 0;
}
