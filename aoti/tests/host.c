/* The C host of the AOTI tests: loads each model of a directory made by make_models.py
 * through libtensor_aoti, runs it on the saved inputs and compares every output with the
 * eager PyTorch output saved beside them; then checks that wrong inputs are refused with a
 * status and that libtensor's memory statistics are back to zero after the release.
 * Usage: host DIR [model ...]; host --bare SO|PT2 checked|unchecked (pointwise's
 * shapes); host --refuse DIR (refuse.txt); host --hostile DIR (hostile.txt); host --load PT2.
 * Exits non-zero on any failure. No libtorch is involved. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tensor.h"
#include "tensor_aoti.h"

static int failures = 0;
static int passed = 0;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (cond) {                                            \
      passed++;                                            \
    } else {                                               \
      failures++;                                          \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
    }                                                      \
  } while (0)

static tensor_t *load_npy(const char *dir, const char *stem, int i) {
  char path[4096];
  tensor_t *t = NULL;
  snprintf(path, sizeof path, "%s/%s%d.npy", dir, stem, i);
  if (tensor_load_npy(path, TENSOR_MAP_PRIVATE, &t) != TENSOR_OK) {
    fprintf(stderr, "cannot load %s: %s\n", path, tensor_last_error());
    return NULL;
  }
  return t;
}

/* max |got - want| / max |want| over the elements (both as float64): the error relative to
 * the output's scale, so that an output of tiny values is not compared with 1 (an all-zero
 * `want` asks for an exact match). -1 when the sizes differ. */
static double max_rel_err(const tensor_t *got, const tensor_t *want) {
  tensor_t *g = NULL, *w = NULL, *gc = NULL, *wc = NULL;
  double worst = -1, scale = 0, diff = 0;
  int64_t n = tensor_numel(want), i;
  if (tensor_ndim(got) != tensor_ndim(want) ||
      memcmp(tensor_sizes(got), tensor_sizes(want), sizeof(int64_t) * (size_t)tensor_ndim(want)) != 0)
    return -1;
  if (tensor_to_dtype(got, TENSOR_FLOAT64, &g) || tensor_to_dtype(want, TENSOR_FLOAT64, &w) ||
      tensor_contiguous(g, TENSOR_CONTIGUOUS_FORMAT, &gc) ||
      tensor_contiguous(w, TENSOR_CONTIGUOUS_FORMAT, &wc))
    goto done;
  for (i = 0; i < n; i++) {
    double a = ((const double *)tensor_data_ptr(gc))[i];
    double b = ((const double *)tensor_data_ptr(wc))[i];
    double e = fabs(a - b);
    if (isnan(a) && isnan(b)) continue; /* NaN where eager has NaN */
    if (a != b && !(e <= diff)) diff = e; /* NaN against a number propagates; equal infinities match */
    if (fabs(b) > scale && !isinf(b)) scale = fabs(b);
  }
  worst = diff == 0 ? 0 : diff / (scale > 0 ? scale : 1e-300);
done:
  tensor_release(g);
  tensor_release(w);
  tensor_release(gc);
  tensor_release(wc);
  return worst;
}

static int is_float(tensor_dtype_t d) {
  return d == TENSOR_FLOAT16 || d == TENSOR_BFLOAT16 || d == TENSOR_FLOAT32 || d == TENSOR_FLOAT64;
}

/* Runs `m` on DIR/<stem>in<i>.npy and compares with DIR/<stem>out<i>.npy. */
static void run_and_compare(tensor_aoti_model_t *m, const char *dir, const char *name,
                            const char *stem_in, const char *stem_out, int channels_last) {
  size_t nin = tensor_aoti_num_inputs(m), nout = tensor_aoti_num_outputs(m), i;
  tensor_t *in[16] = {0}, *out[16] = {0};
  tensor_status_t s;
  if (nin > 16 || nout > 16) {
    CHECK(0, "%s: too many inputs/outputs", name);
    return;
  }
  for (i = 0; i < nin; i++) {
    in[i] = load_npy(dir, stem_in, (int)i);
    if (channels_last && in[i]) { /* the model was traced with channels-last inputs */
      tensor_t *c = NULL;
      tensor_contiguous(in[i], TENSOR_CHANNELS_LAST, &c);
      tensor_release(in[i]);
      in[i] = c;
    }
  }
  s = tensor_aoti_run(m, in, nin, out, nout);
  CHECK(s == TENSOR_OK, "%s (%s): run failed: %s", name, stem_in, tensor_aoti_last_error());
  for (i = 0; s == TENSOR_OK && i < nout; i++) {
    tensor_t *want = load_npy(dir, stem_out, (int)i);
    double e = want ? max_rel_err(out[i], want) : -1;
    /* Float outputs to 1e-4 of their scale; integer and bool outputs (indices, tokens)
     * exactly; the dtype as eager PyTorch's. */
    double tol = want && is_float(tensor_dtype(want)) ? 1e-4 : 0;
    CHECK(want && tensor_dtype(out[i]) == tensor_dtype(want), "%s (%s): output %zu is %s, eager gives %s",
          name, stem_in, i, tensor_dtype_name(tensor_dtype(out[i])),
          want ? tensor_dtype_name(tensor_dtype(want)) : "?");
    CHECK(e >= 0 && e <= tol, "%s (%s): output %zu max relative error %g", name, stem_in, i, e);
    printf("%s (%s): output %zu max relative error %.3g\n", name, stem_in, i, e);
    tensor_release(want);
    tensor_release(out[i]);
  }
  for (i = 0; i < nin; i++) tensor_release(in[i]);
}

/* A run that must fail with `want_status`, naming tensor_aoti_run, leaving outputs NULL. */
static void expect_refused(tensor_aoti_model_t *m, tensor_t *const *in, size_t nin,
                           tensor_status_t want_status, const char *what) {
  tensor_t *out[16] = {0};
  size_t nout = tensor_aoti_num_outputs(m), i;
  tensor_status_t s = tensor_aoti_run(m, in, nin, out, nout);
  CHECK(s == want_status, "%s: status %d, want %d (%s)", what, s, want_status, tensor_aoti_last_error());
  CHECK(strstr(tensor_aoti_last_error(), "tensor_aoti_run") != NULL, "%s: message '%s'", what,
        tensor_aoti_last_error());
  for (i = 0; i < nout; i++) CHECK(out[i] == NULL, "%s: output %zu written on failure", what, i);
  printf("%s refused: %s\n", what, tensor_aoti_last_error());
}

static void wrong_inputs(tensor_aoti_model_t *m, const char *name) {
  size_t nin = tensor_aoti_num_inputs(m), i;
  tensor_t *in[16] = {0};
  char what[300];
  int64_t big[2] = {7, 16}, small[2] = {1, 16}, flat[1] = {64}, wide[3] = {4, 16, 1};
  for (i = 0; i < nin; i++) tensor_zeros(big, 2, TENSOR_FLOAT32, &in[i]);
  snprintf(what, sizeof what, "%s: batch 7", name);
  if (strcmp(name, "pointwise") == 0) {
    /* A batch-7 input into the batch-4 model, a batch of 1, a 1-D and a 3-D input, a
     * float64 input, a transposed input, and the wrong counts. */
    expect_refused(m, in, nin, TENSOR_ERR_SHAPE, what);
    tensor_release(in[0]);
    tensor_zeros(small, 2, TENSOR_FLOAT32, &in[0]);
    expect_refused(m, in, nin, TENSOR_ERR_SHAPE, "pointwise: batch 1");
    tensor_release(in[0]);
    tensor_zeros(flat, 1, TENSOR_FLOAT32, &in[0]);
    expect_refused(m, in, nin, TENSOR_ERR_SHAPE, "pointwise: 1-D input");
    tensor_release(in[0]);
    tensor_zeros(wide, 3, TENSOR_FLOAT32, &in[0]);
    expect_refused(m, in, nin, TENSOR_ERR_SHAPE, "pointwise: 3-D input");
    tensor_release(in[0]);
    {
      int64_t ok[2] = {4, 16}, t16[2] = {16, 4};
      tensor_t *tt = NULL;
      tensor_zeros(ok, 2, TENSOR_FLOAT64, &in[0]);
      expect_refused(m, in, nin, TENSOR_ERR_DTYPE, "pointwise: float64 input");
      tensor_release(in[0]);
      tensor_zeros(t16, 2, TENSOR_FLOAT32, &tt);
      tensor_transpose(tt, 0, 1, &in[0]);
      tensor_release(tt);
      expect_refused(m, in, nin, TENSOR_ERR_SHAPE, "pointwise: transposed input");
      expect_refused(m, in, nin - 1, TENSOR_ERR_INVALID_ARGUMENT, "pointwise: one input short");
    }
    {
      tensor_t *out[2] = {0};
      CHECK(tensor_aoti_run(NULL, in, nin, out, 2) == TENSOR_ERR_NULL_POINTER, "NULL model");
      CHECK(tensor_aoti_run(m, NULL, nin, out, 2) == TENSOR_ERR_NULL_POINTER, "NULL inputs");
      CHECK(tensor_aoti_run(m, in, nin, NULL, 2) == TENSOR_ERR_NULL_POINTER, "NULL outputs");
      tensor_t *holes[2] = {NULL, in[1]};
      CHECK(tensor_aoti_run(m, holes, 2, out, 2) == TENSOR_ERR_NULL_POINTER, "NULL input 0: %s",
            tensor_aoti_last_error());
      CHECK(tensor_aoti_run(m, in, nin, out, 1) == TENSOR_ERR_INVALID_ARGUMENT && out[0] == NULL,
            "outputs array one short: %s", tensor_aoti_last_error());
    }
    {
      /* The same tensor as both inputs: the model writes neither, so it runs. */
      int64_t ok[2] = {4, 16};
      tensor_t *x = NULL, *same[2], *out[2] = {0};
      tensor_ones(ok, 2, TENSOR_FLOAT32, &x);
      same[0] = same[1] = x;
      CHECK(tensor_aoti_run(m, same, 2, out, 2) == TENSOR_OK, "same tensor twice: %s",
            tensor_aoti_last_error());
      tensor_release(out[0]);
      tensor_release(out[1]);
      tensor_release(x);
    }
  } else if (strcmp(name, "dynamic") == 0) {
    /* Dynamic batch: in range runs (the .run<k> sets); a batch above the max (64) or of 1
     * (torch specialises batches 0 and 1 away: the compiled range starts at 2) is refused;
     * so are different batches for x and y? (the generated checks cannot tell: both are
     * within range; the kernels use x's size). */
    int64_t huge[2] = {65, 16};
    tensor_release(in[0]);
    tensor_release(in[1]);
    tensor_zeros(huge, 2, TENSOR_FLOAT32, &in[0]);
    tensor_zeros(huge, 2, TENSOR_FLOAT32, &in[1]);
    expect_refused(m, in, nin, TENSOR_ERR_SHAPE, "dynamic: batch 65");
    tensor_release(in[0]);
    tensor_release(in[1]);
    tensor_zeros(small, 2, TENSOR_FLOAT32, &in[0]);
    tensor_zeros(small, 2, TENSOR_FLOAT32, &in[1]);
    expect_refused(m, in, nin, TENSOR_ERR_SHAPE, "dynamic: batch 1");
    {
      /* x and y share the batch dim: x [8, 16] with y [4, 16] (both in range) is refused,
       * whatever AOTI_RUNTIME_CHECK_INPUTS says (the model would read past y). */
      int64_t b8[2] = {8, 16}, b4[2] = {4, 16};
      tensor_release(in[0]);
      tensor_release(in[1]);
      tensor_zeros(b8, 2, TENSOR_FLOAT32, &in[0]);
      tensor_zeros(b4, 2, TENSOR_FLOAT32, &in[1]);
      expect_refused(m, in, nin, TENSOR_ERR_SHAPE, "dynamic: x batch 8, y batch 4");
    }
  }
  for (i = 0; i < nin; i++) tensor_release(in[i]);
}

/* Two threads run one model at once (the second waits: tensor_aoti.h), each checking its
 * outputs against the eager ones; then a release while a thread runs (it waits for the
 * run to return). */
struct runner {
  tensor_aoti_model_t *m;
  const char *dir, *name;
  int runs, failed;
  volatile int started;
};

static void *run_many(void *arg) {
  struct runner *r = arg;
  size_t nin = tensor_aoti_num_inputs(r->m), nout = tensor_aoti_num_outputs(r->m), i;
  tensor_t *in[16] = {0}, *out[16] = {0}, *want[16] = {0};
  char stem[300];
  int k;
  snprintf(stem, sizeof stem, "%s.in", r->name);
  for (i = 0; i < nin; i++) in[i] = load_npy(r->dir, stem, (int)i);
  snprintf(stem, sizeof stem, "%s.out", r->name);
  for (i = 0; i < nout; i++) want[i] = load_npy(r->dir, stem, (int)i);
  for (k = 0; k < r->runs; k++) {
    r->started = 1;
    if (tensor_aoti_run(r->m, in, nin, out, nout) != TENSOR_OK) {
      r->failed++;
      continue;
    }
    for (i = 0; i < nout; i++) {
      double e = max_rel_err(out[i], want[i]);
      if (!(e >= 0 && e <= 1e-4)) r->failed++;
      tensor_release(out[i]);
    }
  }
  for (i = 0; i < nin; i++) tensor_release(in[i]);
  for (i = 0; i < nout; i++) tensor_release(want[i]);
  return NULL;
}

static void threads(const char *dir, const char *name) {
  char path[4096];
  tensor_aoti_model_t *m = NULL;
  struct runner a, b;
  pthread_t ta, tb;
  struct timespec ms = {0, 2000000};
  snprintf(path, sizeof path, "%s/%s.pt2", dir, name);
  if (tensor_aoti_load(path, &m) != TENSOR_OK) {
    CHECK(0, "threads: load %s: %s", path, tensor_aoti_last_error());
    return;
  }
  memset(&a, 0, sizeof a);
  a.m = m, a.dir = dir, a.name = name, a.runs = 8;
  b = a;
  pthread_create(&ta, NULL, run_many, &a);
  pthread_create(&tb, NULL, run_many, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK(a.failed == 0 && b.failed == 0, "threads: %d + %d runs wrong or failed", a.failed, b.failed);
  /* Release while a run is under way: the release waits for it. */
  a.runs = 1, a.failed = 0, a.started = 0;
  pthread_create(&ta, NULL, run_many, &a);
  while (!a.started) nanosleep(&ms, NULL);
  tensor_aoti_release(m);
  pthread_join(ta, NULL);
  CHECK(a.failed == 0, "threads: the run released under it failed");
  printf("%s: two threads and a release during a run: ok\n", name);
}

/* The model writes its input 0 (x += y): refused for a read-only input (a READ_ONLY-mapped
 * .npy, a storage marked read-only as a read-only DLPack import is) and for inputs sharing
 * memory; otherwise it runs, x holds what eager PyTorch left in it, and x's version is
 * bumped. */
static void mutate(tensor_aoti_model_t *m, const char *dir, const char *name) {
  char path[4096], stem[300];
  tensor_t *in[2] = {0}, *out[1] = {0}, *want = NULL, *after = NULL, *ro = NULL;
  uint64_t v0;
  double e;
  snprintf(stem, sizeof stem, "%s.in", name);
  in[0] = load_npy(dir, stem, 0);
  in[1] = load_npy(dir, stem, 1);
  snprintf(path, sizeof path, "%s/%s.in0.npy", dir, name);
  if (!in[0] || !in[1] || tensor_load_npy(path, TENSOR_MAP_READ_ONLY, &ro) != TENSOR_OK) {
    CHECK(0, "mutate: inputs");
    return;
  }
  {
    tensor_t *bad[2] = {ro, in[1]};
    expect_refused(m, bad, 2, TENSOR_ERR_READ_ONLY, "mutate: read-only mapped input");
  }
  {
    tensor_t *c = NULL, *bad[2];
    tensor_clone(in[0], TENSOR_CONTIGUOUS_FORMAT, &c);
    storage_mark_read_only(tensor_storage(c));
    bad[0] = c, bad[1] = in[1];
    expect_refused(m, bad, 2, TENSOR_ERR_READ_ONLY, "mutate: read-only storage");
    tensor_release(c);
  }
  {
    tensor_t *same[2] = {in[0], in[0]};
    expect_refused(m, same, 2, TENSOR_ERR_OVERLAP, "mutate: the written input as both inputs");
  }
  v0 = tensor_version(in[0]);
  CHECK(tensor_aoti_run(m, in, 2, out, 1) == TENSOR_OK, "mutate: run: %s", tensor_aoti_last_error());
  CHECK(tensor_version(in[0]) == v0 + 1, "mutate: version %llu after the run, was %llu",
        (unsigned long long)tensor_version(in[0]), (unsigned long long)v0);
  snprintf(stem, sizeof stem, "%s.out", name);
  want = load_npy(dir, stem, 0);
  e = out[0] && want ? max_rel_err(out[0], want) : -1;
  CHECK(e >= 0 && e <= 1e-4, "mutate: output max relative error %g", e);
  snprintf(stem, sizeof stem, "%s.mutated", name);
  after = load_npy(dir, stem, 0);
  e = after ? max_rel_err(in[0], after) : -1;
  CHECK(e >= 0 && e <= 1e-4, "mutate: written input max relative error %g", e);
  printf("mutate: read-only and overlapping inputs refused; x written as eager, version bumped\n");
  tensor_release(out[0]);
  tensor_release(want);
  tensor_release(after);
  tensor_release(ro);
  tensor_release(in[0]);
  tensor_release(in[1]);
}

/* Names an older loader wrote its code file to ($TMPDIR/tensor_aoti-<pid>-<n>.so),
 * pre-created: loading must not depend on any name in $TMPDIR (removed at the end). */
static void precreate(int create) {
  const char *tmp = getenv("TMPDIR");
  char path[4096];
  int n;
  for (n = 0; n < 64; n++) {
    snprintf(path, sizeof path, "%s/tensor_aoti-%d-%d.so", tmp ? tmp : "/tmp", (int)getpid(), n);
    if (create) {
      int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
      if (fd >= 0) close(fd);
    } else {
      unlink(path);
    }
  }
}

/* Entries of $TMPDIR named tensor_aoti* (when the test gives it: the loader must leave
 * nothing there; valgrind keeps files of its own there). */
static int tmp_entries(void) {
  const char *tmp = getenv("TENSOR_AOTI_TEST_TMPDIR");
  DIR *d;
  struct dirent *e;
  int n = 0;
  if (!tmp || !(d = opendir(tmp))) return 0;
  while ((e = readdir(d)))
    if (strncmp(e->d_name, "tensor_aoti", 11) == 0) n++;
  closedir(d);
  return n;
}

/* Mappings of model code files (memfds named tensor_aoti_model) in this process. */
static int model_mappings(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int n = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, "tensor_aoti_model")) n++;
  fclose(f);
  return n;
}

static int live_storages(void) {
  tensor_memory_stats_t st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  tensor_memory_stats(&st);
  return (int)(st.live_storages + st.live_external_storages);
}

/* A bare model .so. With its wrapper source beside it (`checked`): the same input checks
 * as its package (a batch of 7 refused with SHAPE), a run. Without (`unchecked`): it loads,
 * says it checks no inputs, and refuses every run, a right one included (whatever
 * AOTI_RUNTIME_CHECK_INPUTS says: the host is also run with it set to 0). Nothing leaks. */
static int bare(const char *so, int checked) {
  tensor_aoti_model_t *m = NULL;
  tensor_t *in[2] = {0}, *out[2] = {0};
  int64_t big[2] = {7, 16}, ok[2] = {4, 16};
  size_t i;
  CHECK(tensor_aoti_load(so, &m) == TENSOR_OK, "load %s: %s", so, tensor_aoti_last_error());
  if (!m) return 1;
  CHECK(tensor_aoti_checks_inputs(m) == checked, "bare: checks_inputs %d, want %d",
        tensor_aoti_checks_inputs(m), checked);
  for (i = 0; i < 2; i++) tensor_zeros(big, 2, TENSOR_FLOAT32, &in[i]);
  expect_refused(m, in, 2, checked ? TENSOR_ERR_SHAPE : TENSOR_ERR_INVALID_ARGUMENT, "bare: batch 7");
  for (i = 0; i < 2; i++) {
    tensor_release(in[i]);
    tensor_zeros(ok, 2, TENSOR_FLOAT32, &in[i]);
  }
  if (checked) {
    CHECK(tensor_aoti_run(m, in, 2, out, 2) == TENSOR_OK, "bare: run: %s", tensor_aoti_last_error());
  } else {
    expect_refused(m, in, 2, TENSOR_ERR_INVALID_ARGUMENT, "bare, unchecked: a right input");
    CHECK(strstr(tensor_aoti_last_error(), "cannot be checked") != NULL, "bare: message '%s'",
          tensor_aoti_last_error());
  }
  for (i = 0; i < 2; i++) {
    tensor_release(out[i]);
    tensor_release(in[i]);
  }
  tensor_aoti_release(m);
  CHECK(live_storages() == 0, "bare: %d storages alive after release", live_storages());
  printf("host: %d passed, %d failed\n", passed, failures);
  return failures ? 1 : 0;
}

/* Packages the loader must refuse before any of their code runs: DIR/refuse.txt lines
 * "name|text|text...", each text in the message; no model code file stays mapped. */
static int refuse(const char *dir, const char *list) {
  char path[4096], line[2048];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, list);
  f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return 2;
  }
  while (fgets(line, sizeof line, f)) {
    char *name = strtok(line, "|\n"), *text, *status_text;
    tensor_aoti_model_t *m = NULL;
    tensor_status_t s, want = TENSOR_ERR_INVALID_ARGUMENT;
    if (!name || !*name) continue;
    status_text = strchr(name, '@'); /* name@STATUS: the status wanted, else INVALID_ARGUMENT */
    if (status_text) {
      *status_text++ = 0;
      want = (tensor_status_t)atoi(status_text);
    }
    snprintf(path, sizeof path, "%s/%s%s", dir, name, strchr(name, '.') ? "" : ".pt2");
    s = tensor_aoti_load(path, &m);
    CHECK(s == want && m == NULL, "%s: load status %d, want %d (%s)", name, s, want,
          tensor_aoti_last_error());
    if (m) tensor_aoti_release(m);
    while ((text = strtok(NULL, "|\n")))
      CHECK(strstr(tensor_aoti_last_error(), text) != NULL, "%s: the message lacks '%s': %s", name,
            text, tensor_aoti_last_error());
    CHECK(model_mappings() == 0, "%s: model code still mapped after the refusal", name);
    printf("%s refused: %s\n", name, tensor_aoti_last_error());
  }
  fclose(f);
  CHECK(live_storages() == 0, "refuse: %d storages alive", live_storages());
  printf("host: %d passed, %d failed\n", passed, failures);
  return failures ? 1 : 0;
}

/* Loads a package and prints its ISA and whether it checks inputs (for the test to read
 * with the stderr note). */
static int load_only(const char *pt2) {
  tensor_aoti_model_t *m = NULL;
  if (tensor_aoti_load(pt2, &m) != TENSOR_OK) {
    fprintf(stderr, "load %s: %s\n", pt2, tensor_aoti_last_error());
    return 1;
  }
  printf("cpu_isa=%s checks_inputs=%d\n", tensor_aoti_cpu_isa(m), tensor_aoti_checks_inputs(m));
  tensor_aoti_release(m);
  return 0;
}

int main(int argc, char **argv) {
  char path[4096], line[512];
  FILE *manifest;
  if (argc == 4 && strcmp(argv[1], "--bare") == 0) return bare(argv[2], strcmp(argv[3], "checked") == 0);
  if (argc == 3 && strcmp(argv[1], "--refuse") == 0) return refuse(argv[2], "refuse.txt");
  if (argc == 3 && strcmp(argv[1], "--hostile") == 0) return refuse(argv[2], "hostile.txt");
  if (argc == 3 && strcmp(argv[1], "--load") == 0) return load_only(argv[2]);
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR [model ...]\n", argv[0]);
    return 2;
  }
  snprintf(path, sizeof path, "%s/manifest.txt", argv[1]);
  manifest = fopen(path, "r");
  if (!manifest) {
    fprintf(stderr, "cannot open %s\n", path);
    return 2;
  }
  precreate(1);
  {
    tensor_aoti_model_t *m = (tensor_aoti_model_t *)&failures; /* must stay untouched */
    CHECK(tensor_aoti_load(NULL, &m) == TENSOR_ERR_NULL_POINTER, "load(NULL)");
    CHECK(tensor_aoti_load("/nonexistent.pt2", &m) == TENSOR_ERR_IO, "load(missing): %s",
          tensor_aoti_last_error());
    CHECK(strstr(tensor_aoti_last_error(), "/nonexistent.pt2") != NULL, "message names the path");
    snprintf(path, sizeof path, "%s/manifest.txt", argv[1]);
    CHECK(tensor_aoti_load(path, &m) == TENSOR_ERR_IO, "load(a text file): %s", tensor_aoti_last_error());
    CHECK(m == (tensor_aoti_model_t *)&failures, "out written on failure");
    CHECK(tensor_aoti_num_inputs(NULL) == 0 && tensor_aoti_num_outputs(NULL) == 0, "NULL counts");
    tensor_aoti_release(NULL);
  }
  while (fgets(line, sizeof line, manifest)) {
    char name[256], stem_in[300], stem_out[300], layout[16];
    int nin, nout, nruns, k, wanted = argc == 2;
    tensor_aoti_model_t *m = NULL;
    int cl;
    if (sscanf(line, "%255s %d %d %d %15s", name, &nin, &nout, &nruns, layout) != 5) continue;
    cl = strcmp(layout, "cl") == 0;
    for (k = 2; k < argc; k++) wanted |= strcmp(argv[k], name) == 0;
    if (!wanted) continue;
    snprintf(path, sizeof path, "%s/%s.pt2", argv[1], name);
    if (tensor_aoti_load(path, &m) != TENSOR_OK) {
      CHECK(0, "%s: load failed: %s", name, tensor_aoti_last_error());
      continue;
    }
    CHECK(tensor_aoti_num_inputs(m) == (size_t)nin, "%s: %zu inputs, want %d", name,
          tensor_aoti_num_inputs(m), nin);
    CHECK(tensor_aoti_num_outputs(m) == (size_t)nout, "%s: %zu outputs, want %d", name,
          tensor_aoti_num_outputs(m), nout);
    CHECK(strcmp(tensor_aoti_cpu_isa(m), "AVX2") == 0 || getenv("TENSOR_AOTI_MARCH"),
          "%s: cpu_isa '%s', the test models are compiled for AVX2", name, tensor_aoti_cpu_isa(m));
    CHECK(tensor_aoti_checks_inputs(m), "%s: no input checks", name);
    if (strcmp(name, "mutate") == 0) {
      mutate(m, argv[1], name);
      tensor_aoti_release(m);
      CHECK(live_storages() == 0, "%s: %d storages alive after tensor_aoti_release", name, live_storages());
      continue;
    }
    snprintf(stem_in, sizeof stem_in, "%s.in", name);
    snprintf(stem_out, sizeof stem_out, "%s.out", name);
    run_and_compare(m, argv[1], name, stem_in, stem_out, cl);
    run_and_compare(m, argv[1], name, stem_in, stem_out, cl); /* twice: the workspace is reused */
    for (k = 0; k < nruns; k++) {
      snprintf(stem_in, sizeof stem_in, "%s.run%d.in", name, k);
      snprintf(stem_out, sizeof stem_out, "%s.run%d.out", name, k);
      run_and_compare(m, argv[1], name, stem_in, stem_out, cl);
    }
    wrong_inputs(m, name);
    tensor_aoti_release(m);
    CHECK(live_storages() == 0, "%s: %d storages alive after tensor_aoti_release", name, live_storages());
  }
  fclose(manifest);
  {
    /* two threads on one model: the test models' pointwise (a zoo directory has none) */
    FILE *f;
    snprintf(path, sizeof path, "%s/pointwise.pt2", argv[1]);
    f = fopen(path, "rb");
    if (f) fclose(f);
    if (argc == 2 && f) threads(argv[1], "pointwise");
  }
  CHECK(live_storages() == 0, "threads: %d storages alive", live_storages());
  precreate(0);
  CHECK(tmp_entries() == 0, "the loads left %d entries in $TMPDIR", tmp_entries());
  printf("host: %d passed, %d failed\n", passed, failures);
  return failures ? 1 : 0;
}
