/* Consumer test: links an installed libtensor (shared or static), checks that the header
 * and the library agree, and does a little work. Exit code 0 on success. */
#include <stdio.h>
#include <string.h>
#include <tensor.h>

int main(void) {
  const int64_t sizes[2] = {2, 3};
  tensor_t *t = NULL;
  char text[128];
  const char *want = "tensor([[1., 1., 1.],\n        [1., 1., 1.]])";
  if (tensor_abi_version() != TENSOR_ABI_VERSION) {
    fprintf(stderr, "ABI mismatch: header %u, library %u\n", TENSOR_ABI_VERSION, tensor_abi_version());
    return 1;
  }
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
  printf("consumer OK: libtensor %s\n", tensor_version_string());
  return 0;
}
