// tensor.hpp compiled without exceptions: the typed API works, and a failed call goes to
// the handler installed with tensor::set_error_handler (which must not return; here it
// exits a forked child with a known status, which the parent checks).
// c_api-cflags: -fno-exceptions
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "harness.h"
#include "tensor.hpp"

#if defined(__cpp_exceptions)
#error "this test must be compiled with -fno-exceptions"
#endif

static void exit_with_status(tensor_status_t status, const char* message) {
  // Exit code: the status, plus 100 when the message names the failing function.
  _exit(static_cast<int>(status) + (strstr(message, "tensor_view") || strstr(message, "data_ptr") ? 100 : 0));
}

// Runs f in a child process and returns its exit code (-1 if it did not exit).
template <class F>
static int in_child(F&& f) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    f();
    _exit(0);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

int main() {
  tensor::Tensor t = tensor::Tensor::arange(12, tensor::kFloat32).view({3, 4});
  {
    auto a = t.accessor<float, 2>();
    CHECK(a[2][3] == 11.0f);
    CHECK(t.data_ptr<float>()[5] == 5.0f);
    tensor::Tensor out = tensor::Tensor::empty({3, 4}, tensor::kFloat64);
    out.copy_affine_(t, 1, {1.0, 2.0, 3.0, 4.0}, {0.0, 0.0, 0.0, 0.0});
    CHECK(out.get_f64({1, 3}) == 28.0);
  }
  // From here on only `t` is alive (in memory: the children reach it through a
  // reference), so the children's exit leaves nothing unreachable for valgrind.

  tensor::ErrorHandler previous = tensor::set_error_handler(&exit_with_status);
  CHECK(previous != nullptr);
  CHECK(in_child([&] { t.view({5, 5}); }) == TENSOR_ERR_SHAPE + 100);
  CHECK(in_child([&] { t.data_ptr<int32_t>(); }) == TENSOR_ERR_DTYPE + 100);
  CHECK(in_child([&] { (void)t.accessor<float, 2>()[2][3]; }) == 0);
  // A handler that returns: the program aborts (SIGABRT, no exit code).
  tensor::set_error_handler([](tensor_status_t, const char*) {});
  CHECK(in_child([&] { t.view({5, 5}); }) == -1);
  tensor::set_error_handler(nullptr);
  return harness_finish("cpp_noexcept");
}
