/* Consumer test (C): links libtensor however the consumer project found it (shared or static),
 * checks that the header and the library agree (ABI, version; with -DEXPECTED_VERSION="x.y.z"
 * also the version the build system reported) and does a little work. Exit code 0 on success.
 * It includes <libtensor/tensor.h>, the installed path; with -DTENSOR_FLAT_INCLUDE the
 * `#include "tensor.h"` that the include path keeps working for one more version. */
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
  char text[128];
  const char *want = "tensor([[1., 1., 1.],\n        [1., 1., 1.]])";
  if (tensor_abi_version() != TENSOR_ABI_VERSION) {
    fprintf(stderr, "ABI mismatch: header %u, library %u\n", TENSOR_ABI_VERSION, tensor_abi_version());
    return 1;
  }
  if (strcmp(tensor_version_string(), TENSOR_VERSION_STRING) != 0) {
    fprintf(stderr, "version mismatch: header %s, library %s\n", TENSOR_VERSION_STRING,
            tensor_version_string());
    return 1;
  }
#ifdef EXPECTED_VERSION
  if (strcmp(EXPECTED_VERSION, TENSOR_VERSION_STRING) != 0) {
    fprintf(stderr, "version mismatch: build system %s, header %s\n", EXPECTED_VERSION,
            TENSOR_VERSION_STRING);
    return 1;
  }
#endif
  if (tensor_ones(sizes, 2, TENSOR_FLOAT32, &t) != TENSOR_OK) {
    fprintf(stderr, "tensor_ones: %s\n", tensor_last_error());
    return 1;
  }
  tensor_format(t, text, sizeof text);
  tensor_release(t);
  if (strcmp(text, want) != 0) {
    fprintf(stderr, "unexpected repr:\n%s\n", text);
    return 1;
  }
  printf("C consumer OK: libtensor %s (%d.%d.%d)\n", tensor_version_string(), TENSOR_VERSION_MAJOR,
         TENSOR_VERSION_MINOR, TENSOR_VERSION_PATCH);
  return 0;
}
