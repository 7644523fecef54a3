// libtensor_aoti and libtorch in one process: one of our test packages run by
// libtensor_aoti, and a package compiled for libtorch (link_libtorch=True) run by libtorch's
// AOTIModelPackageLoader, in the order given; each output compared with its eager PyTorch
// output. Before libtensor_aoti exported its shim under a private prefix, whichever came
// second bound its aoti_torch_* calls to the other library's shim.
// Usage: coexist OURS.pt2 OURS.in0.npy OURS.out0.npy TORCH.pt2 TORCH.in0.npy TORCH.out0.npy
//        ours-first|torch-first
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include "tensor.h"
#include "tensor_aoti.h"

static int failed = 0;

static tensor_t* npy(const char* path) {
  tensor_t* t = nullptr;
  if (tensor_load_npy(path, TENSOR_MAP_PRIVATE, &t) != TENSOR_OK) {
    std::fprintf(stderr, "cannot load %s: %s\n", path, tensor_last_error());
    std::exit(2);
  }
  return t;
}

// Largest |a - b| / max(1, |b|) of two float32 tensors (contiguous copies), -1 on a shape
// mismatch.
static double max_err(const float* a, const float* b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = std::fabs(a[i] - b[i]) / std::fmax(1.0, std::fabs(b[i]));
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

static void ours(const char* pt2, const char* in, const char* want) {
  tensor_aoti_model_t* m = nullptr;
  if (tensor_aoti_load(pt2, &m) != TENSOR_OK) {
    std::fprintf(stderr, "FAIL libtensor_aoti load: %s\n", tensor_aoti_last_error());
    failed++;
    return;
  }
  tensor_t* x = npy(in);
  tensor_t* w = npy(want);
  tensor_t* out[1] = {nullptr};
  if (tensor_aoti_run(m, &x, 1, out, 1) != TENSOR_OK) {
    std::fprintf(stderr, "FAIL libtensor_aoti run: %s\n", tensor_aoti_last_error());
    failed++;
  } else {
    tensor_t* c = nullptr;
    tensor_contiguous(out[0], TENSOR_CONTIGUOUS_FORMAT, &c);
    double e = tensor_numel(c) == tensor_numel(w)
                   ? max_err(static_cast<const float*>(tensor_data_ptr(c)),
                             static_cast<const float*>(tensor_data_ptr(w)), tensor_numel(w))
                   : -1;
    std::printf("libtensor_aoti: max relative error %g\n", e);
    if (!(e >= 0 && e <= 1e-4)) failed++;
    tensor_release(c);
    tensor_release(out[0]);
  }
  tensor_release(x);
  tensor_release(w);
  tensor_aoti_release(m);
}

static at::Tensor to_aten(tensor_t* t) {
  std::vector<int64_t> sizes(tensor_sizes(t), tensor_sizes(t) + tensor_ndim(t));
  return at::from_blob(tensor_data_ptr(t), sizes, at::kFloat).clone();
}

static void theirs(const char* pt2, const char* in, const char* want) {
  tensor_t* x = npy(in);
  tensor_t* w = npy(want);
  try {
    torch::inductor::AOTIModelPackageLoader loader(pt2);
    std::vector<at::Tensor> out = loader.run({to_aten(x)});
    at::Tensor o = out.at(0).contiguous();
    double e = o.numel() == tensor_numel(w)
                   ? max_err(o.data_ptr<float>(), static_cast<const float*>(tensor_data_ptr(w)),
                             tensor_numel(w))
                   : -1;
    std::printf("libtorch: max relative error %g\n", e);
    if (!(e >= 0 && e <= 1e-4)) failed++;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "FAIL libtorch: %s\n", ex.what());
    failed++;
  }
  tensor_release(x);
  tensor_release(w);
}

int main(int argc, char** argv) {
  if (argc != 8) return 2;
  bool ours_first = std::strcmp(argv[7], "ours-first") == 0;
  for (int k = 0; k < 2; k++) {
    if ((k == 0) == ours_first) {
      ours(argv[1], argv[2], argv[3]);
    } else {
      theirs(argv[4], argv[5], argv[6]);
    }
  }
  // And each once more, now that both are loaded.
  ours(argv[1], argv[2], argv[3]);
  theirs(argv[4], argv[5], argv[6]);
  std::printf("coexist (%s): %d passed, %d failed\n", argv[7], failed ? 0 : 4, failed);
  return failed ? 1 : 0;
}
