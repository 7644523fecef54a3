/* Handle and view costs through the real shared library (libtensor.so), in C99.
 *
 * Each op is timed as a loop of ITERS calls with clock_gettime(CLOCK_MONOTONIC); the
 * loops of all ops are interleaved in REPS rounds (so slow phases of a shared machine hit
 * every op alike), and the best round of each op is reported, with the median round in a
 * second column. Ratios are to the malloc(160)/free pair measured in the same run
 * (PyTorch's TensorImpl is 176 bytes; libtensor's is allocated the same way).
 *
 * Every op is checked to succeed before timing, and the statuses of the timed calls are
 * OR-ed together and checked after, so an error path is never what gets measured.
 *
 * Usage: bench_views [iters_per_round [rounds [tracked]]]   (defaults 20000, 101: many short
 * rounds give the best round a chance to fall in a quiet slice of a shared machine).
 * "tracked" turns memory tracking on after the bases are made and adds the rows of views
 * of a tracked storage; only from_blob (a new storage per call) is then tracked too.
 * Build and run: benches/c/run.sh */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor_rc.h"
#include "tensor.h"

static tensor_t *base;     /* 8x16x32x32 float32, contiguous */
static tensor_t *base1;    /* 8x1x32x32 float32 (for expand) */
static storage_t *storage; /* base's storage (borrowed) */
static tensor_t *base_nd[9]; /* base_nd[d]: 2x..x2 float32, d dims (5..8) */
static tensor_t *tracked;   /* 8x16x32x32 float32 on a tracked storage (memory tracking) */
static float blob[120];
static int status_acc;     /* OR of every timed status */
static void *volatile sink; /* keeps malloc/free from being elided */
static volatile size_t malloc_size = 160;

static const int64_t sizes4[4] = {8, 16, 32, 32};
static const int64_t strides4[4] = {16384, 1024, 32, 1};
static const int64_t blob_sizes[4] = {2, 3, 4, 5};
static const int64_t flat[1] = {-1};
static const int64_t perm[4] = {0, 2, 3, 1};

/* Each benchmark body runs `n` times; `out` receives the new handle. */
#define BENCH_VIEW(fname, call)                                                            \
  static void fname(long n) {                                                              \
    for (long i = 0; i < n; i++) {                                                         \
      tensor_t *out = NULL;                                                                \
      status_acc |= (int)(call);                                                           \
      tensor_release(out);                                                                 \
    }                                                                                      \
  }

static void b_malloc_free(long n) {
  for (long i = 0; i < n; i++) {
    sink = malloc(malloc_size);
    free(sink);
  }
}

static void b_retain_release(long n) {
  for (long i = 0; i < n; i++) tensor_release(tensor_retain(base));
}

BENCH_VIEW(b_from_storage, tensor_from_storage(storage, 0, sizes4, strides4, 4, TENSOR_FLOAT32, &out))
BENCH_VIEW(b_from_blob, tensor_from_blob(blob, blob_sizes, NULL, 4, TENSOR_FLOAT32,
                                         (tensor_device_t){1, 0}, NULL, NULL, &out))
BENCH_VIEW(b_view, tensor_view(base, flat, 1, &out))
BENCH_VIEW(b_transpose, tensor_transpose(base, 1, 3, &out))
BENCH_VIEW(b_slice, tensor_slice(base, 2, 4, 20, 2, &out))
BENCH_VIEW(b_select, tensor_select(base, 1, 5, &out))
BENCH_VIEW(b_unsqueeze, tensor_unsqueeze(base, 2, &out))
BENCH_VIEW(b_expand, tensor_expand(base1, sizes4, 4, &out))
BENCH_VIEW(b_permute, tensor_permute(base, perm, 4, &out))
/* transpose(0, 1) by rank: up to 5 dims the layout is inline, past 5 it is a heap block */
BENCH_VIEW(b_transpose_5d, tensor_transpose(base_nd[5], 0, 1, &out))
BENCH_VIEW(b_transpose_6d, tensor_transpose(base_nd[6], 0, 1, &out))
BENCH_VIEW(b_transpose_7d, tensor_transpose(base_nd[7], 0, 1, &out))
BENCH_VIEW(b_transpose_8d, tensor_transpose(base_nd[8], 0, 1, &out))
/* the transpose and slice above, of a storage made while memory tracking was on */
BENCH_VIEW(b_tracked_transpose, tensor_transpose(tracked, 1, 3, &out))
BENCH_VIEW(b_tracked_slice, tensor_slice(tracked, 2, 4, 20, 2, &out))


/* The floor: the least a view with PyTorch's semantics must do, written here in C with
 * nothing else (no argument checks, no layout validation, no error path, no dims past 5,
 * no version counter, no panic guard): make = take a 144-byte block (the size of
 * libtensor's TensorImpl box) from a per-thread free list, write its count word, the
 * storage pointer and the sizes / strides / offset of the 4-d transpose(1, 3), and one
 * atomic increment of the shared storage's refcount; release = the atomic decrement (the
 * acquire-release one of every reference count) and the block back to the list. Two
 * out-of-line calls per view, as the library's make and release. The free list is this
 * executable's own `__thread` (one local-exec access, the cheapest TLS there is). */
struct floor_view {
  union {
    struct floor_view *next; /* while on the free list */
    uint64_t refcount;       /* while live */
  } u;
  uint64_t *storage_refcount;
  int64_t ndim, offset;
  int64_t sizes[5], strides[5];
  char pad[144 - 4 * 8 - 10 * 8];
};
typedef char floor_view_is_144_bytes[sizeof(struct floor_view) == 144 ? 1 : -1];

struct floor_base {
  uint64_t storage_refcount;
  int64_t ndim, offset;
  int64_t sizes[5], strides[5];
};
static struct floor_base floor_base = {1, 4, 0, {8, 16, 32, 32}, {16384, 1024, 32, 1}};
static __thread struct floor_view *floor_free;
static volatile int64_t floor_d0 = 1, floor_d1 = 3;

__attribute__((noinline)) static struct floor_view *floor_transpose(struct floor_base *b,
                                                                    int64_t d0, int64_t d1) {
  struct floor_view *v = floor_free;
  if (v)
    floor_free = v->u.next;
  else if (!(v = malloc(sizeof *v)))
    return NULL;
  v->u.refcount = 1;
  v->storage_refcount = &b->storage_refcount;
  v->ndim = b->ndim;
  v->offset = b->offset;
  for (int64_t i = 0; i < b->ndim; i++) {
    int64_t j = i == d0 ? d1 : i == d1 ? d0 : i;
    v->sizes[i] = b->sizes[j];
    v->strides[i] = b->strides[j];
  }
  __atomic_fetch_add(&b->storage_refcount, 1, __ATOMIC_RELAXED);
  return v;
}

__attribute__((noinline)) static void floor_release(struct floor_view *v) {
  __atomic_fetch_sub(v->storage_refcount, 1, __ATOMIC_ACQ_REL);
  v->u.next = floor_free;
  floor_free = v;
}

static void b_floor(long n) {
  for (long i = 0; i < n; i++) {
    struct floor_view *v = floor_transpose(&floor_base, floor_d0, floor_d1);
    status_acc |= v == NULL;
    sink = v;
    floor_release(v);
  }
}

/* The floors of retain + release (benches/c/floor_rc.c, a shared library of its own, so
 * that its calls go through the PLT as calls into libtensor.so do): the two atomics of a
 * shared count alone, and with the checks libtensor's retain and release document. The
 * count starts at two strong references: no call takes a shortcut or reaches 0. */
static uint64_t floor_count = 2 | (1ull << 32);

static void b_floor_retain(long n) {
  for (long i = 0; i < n; i++) floor_rc_release(floor_rc_retain(&floor_count));
}

static void b_floor_retain_checked(long n) {
  for (long i = 0; i < n; i++) floor_rc_release_checked(floor_rc_retain_checked(&floor_count));
}

struct bench {
  const char *name;
  void (*run)(long n);
  int tracked_only; /* run only with the "tracked" argument */
};

static const struct bench benches[] = {
    {"malloc(160)+free", b_malloc_free, 0},
    {"retain+release", b_retain_release, 0},
    {"floor: .so retain+release", b_floor_retain, 0},
    {"floor: the same, checked", b_floor_retain_checked, 0},
    {"from_storage+release", b_from_storage, 0},
    {"from_blob+release", b_from_blob, 0},
    {"view(-1)+release", b_view, 0},
    {"transpose(1,3)+release", b_transpose, 0},
    {"slice(2,4,20,2)+release", b_slice, 0},
    {"select(1,5)+release", b_select, 0},
    {"floor: C view+release", b_floor, 0},
    {"unsqueeze(2)+release", b_unsqueeze, 0},
    {"expand(8,16,32,32)+release", b_expand, 0},
    {"permute(0,2,3,1)+release", b_permute, 0},
    {"5d transpose(0,1)+release", b_transpose_5d, 0},
    {"6d transpose(0,1)+release", b_transpose_6d, 0},
    {"7d transpose(0,1)+release", b_transpose_7d, 0},
    {"8d transpose(0,1)+release", b_transpose_8d, 0},
    {"tracked transpose+release", b_tracked_transpose, 1},
    {"tracked slice+release", b_tracked_slice, 1},
};
#define NBENCH ((int)(sizeof benches / sizeof benches[0]))
#define MAX_ROUNDS 101

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void must(tensor_status_t s, const char *what) {
  if (s != TENSOR_OK) {
    fprintf(stderr, "%s failed: %s\n", what, tensor_last_error());
    exit(1);
  }
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  int rounds = argc > 2 ? atoi(argv[2]) : 101;
  int track = argc > 3 && strcmp(argv[3], "tracked") == 0;
  if (iters < 1 || rounds < 1 || rounds > MAX_ROUNDS) {
    fprintf(stderr, "usage: %s [iters_per_round >= 1 [rounds in 1..%d]]\n", argv[0], MAX_ROUNDS);
    return 2;
  }
  const int64_t sizes1[4] = {8, 1, 32, 32};
  must(tensor_empty(sizes4, 4, TENSOR_FLOAT32, &base), "tensor_empty");
  must(tensor_empty(sizes1, 4, TENSOR_FLOAT32, &base1), "tensor_empty");
  storage = tensor_storage(base);
  const int64_t twos[8] = {2, 2, 2, 2, 2, 2, 2, 2};
  for (int d = 5; d <= 8; d++) must(tensor_empty(twos, d, TENSOR_FLOAT32, &base_nd[d]), "tensor_empty");
  /* Only storages made while tracking is on are tracked: every other base stays untracked. */
  if (track) {
    tensor_set_memory_tracking(1);
    must(tensor_empty(sizes4, 4, TENSOR_FLOAT32, &tracked), "tensor_empty");
  }

  /* Warm-up, which also proves every op succeeds. */
  for (int b = 0; b < NBENCH; b++)
    if (track || !benches[b].tracked_only) benches[b].run(1000);
  if (status_acc != 0) {
    fprintf(stderr, "a benchmarked call failed: %s\n", tensor_last_error());
    return 1;
  }

  static double ns[NBENCH][MAX_ROUNDS];
  for (int r = 0; r < rounds; r++) {
    for (int b = 0; b < NBENCH; b++) {
      if (!track && benches[b].tracked_only) continue;
      double t0 = now_ns();
      benches[b].run(iters);
      ns[b][r] = (now_ns() - t0) / (double)iters;
    }
  }
  if (status_acc != 0 || floor_rc_failed != 0) {
    fprintf(stderr, "a benchmarked call failed: %s\n", tensor_last_error());
    return 1;
  }

  double best[NBENCH], median[NBENCH];
  for (int b = 0; b < NBENCH; b++) {
    if (!track && benches[b].tracked_only) continue;
    qsort(ns[b], (size_t)rounds, sizeof(double), cmp_double);
    best[b] = ns[b][0];
    median[b] = ns[b][rounds / 2];
  }
  printf("libtensor C benchmark: %ld calls per round, %d rounds; ratio = best / best malloc pair\n",
         iters, rounds);
  printf("| %-28s | %8s | %10s | %8s |\n", "op", "best ns", "median ns", "ratio");
  printf("|------------------------------|----------|------------|----------|\n");
  for (int b = 0; b < NBENCH; b++)
    if (track || !benches[b].tracked_only)
      printf("| %-28s | %8.1f | %10.1f | %7.2fx |\n", benches[b].name, best[b], median[b],
           best[b] / best[0]);

  if (track) {
    tensor_release(tracked);
    tensor_set_memory_tracking(0);
  }
  while (floor_free) {
    struct floor_view *v = floor_free;
    floor_free = v->u.next;
    free(v);
  }
  for (int d = 5; d <= 8; d++) tensor_release(base_nd[d]);
  tensor_release(base1);
  tensor_release(base);
  return 0;
}
