/* The view ops of bench_views, through libtensor.so and through libtorch's C++ API (the
 * torch wheel's headers and libraries), in the same run: rounds of every op interleaved,
 * best round reported, ratios to a malloc(160)/free pair measured in the same rounds.
 * libtorch runs under c10::InferenceMode (its fastest view path: no version counter, no
 * autograd) and in its default mode. A benchmark only: nothing here is a test.
 *
 * Usage: bench_torch_views [iters_per_round [rounds]]   (defaults 20000, 51)
 * Build and run: benches/c/run.sh torch   (needs the CI venv's torch, see BENCHMARKS.md) */
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tensor.h"

#ifndef TORCH_VER
#define TORCH_VER "(version not given)"
#endif

static void *volatile sink;
static volatile size_t malloc_size = 160;
static int status_acc;

static double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Bench {
  std::string name;
  std::function<void(long)> run;
};

/* libtensor: the op, then tensor_release of its result. */
template <class F> static std::function<void(long)> ours(F op) {
  return [op](long n) {
    for (long i = 0; i < n; i++) {
      tensor_t *out = nullptr;
      status_acc |= (int)op(&out);
      tensor_release(out);
    }
  };
}

/* libtorch: the op's result destroyed at the end of each iteration. */
template <class F> static std::function<void(long)> theirs(F op) {
  return [op](long n) {
    for (long i = 0; i < n; i++) {
      at::Tensor t = op();
      sink = t.unsafeGetTensorImpl();
    }
  };
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  int rounds = argc > 2 ? atoi(argv[2]) : 51;
  if (iters < 1 || rounds < 1) {
    fprintf(stderr, "usage: %s [iters_per_round >= 1 [rounds >= 1]]\n", argv[0]);
    return 2;
  }
  at::set_num_threads(1);
  const int64_t sizes4[4] = {8, 16, 32, 32}, sizes1[4] = {8, 1, 32, 32}, flat[1] = {-1},
                perm[4] = {0, 2, 3, 1};
  tensor_t *base = nullptr, *base1 = nullptr;
  if (tensor_empty(sizes4, 4, TENSOR_FLOAT32, &base) != TENSOR_OK ||
      tensor_empty(sizes1, 4, TENSOR_FLOAT32, &base1) != TENSOR_OK)
    return 1;
  at::Tensor tb = at::empty({8, 16, 32, 32}), tb1 = at::empty({8, 1, 32, 32});
  at::Tensor ib, ib1;
  {
    c10::InferenceMode guard;
    ib = at::empty({8, 16, 32, 32});
    ib1 = at::empty({8, 1, 32, 32});
  }

  /* The torch ops, run on (t, t1) in whichever mode the caller set. */
  auto torch_ops = [](at::Tensor &t, at::Tensor &t1) {
    std::vector<std::pair<std::string, std::function<at::Tensor()>>> v;
    v.push_back({"view(-1)", [&t] { return t.view({-1}); }});
    v.push_back({"transpose(1,3)", [&t] { return t.transpose(1, 3); }});
    v.push_back({"slice(2,4,20,2)", [&t] { return t.slice(2, 4, 20, 2); }});
    v.push_back({"select(1,5)", [&t] { return t.select(1, 5); }});
    v.push_back({"unsqueeze(2)", [&t] { return t.unsqueeze(2); }});
    v.push_back({"expand(8,16,32,32)", [&t1] { return t1.expand({8, 16, 32, 32}); }});
    v.push_back({"permute(0,2,3,1)", [&t] { return t.permute({0, 2, 3, 1}); }});
    return v;
  };

  std::vector<Bench> benches;
  benches.push_back({"malloc(160)+free", [](long n) {
                       for (long i = 0; i < n; i++) {
                         sink = malloc(malloc_size);
                         free(sink);
                       }
                     }});
  std::vector<std::pair<std::string, std::function<void(long)>>> lt = {
      {"view(-1)", ours([&](tensor_t **o) { return tensor_view(base, flat, 1, o); })},
      {"transpose(1,3)", ours([&](tensor_t **o) { return tensor_transpose(base, 1, 3, o); })},
      {"slice(2,4,20,2)", ours([&](tensor_t **o) { return tensor_slice(base, 2, 4, 20, 2, o); })},
      {"select(1,5)", ours([&](tensor_t **o) { return tensor_select(base, 1, 5, o); })},
      {"unsqueeze(2)", ours([&](tensor_t **o) { return tensor_unsqueeze(base, 2, o); })},
      {"expand(8,16,32,32)", ours([&](tensor_t **o) { return tensor_expand(base1, sizes4, 4, o); })},
      {"permute(0,2,3,1)", ours([&](tensor_t **o) { return tensor_permute(base, perm, 4, o); })},
  };
  auto inference = torch_ops(ib, ib1);
  auto plain = torch_ops(tb, tb1);
  size_t nops = lt.size();
  for (size_t k = 0; k < nops; k++) {
    benches.push_back({"libtensor " + lt[k].first, lt[k].second});
    auto iop = inference[k].second;
    benches.push_back({"torch inference " + inference[k].first, [iop](long n) {
                         c10::InferenceMode guard;
                         theirs(iop)(n);
                       }});
    benches.push_back({"torch default " + plain[k].first, theirs(plain[k].second)});
  }

  for (auto &b : benches) b.run(1000); /* warm-up */
  if (status_acc != 0) {
    fprintf(stderr, "a libtensor call failed: %s\n", tensor_last_error());
    return 1;
  }
  std::vector<std::vector<double>> ns(benches.size());
  for (int r = 0; r < rounds; r++)
    for (size_t b = 0; b < benches.size(); b++) {
      double t0 = now_ns();
      benches[b].run(iters);
      ns[b].push_back((now_ns() - t0) / (double)iters);
    }
  if (status_acc != 0) {
    fprintf(stderr, "a libtensor call failed: %s\n", tensor_last_error());
    return 1;
  }
  std::vector<double> best(benches.size());
  for (size_t b = 0; b < benches.size(); b++) best[b] = *std::min_element(ns[b].begin(), ns[b].end());
  printf("libtensor vs libtorch %s, %ld calls per round, %d rounds; best round, ratio to the "
         "malloc pair (%.1f ns)\n",
         TORCH_VER, iters, rounds, best[0]);
  printf("| op + release | libtensor ns | x malloc | torch inference ns | x malloc | torch default ns | x malloc | torch inference / libtensor |\n");
  printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t k = 0; k < nops; k++) {
    double a = best[1 + 3 * k], i = best[2 + 3 * k], d = best[3 + 3 * k];
    printf("| %s | %.1f | %.2fx | %.1f | %.2fx | %.1f | %.2fx | %.2fx |\n", lt[k].first.c_str(), a,
           a / best[0], i, i / best[0], d, d / best[0], i / a);
  }
  tensor_release(base1);
  tensor_release(base);
  return 0;
}
