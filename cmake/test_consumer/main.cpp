// Consumer test (C++): the header-only tensor.hpp layer over whichever libtensor the consumer
// project linked; checks the versions like main.c and that errors arrive as tensor::Error.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <libtensor/tensor.hpp>

int main() {
  if (std::strcmp(tensor_version_string(), TENSOR_VERSION_STRING) != 0) {
    std::cerr << "version mismatch: header " << TENSOR_VERSION_STRING << ", library "
              << tensor_version_string() << "\n";
    return 1;
  }
#ifdef EXPECTED_VERSION
  if (std::strcmp(EXPECTED_VERSION, TENSOR_VERSION_STRING) != 0) {
    std::cerr << "version mismatch: build system " << EXPECTED_VERSION << ", header "
              << TENSOR_VERSION_STRING << "\n";
    return 1;
  }
#endif
  tensor::Tensor hwc = tensor::Tensor::ones({2, 3, 4});
  tensor::Tensor chw = hwc.permute({2, 0, 1}).contiguous();
  if (chw.numel() != 24 || chw.str() != tensor::Tensor::ones({4, 2, 3}).str()) {
    std::cerr << "unexpected result: " << chw << "\n";
    return 1;
  }
  try {
    (void)hwc.permute({0, 0, 1});
    std::cerr << "permute with a repeated dim did not throw\n";
    return 1;
  } catch (const tensor::Error& e) {
    if (e.status() == TENSOR_OK) return 1;
  }
  std::cout << "C++ consumer OK: libtensor " << tensor_version_string() << "\n";
  return 0;
}
