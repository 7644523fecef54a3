/* benches/c/floor_rc.c: the retain + release floor rows of bench_views. */
#ifndef BENCH_FLOOR_RC_H
#define BENCH_FLOOR_RC_H
#include <stdint.h>

extern int floor_rc_failed; /* nonzero: a branch the benchmark never takes was taken */
uint64_t *floor_rc_retain(uint64_t *count);
void floor_rc_release(uint64_t *count);
uint64_t *floor_rc_retain_checked(uint64_t *count);
void floor_rc_release_checked(uint64_t *count);
#endif
