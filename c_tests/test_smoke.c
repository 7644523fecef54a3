/* Smoke test: the header compiles as C99 and the library links and answers. */
#include "harness.h"

int main(void) {
  tensor_t *t = NULL;
  int64_t sizes[2] = {2, 3};
  CHECK(tensor_abi_version() == TENSOR_ABI_VERSION);
  CHECK(strcmp(tensor_version_string(), TENSOR_VERSION_STRING) == 0);
  CHECK_OK(tensor_arange(6, TENSOR_FLOAT32, &t));
  CHECK(tensor_numel(t) == 6);
  CHECK_STATUS(tensor_empty(sizes, -1, TENSOR_FLOAT32, &t), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("tensor_empty");
  CHECK(tensor_numel(t) == 6); /* out untouched on failure */
  tensor_release(t);
  return harness_finish("c_smoke");
}
