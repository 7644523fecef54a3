/* The float8 conversions of bench_convert through libtensor.so and through libtorch's C++
 * API (the torch wheel's headers and libraries) in the same run: for each pair, rounds
 * alternate memcpy of the larger side's bytes between two warm buffers, libtensor's
 * tensor_copy_ into a preallocated output, libtorch's dst.copy_(src) into one,
 * libtensor's tensor_to_dtype + release and libtorch's src.to(dtype); best round of each,
 * in this thread's CPU time (the host is loaded), both libraries on one thread. The
 * outputs are compared byte for byte. A benchmark only: nothing here is a test.
 *
 * Usage: bench_torch_convert [n_elements [rounds]]   (defaults 16M, 11)
 * Build and run: benches/c/run.sh torch   (needs the CI venv's torch, see BENCHMARKS.md) */
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <vector>

#include "tensor.h"

#ifndef TORCH_VER
#define TORCH_VER "(version not given)"
#endif

static double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *volatile sink;
static volatile size_t malloc_size = 160;

static void check(tensor_status_t st, const char *what) {
  if (st != TENSOR_OK) {
    fprintf(stderr, "%s failed: %s\n", what, tensor_last_error());
    exit(1);
  }
}

static at::ScalarType torch_dtype(tensor_dtype_t d) {
  switch (d) {
  case TENSOR_FLOAT32:
    return at::kFloat;
  case TENSOR_BFLOAT16:
    return at::kBFloat16;
  case TENSOR_FLOAT8_E4M3FN:
    return at::kFloat8_e4m3fn;
  case TENSOR_FLOAT8_E5M2:
    return at::kFloat8_e5m2;
  default:
    fprintf(stderr, "no torch dtype for %d\n", (int)d);
    exit(1);
  }
}

/* libtensor tensor -> an at::Tensor over the same bytes (borrowed: x outlives it). */
static at::Tensor view_of(tensor_t *x) {
  return at::from_blob(tensor_data_ptr(x), {tensor_numel(x)},
                       at::TensorOptions().dtype(torch_dtype(tensor_dtype(x))));
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 16 << 20;
  int rounds = argc > 2 ? atoi(argv[2]) : 11;
  if (n < 1 || rounds < 1) {
    fprintf(stderr, "usage: %s [n_elements >= 1 [rounds >= 1]]\n", argv[0]);
    return 2;
  }
  at::set_num_threads(1);
  check(tensor_set_copy_threads(1, nullptr), "set_copy_threads");
  tensor_t *f = nullptr, *bf = nullptr, *e4 = nullptr, *e5 = nullptr;
  check(tensor_empty(&n, 1, TENSOR_FLOAT32, &f), "empty");
  float *p = (float *)tensor_data_ptr(f);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)((uint32_t)i * 2654435761u % 100000u) / 200.0f - 250.0f;
  check(tensor_to_dtype(f, TENSOR_BFLOAT16, &bf), "to bf16");
  check(tensor_to_dtype(f, TENSOR_FLOAT8_E4M3FN, &e4), "to e4m3fn");
  check(tensor_to_dtype(f, TENSOR_FLOAT8_E5M2, &e5), "to e5m2");
  size_t maxbytes = (size_t)n * 4;
  char *a = (char *)malloc(maxbytes), *b = (char *)malloc(maxbytes);
  if (!a || !b) return 1;
  memset(a, 1, maxbytes);
  memset(b, 2, maxbytes);

  double pair_ns = 1e30;
  for (int r = 0; r < rounds; r++) {
    timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 20000; i++) {
      sink = malloc(malloc_size);
      free(sink);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 20000.0;
    pair_ns = std::min(pair_ns, ns);
  }
  printf("libtensor vs libtorch %s, float8 conversions of %lld elements, 1 thread each, best of "
         "%d alternating rounds, thread CPU ms; malloc(160)+free pair %.1f ns\n",
         TORCH_VER, (long long)n, rounds, pair_ns);
  printf("x memcpy = memcpy of the larger side (warm buffers) / the op; torch / libtensor = "
         "libtorch's time / libtensor's\n");
  printf("| pair | libtensor copy_ | x memcpy | torch copy_ | x memcpy | torch / libtensor | "
         "libtensor to | torch .to | torch / libtensor | memcpy ms | same bytes |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");

  struct Pair {
    tensor_t *src;
    tensor_dtype_t dst;
  };
  const Pair pairs[] = {{f, TENSOR_FLOAT8_E4M3FN}, {e4, TENSOR_FLOAT32},
                        {bf, TENSOR_FLOAT8_E4M3FN}, {e4, TENSOR_BFLOAT16},
                        {bf, TENSOR_FLOAT8_E5M2},   {e5, TENSOR_BFLOAT16}};
  for (const Pair &pr : pairs) {
    tensor_t *x = pr.src;
    size_t sb = (size_t)n * tensor_itemsize(x), db = (size_t)n * tensor_dtype_itemsize(pr.dst);
    size_t bytes = std::max(sb, db);
    tensor_t *dst = nullptr;
    check(tensor_empty(&n, 1, pr.dst, &dst), "empty dst");
    check(tensor_copy_(dst, x), "copy_"); /* touched */
    at::Tensor tx = view_of(x);
    at::Tensor tdst = at::empty({n}, at::TensorOptions().dtype(torch_dtype(pr.dst)));
    tdst.copy_(tx); /* touched */
    at::ScalarType tdt = torch_dtype(pr.dst);
    std::vector<std::function<void()>> ops = {
        [&] { memcpy(b, a, bytes); },
        [&] { check(tensor_copy_(dst, x), "copy_"); },
        [&] { tdst.copy_(tx); },
        [&] {
          tensor_t *out = nullptr;
          check(tensor_to_dtype(x, pr.dst, &out), "to_dtype");
          tensor_release(out);
        },
        [&] {
          at::Tensor t = tx.to(tdt);
          sink = t.data_ptr();
        },
    };
    std::vector<double> best(ops.size(), 1e30);
    for (int r = 0; r < rounds; r++)
      for (size_t k = 0; k < ops.size(); k++) {
        double t0 = cpu_ms();
        ops[k]();
        best[k] = std::min(best[k], cpu_ms() - t0);
      }
    bool same = memcmp(tensor_data_ptr(dst), tdst.data_ptr(), db) == 0;
    char name[64];
    snprintf(name, sizeof name, "%s -> %s", tensor_dtype_name(tensor_dtype(x)),
             tensor_dtype_name(pr.dst));
    printf("| %s | %.2f | %.2fx | %.2f | %.2fx | %.2fx | %.2f | %.2f | %.2fx | %.2f | %s |\n", name,
           best[1], best[0] / best[1], best[2], best[0] / best[2], best[2] / best[1], best[3],
           best[4], best[4] / best[3], best[0], same ? "yes" : "NO");
    tensor_release(dst);
  }
  tensor_release(f);
  tensor_release(bf);
  tensor_release(e4);
  tensor_release(e5);
  free(a);
  free(b);
  return 0;
}
