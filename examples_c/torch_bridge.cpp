// c_api-skip: needs libtorch (the torch wheel): .ci/torch_bridge.sh builds and runs it (CI's pytorch stage)
//
// libtensor and libtorch sharing memory (tensor_torch.hpp): weights loaded from a
// .safetensors file (read-only mappings) go to libtorch by name, shared; an input batch made
// by libtensor goes to libtorch without a copy; libtorch's output comes back without a copy.
// Checks its own results and exits non-zero if one is wrong.
#include <cmath>
#include <cstdio>
#include <string>

#include "tensor_torch.hpp"

int main() {
  // A small "model": fc.weight [3, 4] and fc.bias [3], saved and mapped back read-only.
  const std::string path = "/tmp/libtensor_torch_bridge_example.safetensors";
  tensor::Tensor w0 = tensor::Tensor::arange(12, tensor::kFloat32).view({3, 4});
  tensor::Tensor b0 = tensor::Tensor::full({3}, 0.5, tensor::kFloat32);
  tensor::save_safetensors(path, {{"fc.weight", w0}, {"fc.bias", b0}});
  tensor::SafetensorsFile f(path);
  std::remove(path.c_str());  // the mapping stays valid

  // Read-only weights: to_torch(t) refuses them (an in-place op would crash on the mapping);
  // tensor::read_only says that nothing will write to them.
  bool refused = false;
  try {
    (void)tensor::to_torch(f["fc.weight"]);
  } catch (const tensor::Error& e) {
    refused = e.status() == TENSOR_ERR_READ_ONLY;
  }
  at::Tensor w = tensor::to_torch(f["fc.weight"], tensor::read_only);
  at::Tensor b = tensor::to_torch(f["fc.bias"], tensor::read_only);

  // An input batch [2, 4] of libtensor's, a transposed view of a [4, 2] tensor: no copy.
  tensor::Tensor input = tensor::Tensor::ones({4, 2}, tensor::kFloat32);
  input.set({1, 1}, 2.0);
  at::Tensor x = tensor::to_torch(input.t());

  // libtorch computes; its output is libtensor's without a copy.
  at::Tensor y_torch = at::linear(x, w, b);
  tensor::Tensor y = tensor::from_torch(y_torch);

  // y[i][j] = sum_k x[i][k] * w[j][k] + 0.5, x = [[1, 1, 1, 1], [1, 2, 1, 1]].
  bool ok = refused && y.data_ptr() == y_torch.data_ptr() && x.data_ptr() == input.data_ptr();
  for (int64_t i = 0; i < 2; i++)
    for (int64_t j = 0; j < 3; j++) {
      double want = 0.5;
      for (int64_t k = 0; k < 4; k++) want += (i == 1 && k == 1 ? 2.0 : 1.0) * static_cast<double>(4 * j + k);
      ok = ok && std::fabs(y.get_f64({i, j}) - want) < 1e-4;
    }
  std::printf("torch_bridge: y = %s: %s\n", y.str().c_str(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
