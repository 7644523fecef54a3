// tensor_opencv.hpp compiled without exceptions: to_mat's refusals (read-only memory, sizes
// past int, CHW read as channels) go to the handler of tensor::set_error_handler, like
// every failure of tensor.hpp (the handler exits a forked child with the status, which
// the parent checks). The child leaves with exit(), not _exit(): libGLX, which OpenCV's
// core library loads, frees its load-time table only in its destructor.
// c_api-pkg: opencv4
// c_api-libs: -lopencv_core
// c_api-cflags: -fno-exceptions
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "harness.h"
#include "tensor_opencv.hpp"

#if defined(__cpp_exceptions)
#error "this test must be compiled with -fno-exceptions"
#endif

static void exit_with_status(tensor_status_t status, const char* message) {
  // Exit code: the status, plus 100 when the message names the failing function.
  exit(static_cast<int>(status) + (strstr(message, "to_mat") ? 100 : 0));
}

template <class F>
static int in_child(F&& f) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    f();
    exit(0);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

int main() {
  static uint8_t buf[16];
  tensor::Storage s = tensor::Storage::create(64);
  s.mark_read_only();
  tensor::Tensor ro = s.tensor({8, 8}, tensor::kUInt8);
  tensor::Tensor big = tensor::Tensor::from_blob(buf, {(int64_t(1) << 32) + 5, 2}, tensor::kUInt8, {}, {2, 1});
  tensor::Tensor chw = tensor::Tensor::zeros({3, 8, 8}, tensor::kUInt8);
  tensor::set_error_handler(&exit_with_status);
  CHECK(in_child([&] { tensor::to_mat(ro); }) == TENSOR_ERR_READ_ONLY + 100);
  CHECK(in_child([&] { tensor::to_mat(big); }) == TENSOR_ERR_OVERFLOW + 100);
  CHECK(in_child([&] { tensor::to_mat(chw); }) == TENSOR_ERR_INVALID_ARGUMENT + 100);
  CHECK(in_child([&] { tensor::to_mats_chw(ro.view({1, 8, 8})); }) == TENSOR_ERR_READ_ONLY + 100);
  CHECK(in_child([&] { (void)tensor::to_mat(ro, tensor::read_only).rows(); }) == 0);
  tensor::set_error_handler(nullptr);
  return harness_finish("cpp_opencv_noexcept");
}
