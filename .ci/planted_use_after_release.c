/* .ci/prove.sh (asan, cusan): a use after release planted on purpose, run with the default
 * cache configuration. The library must stop it at the faulting call: the per-thread caches
 * step aside for AddressSanitizer (so the box really goes back to free and ASan knows it),
 * and the handle is looked up in ASan's shadow before it is read. Expected on stderr:
 * "libtensor: tensor_numel: handle 0x... was already released", then ASan's description of
 * the block ("freed by thread T0 here"); the process aborts. */
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
  printf("numel after release: %lld\n", (long long)tensor_numel(t)); /* the planted bug */
  return 0;
}
