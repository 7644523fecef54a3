/* The Conan package's test: header and library agree with each other and with the package
 * version, and a tensor gets made. <libtensor/tensor.h>, or with -DTENSOR_FLAT_INCLUDE the
 * older "tensor.h" (kept working for one more version). */
#include <stdio.h>
#include <string.h>
#ifdef TENSOR_FLAT_INCLUDE
#include "tensor.h"
#else
#include <libtensor/tensor.h>
#endif

int main(void) {
  const int64_t sizes[2] = {2, 3};
  tensor_t *t = NULL;
  int64_t numel = 0;
  if (tensor_abi_version() != TENSOR_ABI_VERSION ||
      strcmp(tensor_version_string(), TENSOR_VERSION_STRING) != 0 ||
      strcmp(tensor_version_string(), EXPECTED_VERSION) != 0) {
    fprintf(stderr, "version mismatch: package %s, header %s, library %s\n", EXPECTED_VERSION,
            TENSOR_VERSION_STRING, tensor_version_string());
    return 1;
  }
  if (tensor_ones(sizes, 2, TENSOR_FLOAT32, &t) != TENSOR_OK) {
    fprintf(stderr, "tensor_ones: %s\n", tensor_last_error());
    return 1;
  }
  numel = tensor_numel(t);
  tensor_release(t);
  if (numel != 6) {
    fprintf(stderr, "tensor_numel: %lld, not 6\n", (long long)numel);
    return 1;
  }
  printf("libtensor %s package OK\n", tensor_version_string());
  return 0;
}
