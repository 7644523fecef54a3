// tensor::aoti::Model: loads, runs, compares with the expected output, moves, and reports a
// wrong input as tensor::Error. Usage: wrapper MODEL.pt2 INPUT.npy EXPECTED.npy
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tensor_aoti.hpp"

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  int failed = 0;
  {
    tensor::aoti::Model model(argv[1]);
    tensor::aoti::Model moved = std::move(model);
    if (model.get() != nullptr || moved.num_inputs() != 1 || moved.num_outputs() != 1) failed++;
    if (!moved.checks_inputs() || std::strcmp(moved.cpu_isa(), tensor_aoti_cpu_isa(moved.get())) != 0) failed++;
    tensor::Tensor x = tensor::Tensor::load_npy(argv[2]);
    tensor::Tensor want = tensor::Tensor::load_npy(argv[3]);
    std::vector<tensor::Tensor> out = moved.run({x});
    tensor::Tensor gc = out.at(0).contiguous();
    const float* g = static_cast<const float*>(gc.data_ptr());
    tensor::Tensor wc = want.contiguous();
    const float* w = static_cast<const float*>(wc.data_ptr());
    if (out[0].numel() != want.numel()) failed++;
    for (int64_t i = 0; i < want.numel() && !failed; i++)
      if (std::fabs(g[i] - w[i]) > 1e-4f * (1 + std::fabs(w[i]))) failed++;
    try {
      (void)moved.run({x, x});
      failed++;
    } catch (const tensor::Error& e) {
      if (e.status() != TENSOR_ERR_INVALID_ARGUMENT || !std::strstr(e.what(), "tensor_aoti_run")) failed++;
    }
  }
  std::printf("wrapper: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
