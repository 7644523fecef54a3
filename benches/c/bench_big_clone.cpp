// Big clones, past the caches: tensor_clone + tensor_release of a contiguous float32 tensor
// of 64 MiB, 256 MiB and 1 GiB through the real libtensor.so, against, in the same process
// and alternating within each round: malloc + memcpy + free of the same bytes (a fresh
// buffer each time, as a clone's output is), memcpy into an already-touched buffer (the
// floor), and, when built with libtorch (-DWITH_TORCH: benches/c/run.sh torch),
// at::Tensor::clone() of the same data (one intra-op thread, InferenceMode). Each row is
// the best of ROUNDS of wall time; ratios are t(libtensor clone) / t(anchor), <= 1 means the
// clone is at least as fast. Also printed: the THP settings, the /proc/vmstat compact_stall
// count each contender added over all its rounds, and a malloc(160)/free pair in ns (the
// host's noise gauge).
// Usage: bench_big_clone [rounds]   Build and run: benches/c/run.sh bigclone (or torch)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef WITH_TORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#endif

#include "tensor.h"

static double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char* what) {
  fprintf(stderr, "%s failed: %s\n", what, tensor_last_error());
  exit(1);
}

static long compact_stalls() {
  FILE* f = fopen("/proc/vmstat", "r");
  if (!f) return -1;
  char key[64];
  long v = -1, got = -1;
  while (fscanf(f, "%63s %ld", key, &v) == 2)
    if (strcmp(key, "compact_stall") == 0) got = v;
  fclose(f);
  return got;
}

static void print_file(const char* path) {
  char buf[256] = "";
  FILE* f = fopen(path, "r");
  if (f) {
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = 0;
  printf("%s: %s\n", path, buf[0] ? buf : "(unreadable)");
}

static double malloc_pair_ns() {
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = now_ms();
    for (int i = 0; i < 200000; i++) {
      void* volatile p = malloc(160);
      free(p);
    }
    double t = (now_ms() - t0) * 1e6 / 200000;
    if (t < best) best = t;
  }
  return best;
}

static void escape(void* p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static void row(int64_t n, int rounds) {
  const size_t nbytes = static_cast<size_t>(n) * 4;
  tensor_t* x = nullptr;
  if (tensor_empty(&n, 1, TENSOR_FLOAT32, &x) != TENSOR_OK) die("empty");
  char* src = static_cast<char*>(tensor_data_ptr(x));
  memset(src, 1, nbytes);
  char* touched = static_cast<char*>(malloc(nbytes));
  if (!touched) die("malloc");
  memset(touched, 2, nbytes);
#ifdef WITH_TORCH
  at::Tensor tx = at::from_blob(src, {n}, at::kFloat);
#endif
  double b_ours = 1e30, b_mmf = 1e30, b_mc = 1e30;
  long st_ours = 0, st_mmf = 0;
#ifdef WITH_TORCH
  double b_torch = 1e30;
  long st_torch = 0;
#endif
  for (int r = 0; r < rounds; r++) {
    long s0 = compact_stalls();
    double t0 = now_ms();
    tensor_t* out = nullptr;
    if (tensor_clone(x, TENSOR_PRESERVE_FORMAT, &out) != TENSOR_OK) die("clone");
    tensor_release(out);
    double t1 = now_ms();
    long s1 = compact_stalls();
    char* p = static_cast<char*>(malloc(nbytes));
    if (!p) die("malloc");
    memcpy(p, src, nbytes);
    escape(p);
    free(p);
    double t2 = now_ms();
    long s2 = compact_stalls();
    memcpy(touched, src, nbytes);
    escape(touched);
    double t3 = now_ms();
#ifdef WITH_TORCH
    {
      long s3 = compact_stalls();
      double t4 = now_ms();
      {
        at::Tensor c = tx.clone();
        escape(c.data_ptr());
      }
      double t5 = now_ms();
      st_torch += compact_stalls() - s3;
      if (t5 - t4 < b_torch) b_torch = t5 - t4;
    }
#endif
    st_ours += s1 - s0;
    st_mmf += s2 - s1;
    if (t1 - t0 < b_ours) b_ours = t1 - t0;
    if (t2 - t1 < b_mmf) b_mmf = t2 - t1;
    if (t3 - t2 < b_mc) b_mc = t3 - t2;
  }
  printf("| %5zu MiB | %8.1f | %8.1f | %5.2fx | %8.1f | %5.2fx |", nbytes >> 20, b_ours, b_mmf,
         b_ours / b_mmf, b_mc, b_ours / b_mc);
#ifdef WITH_TORCH
  printf(" %8.1f | %5.2fx |", b_torch, b_ours / b_torch);
#endif
  printf(" %ld / %ld", st_ours, st_mmf);
#ifdef WITH_TORCH
  printf(" / %ld", st_torch);
#endif
  printf(" |\n");
  free(touched);
  tensor_release(x);
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 7;
#ifdef WITH_TORCH
  at::set_num_threads(1);
  c10::InferenceMode guard;
#endif
  print_file("/sys/kernel/mm/transparent_hugepage/enabled");
  print_file("/sys/kernel/mm/transparent_hugepage/defrag");
  printf("clone + release of contiguous float32, best of %d (wall ms); malloc pair %.1f ns\n", rounds,
         malloc_pair_ns());
  printf("| size      | clone ms | m+c+f ms | /m+c+f | memcpy ms | /memcpy |");
#ifdef WITH_TORCH
  printf(" torch ms | /torch |");
#endif
  printf(" compact_stall ours / m+c+f");
#ifdef WITH_TORCH
  printf(" / torch");
#endif
  printf(" |\n");
  row(int64_t(16) << 20, rounds);   // 64 MiB (4096x4096)
  row(int64_t(64) << 20, rounds);   // 256 MiB
  row(int64_t(256) << 20, rounds);  // 1 GiB
  printf("malloc pair after: %.1f ns\n", malloc_pair_ns());
  return 0;
}
