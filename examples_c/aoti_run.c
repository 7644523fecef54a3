/* Runs a PyTorch model compiled by AOTInductor (examples_c/aoti_model.py) from C, on a
 * tensor wrapped around a stack buffer with tensor_from_blob, with no libtorch: the model's
 * aoti_torch_* calls are served by libtensor_aoti on libtensor. Prints the class
 * probabilities; exits non-zero when a call fails or they do not sum to 1.
 * Usage: aoti_run classifier.pt2 */
// c_api-skip: needs libtensor_aoti and a compiled model: built and run by aoti/tests/host.rs
#include <math.h>
#include <stdio.h>

#include "tensor.h"
#include "tensor_aoti.h"

int main(int argc, char **argv) {
  float features[8] = {-1.0f, -0.71f, -0.43f, -0.14f, 0.14f, 0.43f, 0.71f, 1.0f};
  int64_t sizes[2] = {1, 8};
  tensor_device_t cpu = {1, 0};
  tensor_aoti_model_t *model = NULL;
  tensor_t *x = NULL, *probs = NULL;
  double sum = 0;
  int64_t i;
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.pt2\n", argv[0]);
    return 2;
  }
  if (tensor_aoti_load(argv[1], &model) != TENSOR_OK) {
    fprintf(stderr, "%s\n", tensor_aoti_last_error());
    return 1;
  }
  /* No copy: the tensor views `features` (no deleter: the buffer outlives it). */
  if (tensor_from_blob(features, sizes, NULL, 2, TENSOR_FLOAT32, cpu, NULL, NULL, &x) != TENSOR_OK) {
    fprintf(stderr, "%s\n", tensor_last_error());
    tensor_aoti_release(model);
    return 1;
  }
  if (tensor_aoti_run(model, &x, 1, &probs, 1) != TENSOR_OK) {
    fprintf(stderr, "%s\n", tensor_aoti_last_error());
    tensor_release(x);
    tensor_aoti_release(model);
    return 1;
  }
  printf("probabilities:");
  for (i = 0; i < tensor_numel(probs); i++) {
    int64_t idx[2] = {0, i};
    double p = 0;
    tensor_get_f64(probs, idx, 2, &p);
    printf(" %.4f", p);
    sum += p;
  }
  printf("\n");
  tensor_release(probs);
  tensor_release(x);
  tensor_aoti_release(model);
  return fabs(sum - 1.0) < 1e-5 ? 0 : 1;
}
