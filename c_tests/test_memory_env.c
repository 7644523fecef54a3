/* The start-up switches of issue 10, read once from the environment: TENSOR_NO_CACHING=1
 * (wins over TENSOR_CACHE_LIMIT) turns the big-block cache off, TENSOR_MEMORY_TRACKING=1
 * turns the storage snapshot on before any API call; the API overrides both. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

#define MIB ((uint64_t)1 << 20)

int main(void) {
  int64_t n[1] = {(3 << 18) + 1}; /* 3 MiB + 4 bytes of float32: a 4 MiB block */
  tensor_t *t = NULL;
  tensor_storage_info_t info[4];
  size_t count = 0;
  tensor_memory_stats_t s0, s;
  setenv("TENSOR_NO_CACHING", "1", 1);
  setenv("TENSOR_CACHE_LIMIT", "6M", 1);
  setenv("TENSOR_MEMORY_TRACKING", "1", 1);

  /* Tracking is on from the first storage, without any API call. */
  CHECK_OK(tensor_empty(n, 1, TENSOR_FLOAT32, &t));
  CHECK_OK(tensor_memory_snapshot(info, 4, &count));
  CHECK(count == 1);
  CHECK(count >= 1 && info[0].data == tensor_data_ptr(t) && info[0].nbytes == 3 * MIB + 4);
  CHECK(count >= 1 && info[0].tensor_count == 1 && info[0].reachable_bytes == 3 * MIB + 4);
  CHECK(tensor_memory_tracking_enabled());

  /* No caching: the freed block goes straight back to the system. */
  s0 = harness_memory_stats();
  CHECK(s0.cache_limit_bytes == 0);
  tensor_release(t);
  s = harness_memory_stats();
  CHECK(s.cached_bytes == 0);
  CHECK(s.reserved_bytes == s0.reserved_bytes - 4 * MIB);
  CHECK(tensor_empty_cache() == 0);
  CHECK_OK(tensor_memory_snapshot(info, 4, &count));
  CHECK(count == 0);

  /* The API overrides the environment. */
  CHECK(tensor_set_cache_limit(8 * MIB) == 0);
  CHECK_OK(tensor_empty(n, 1, TENSOR_FLOAT32, &t));
  tensor_release(t);
  CHECK(harness_memory_stats().cached_bytes == 4 * MIB);
  CHECK(tensor_empty_cache() == 4 * MIB);
  CHECK(tensor_set_memory_tracking(false) == true);
  CHECK(!tensor_memory_tracking_enabled());
  return harness_finish("test_memory_env");
}
