// Big copies on a oneTBB pool (the one OpenCV's parallel_for_ uses when built with TBB)
// instead of threads of libtensor's own (tensor_set_copy_executor). The executor's ctx is
// a tbb::task_arena: the copies' parts run in that arena, with its concurrency.
//
//   executor(ctx, n, task_fn, task_ctx): arena->execute(tbb::parallel_for over the n parts)
//
// tbb::parallel_for returns once every index has run (the calling thread joins in), which
// is the executor's contract; it runs each index exactly once. Any pool with a blocking
// "run these n jobs" call plugs in the same way.
//
// Build and run: cargo test --test c_api examples_run   (or by hand:
//   c++ -std=c++17 -Iinclude examples_c/copy_executor_tbb.cpp -Ltarget/debug -ltensor -ltbb)
// c_api-pkg: tbb
// c_api-suppressions: pools.supp
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

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

struct Pool {
  tbb::task_arena arena;
  std::atomic<int> calls{0}, parts{0};
  explicit Pool(int threads) : arena(threads) {}
};

extern "C" void tbb_executor(void* ctx, size_t n, tensor_task_fn task_fn, void* task_ctx) {
  Pool* pool = static_cast<Pool*>(ctx);
  pool->calls++;
  // No exception can leave: task_fn never throws, and the lambdas do nothing else.
  pool->arena.execute([&] {
    tbb::parallel_for(size_t(0), n, [&](size_t i) {
      task_fn(task_ctx, i);
      pool->parts++;
    });
  });
}

}  // namespace

int main() {
  const int64_t rows = 2048, cols = 1024;  // float64: 16 MiB, the smallest size split
  tensor::Tensor sq = tensor::Tensor::arange(rows * cols, tensor::kFloat64).view({rows, cols});
  tensor::Tensor ref = sq.transpose(0, 1).contiguous();  // single-threaded: the default
  tensor::Tensor ref32 = sq.to(tensor::kFloat32);
  tensor::Tensor ref64 = ref32.to(tensor::kFloat64);

  Pool pool(2);
  EXPECT(tensor_set_copy_threads(4, nullptr) == TENSOR_OK);  // 4 parts per big copy
  EXPECT(tensor_set_copy_executor(tbb_executor, &pool) == TENSOR_OK);
  EXPECT(sq.transpose(0, 1).contiguous().equal(ref));
  EXPECT(ref32.to(tensor::kFloat64).equal(ref64));
  EXPECT(pool.calls == 2 && pool.parts == 8);
  // Copies made from inside TBB tasks (e.g. in a cv::parallel_for_ body) use the same pool.
  pool.arena.execute([&] {
    tbb::parallel_for(0, 2, [&](int) { EXPECT(ref32.to(tensor::kFloat64).equal(ref64)); });
  });
  EXPECT(pool.calls == 4 && pool.parts == 16);
  EXPECT(tensor_set_copy_executor(nullptr, nullptr) == TENSOR_OK);
  EXPECT(tensor_set_copy_threads(1, nullptr) == TENSOR_OK);
  std::printf("copy_executor_tbb: %d copies in 4 parts each on a 2-thread arena: ok\n",
              pool.calls.load());
  return 0;
}
