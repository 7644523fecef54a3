// Big copies on the host's OpenMP pool instead of threads of libtensor's own
// (tensor_set_copy_executor): with libtorch (or any OpenMP code) in the process, the copies
// then share its threads rather than competing with them.
//
//   executor(ctx, n, task_fn, task_ctx): #pragma omp parallel for over the n parts
//
// The program sets the executor, makes big copies (a transpose made contiguous, float32
// -> float64, a clone and a broadcast copy_), and checks that each equals the single-threaded
// copy and that its parts ran on OpenMP's threads. Called from inside an OpenMP parallel
// region, the executor's own `parallel for` is nested: OpenMP runs it on the calling
// thread alone unless nesting is enabled, which is also correct.
//
// Build and run: cargo test --test c_api examples_run   (or by hand:
//   c++ -std=c++17 -fopenmp -Iinclude examples_c/copy_executor_openmp.cpp
//       -Ltarget/debug -ltensor)
// c_api-cflags: -fopenmp
// c_api-suppressions: pools.supp
// c_api-libs: -fopenmp
#include <omp.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "tensor.hpp"

#define EXPECT(cond)                                                             \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);   \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

namespace {

// What the executor saw (its ctx): calls, parts, and which OpenMP threads ran them.
struct Seen {
  std::atomic<int> calls{0}, parts{0};
  std::atomic<unsigned long> threads{0};  // bit k: OpenMP thread k ran a part
};

// The executor: the n parts as one OpenMP loop (dynamic: a part is ~1/n of the copy, so
// a thread that finishes early takes the next). It returns after the loop's implicit
// barrier, i.e. once every part has returned, as the contract asks.
extern "C" void omp_executor(void* ctx, size_t n, tensor_task_fn task_fn, void* task_ctx) {
  Seen* seen = static_cast<Seen*>(ctx);
  seen->calls++;
#pragma omp parallel for schedule(dynamic, 1)
  for (long i = 0; i < static_cast<long>(n); i++) {
    task_fn(task_ctx, static_cast<size_t>(i));
    seen->parts++;
    seen->threads |= 1ul << (omp_get_thread_num() % 64);
  }
}

// The three big copies.
tensor::Tensor big_copy(int which, const tensor::Tensor& sq, const tensor::Tensor& row) {
  switch (which) {
    case 0:
      return sq.transpose(0, 1).contiguous();  // 1024 x 2048 float64: 16 MiB
    case 1:
      return sq.to(tensor::kFloat32).to(tensor::kFloat64);  // 8 MiB (one part), then 16 MiB
    default: {
      tensor::Tensor out = sq.clone();  // one big copy
      out.copy_(row);                   // and another: a [1024] row broadcast over every row
      return out;
    }
  }
}

}  // namespace

int main() {
  const int64_t rows = 2048, cols = 1024;  // float64: 16 MiB, the smallest size split
  tensor::Tensor sq = tensor::Tensor::arange(rows * cols, tensor::kFloat64).view({rows, cols});
  tensor::Tensor row = tensor::Tensor::arange(cols, tensor::kFloat64);

  // The references, single-threaded (the default: one thread, no executor).
  tensor::Tensor ref[3];
  for (int k = 0; k < 3; k++) ref[k] = big_copy(k, sq, row);

  // The executor, with one part per OpenMP thread (at least 2, to show the split).
  Seen seen;
  int threads = omp_get_max_threads() < 2 ? 2 : omp_get_max_threads();
  omp_set_num_threads(threads);
  EXPECT(tensor_set_copy_threads(threads, nullptr) == TENSOR_OK);
  EXPECT(tensor_set_copy_executor(omp_executor, &seen) == TENSOR_OK);
  for (int k = 0; k < 3; k++) EXPECT(big_copy(k, sq, row).equal(ref[k]));
  EXPECT(seen.calls == 4 && seen.parts == 4 * threads);  // case 2 copies twice
  std::printf("copy_executor_openmp: 4 copies in %d parts each on %d OpenMP threads (mask %#lx)\n",
              threads, threads, seen.threads.load());

  // From inside a parallel region: the nested loop runs on each calling thread.
#pragma omp parallel num_threads(2)
  {
    EXPECT(big_copy(0, sq, row).equal(ref[0]));
  }
  EXPECT(seen.calls == 6);

  // Back to the default before `seen` goes away: returns once no copy uses it.
  EXPECT(tensor_set_copy_executor(nullptr, nullptr) == TENSOR_OK);
  EXPECT(tensor_set_copy_threads(1, nullptr) == TENSOR_OK);
  std::printf("copy_executor_openmp: ok\n");
  return 0;
}
