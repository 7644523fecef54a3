/* The libtensor_aoti side of the AOTI benchmark (aoti/bench/bench.py), a C host:
 *   bench_run MODEL.pt2 INPUT.npy...      (threads: OMP_NUM_THREADS)
 * loads the model and the inputs, runs once and prints "ready T_FIRST LOAD_MS" (T_FIRST: the
 * CLOCK_MONOTONIC seconds at which the first output was there); then for each line "r" on
 * stdin runs once and prints the run's nanoseconds, and for "q" prints the process's peak
 * RSS in kB and exits. BENCH_SAVE=PREFIX writes the first run's outputs to PREFIX<i>.npy.
 * Same protocol as bench_libtorch.cpp, plus "g": the host's noise gauge, the nanoseconds of
 * one malloc(160)/free pair (BENCHMARKS.md), the mean of 100000. `bench_run -` loads no
 * model and answers only "g" (and "q"). */
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

static long rss_kb(void) {
  char line[256];
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  if (f) fclose(f);
  return kb;
}

static void *volatile sink;

static double malloc_pair_ns(void) {
  int k;
  double t0 = now();
  for (k = 0; k < 100000; k++) {
    sink = malloc(160);
    free(sink);
  }
  return (now() - t0) * 1e9 / 100000;
}

static int run(tensor_aoti_model_t *m, tensor_t **in, size_t nin, tensor_t **out, size_t nout) {
  if (tensor_aoti_run(m, in, nin, out, nout) != TENSOR_OK) {
    fprintf(stderr, "bench_run: %s\n", tensor_aoti_last_error());
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  tensor_aoti_model_t *m = NULL;
  tensor_t *in[16], *out[16];
  size_t nin = (size_t)argc - 2, nout, i;
  double t0, load, first;
  const char *prefix = getenv("BENCH_SAVE");
  char cmd[16];
  if (argc < 2 || nin > 16) return 2;
  if (strcmp(argv[1], "-") == 0) {
    while (fgets(cmd, sizeof cmd, stdin) && cmd[0] == 'g') {
      printf("%.2f\n", malloc_pair_ns());
      fflush(stdout);
    }
    return 0;
  }
  t0 = now();
  if (tensor_aoti_load(argv[1], &m) != TENSOR_OK) {
    fprintf(stderr, "bench_run: %s\n", tensor_aoti_last_error());
    return 1;
  }
  load = now() - t0;
  nout = tensor_aoti_num_outputs(m);
  if (nout > 16) return 2;
  for (i = 0; i < nin; i++)
    if (tensor_load_npy(argv[2 + i], TENSOR_MAP_PRIVATE, &in[i]) != TENSOR_OK) {
      fprintf(stderr, "bench_run: %s\n", tensor_last_error());
      return 1;
    }
  if (run(m, in, nin, out, nout)) return 1;
  first = now();
  for (i = 0; i < nout; i++) {
    if (prefix) {
      char path[4096];
      snprintf(path, sizeof path, "%s%zu.npy", prefix, i);
      if (tensor_save_npy(path, out[i]) != TENSOR_OK) {
        fprintf(stderr, "bench_run: %s\n", tensor_last_error());
        return 1;
      }
    }
    tensor_release(out[i]);
  }
  printf("ready %.6f %.3f\n", first, load * 1e3);
  fflush(stdout);
  while (fgets(cmd, sizeof cmd, stdin)) {
    if (cmd[0] == 'r') {
      double dt;
      t0 = now();
      if (run(m, in, nin, out, nout)) return 1;
      dt = now() - t0;
      for (i = 0; i < nout; i++) tensor_release(out[i]);
      printf("%.0f\n", dt * 1e9);
    } else if (cmd[0] == 'g') {
      printf("%.2f\n", malloc_pair_ns());
    } else {
      printf("%ld\n", rss_kb());
      break;
    }
    fflush(stdout);
  }
  for (i = 0; i < nin; i++) tensor_release(in[i]);
  tensor_aoti_release(m);
  return 0;
}
