/* .ci/prove.sh (asan, cusan) and .ci/run (valgrind): a use after release planted on purpose
 * (a double release), run with the default cache configuration. The library must stop it at the faulting call:
 * the per-thread caches step aside for AddressSanitizer (so the box really goes back to free
 * and ASan knows it), and a release looks the handle up in ASan's shadow before reading it.
 * Expected on stderr: "libtensor: tensor_release: handle 0x... was already released", then
 * ASan's description of the block ("freed by thread T0 here"); the process aborts. Before,
 * the second release went unnoticed and the next two tensors shared one handle. */
#include <stdint.h>
#include <stdio.h>

#include "tensor.h"

int main(void) {
  int64_t n[1] = {4};
  tensor_t *t = NULL;
  if (tensor_empty(n, 1, TENSOR_FLOAT32, &t) != TENSOR_OK) {
    return 2;
  }
  tensor_release(t);
  tensor_release(t); /* the planted bug */
  printf("the double release went unnoticed\n");
  return 0;
}
