/* Links libtensor.a beside a second Rust static library (second.rs) and uses both. */
#include <stdio.h>
#include <string.h>
#include <tensor.h>

unsigned long long second_sum(unsigned n);
size_t second_len(const char *s);

int main(void) {
  const int64_t sizes[1] = {4};
  tensor_t *t = NULL;
  char text[64];
  if (tensor_ones(sizes, 1, TENSOR_INT64, &t) != TENSOR_OK) {
    fprintf(stderr, "tensor_ones: %s\n", tensor_last_error());
    return 1;
  }
  tensor_format(t, text, sizeof text);
  tensor_release(t);
  if (strcmp(text, "tensor([1, 1, 1, 1])") != 0 || second_sum(10) != 55 || second_len(text) != 20) {
    fprintf(stderr, "unexpected: %s, %llu, %zu\n", text, second_sum(10), second_len(text));
    return 1;
  }
  printf("two Rust static libraries: libtensor %s and second_sum(10) = %llu\n",
         tensor_version_string(), second_sum(10));
  return 0;
}
