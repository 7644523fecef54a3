/* Files at the edges, from C: what a save does to what is already at its path (a planted
 * symlink at a temporary name, a symlink path, a file's mode, a FIFO, a device, a
 * directory), saves racing each other and a reader, loaders given a FIFO (which must not
 * block), ENOMEM reported as OUT_OF_MEMORY, and a safetensors name with a NUL byte. */
#define _GNU_SOURCE /* memfd_create */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "harness.h"

#include "files_util.h"

/* A 1-D int32 tensor of n elements, all `value`. */
static tensor_t *filled(int64_t n, double value) {
  tensor_t *t = NULL;
  CHECK_OK(tensor_full(&n, 1, TENSOR_INT32, value, &t));
  return t;
}

/* Whether `t` holds exactly n int32 elements equal to `value`. */
static int holds(const tensor_t *t, int64_t n, int32_t value) {
  const int32_t *p = (const int32_t *)tensor_data_ptr(t);
  int64_t i;
  int ok = tensor_dtype(t) == TENSOR_INT32 && tensor_numel(t) == n;
  for (i = 0; ok && i < n; i++) ok = p[i] == value;
  return ok;
}

/* Whether the .npy at `path` holds exactly n int32 elements equal to `value`. */
static int npy_holds(const char *path, int64_t n, int32_t value) {
  tensor_t *t = NULL;
  int ok;
  if (tensor_load_npy(path, TENSOR_MAP_READ_ONLY, &t) != TENSOR_OK) return 0;
  ok = holds(t, n, value);
  tensor_release(t);
  return ok;
}

/* Number of entries of `dir` whose name contains ".tmp-" (leftover temporary files). */
static int stray_temporaries(void) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  if (!d) return -1;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".tmp-") && strncmp(e->d_name, ".planted", 8) != 0) n++;
  closedir(d);
  return n;
}

/* ---- 1. a symlink planted at a temporary name is never followed ---------------------- */

static void test_planted_symlinks(void) {
  char victim[128], path[128], link[192], st[128];
  unsigned char before[64] = "precious bytes the save must not touch", after[64];
  const char *name = "t.npy", *st_name = "t.safetensors";
  const char *nm[1] = {"a"};
  const tensor_t *ts[1];
  tensor_t *t = filled(4, 7);
  struct stat sb;
  int i;
  path_of(victim, sizeof victim, ".planted-victim");
  path_of(path, sizeof path, name);
  path_of(st, sizeof st, st_name);
  write_file(victim, before, sizeof before);
  /* The names the old writer used (".<name>.tmp-<pid>"), for this pid and its neighbours,
   * each a symlink to the victim. */
  for (i = -64; i <= 64; i++) {
    snprintf(link, sizeof link, "%s/.%s.tmp-%ld", dir, name, (long)getpid() + i);
    CHECK(symlink(victim, link) == 0);
    snprintf(link, sizeof link, "%s/.%s.tmp-%ld", dir, st_name, (long)getpid() + i);
    CHECK(symlink(victim, link) == 0);
  }
  CHECK_OK(tensor_save_npy(path, t));
  ts[0] = t;
  CHECK_OK(tensor_save_safetensors(st, nm, ts, 1));
  CHECK(read_file(victim, after, sizeof after) == sizeof before && memcmp(before, after, sizeof before) == 0);
  CHECK(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode));
  CHECK(npy_holds(path, 4, 7));
  /* Every planted link is still there, still a link. */
  for (i = -64; i <= 64; i++) {
    snprintf(link, sizeof link, "%s/.%s.tmp-%ld", dir, name, (long)getpid() + i);
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    unlink(link);
    snprintf(link, sizeof link, "%s/.%s.tmp-%ld", dir, st_name, (long)getpid() + i);
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    unlink(link);
  }
  CHECK(stray_temporaries() == 0);
  unlink(victim);
  unlink(path);
  unlink(st);
  tensor_release(t);
}

/* ---- 2. two threads saving one path while a third loads it --------------------------- */

#define RACE_ROUNDS 40

static char race_path[128];

struct saver {
  int64_t n;
  int32_t value;
  int failures;
};

static void *save_loop(void *arg) {
  struct saver *s = arg;
  tensor_t *t = filled(s->n, s->value);
  int i;
  for (i = 0; i < RACE_ROUNDS; i++)
    if (tensor_save_npy(race_path, t) != TENSOR_OK) {
      if (s->failures++ == 0) fprintf(stderr, "save failed: %s\n", tensor_last_error());
    }
  tensor_release(t);
  return NULL;
}

static void *load_loop(void *arg) {
  int *failures = arg;
  tensor_t *t;
  int i, whole;
  for (i = 0; i < 4 * RACE_ROUNDS; i++) {
    t = NULL;
    /* One load: the old file or one of the two new ones, whole. */
    whole = tensor_load_npy(race_path, TENSOR_MAP_READ_ONLY, &t) == TENSOR_OK &&
            (holds(t, 1000, 1) || holds(t, 3000, 2) || holds(t, 10, 0));
    if (!whole && (*failures)++ == 0) fprintf(stderr, "load %d saw no whole file: %s\n", i, tensor_last_error());
    tensor_release(t);
  }
  return NULL;
}

static void test_concurrent_saves(void) {
  struct saver a = {1000, 1, 0}, b = {3000, 2, 0};
  int load_failures = 0;
  pthread_t ta, tb, tl;
  tensor_t *t0 = filled(10, 0);
  path_of(race_path, sizeof race_path, "race.npy");
  CHECK_OK(tensor_save_npy(race_path, t0));
  tensor_release(t0);
  CHECK(pthread_create(&tl, NULL, load_loop, &load_failures) == 0);
  CHECK(pthread_create(&ta, NULL, save_loop, &a) == 0);
  CHECK(pthread_create(&tb, NULL, save_loop, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_join(tl, NULL);
  CHECK(a.failures == 0 && b.failures == 0);
  CHECK(load_failures == 0);
  /* The last save landed whole. */
  CHECK(npy_holds(race_path, 1000, 1) || npy_holds(race_path, 3000, 2));
  CHECK(stray_temporaries() == 0);
  unlink(race_path);
}

/* ---- 3. what is at the path: a symlink, a mode, a FIFO, a device, a directory -------- */

static void test_symlink_path(void) {
  char real[128], link[128], chain[128], dangling[128], gone[128], target[256];
  tensor_t *t = filled(5, 3);
  const char *nm[1] = {"x"};
  const tensor_t *ts[1];
  tensor_safetensors_t *f = NULL;
  struct stat sb;
  ssize_t n;
  path_of(real, sizeof real, "real.npy");
  path_of(link, sizeof link, "link.npy");
  path_of(chain, sizeof chain, "chain.npy");
  path_of(dangling, sizeof dangling, "dangling.npy");
  path_of(gone, sizeof gone, "not-yet.npy");
  write_file(real, "old", 3);
  CHECK(symlink("real.npy", link) == 0);  /* relative to the link's directory */
  CHECK(symlink(link, chain) == 0);       /* a chain of two */
  CHECK(symlink("not-yet.npy", dangling) == 0);
  CHECK_OK(tensor_save_npy(chain, t));
  /* Both links stay links; the final target gets the content. */
  CHECK(lstat(chain, &sb) == 0 && S_ISLNK(sb.st_mode));
  CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
  n = readlink(link, target, sizeof target - 1);
  CHECK(n == 8 && memcmp(target, "real.npy", 8) == 0);
  CHECK(lstat(real, &sb) == 0 && S_ISREG(sb.st_mode));
  CHECK(npy_holds(real, 5, 3));
  /* A dangling link: its target is created, as numpy.save (which writes through) does. */
  CHECK_OK(tensor_save_npy(dangling, t));
  CHECK(lstat(dangling, &sb) == 0 && S_ISLNK(sb.st_mode));
  CHECK(npy_holds(gone, 5, 3));
  /* safetensors saves go through the same writer. */
  ts[0] = t;
  CHECK_OK(tensor_save_safetensors(link, nm, ts, 1));
  CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
  CHECK_OK(tensor_safetensors_load(real, &f));
  CHECK(tensor_safetensors_count(f) == 1);
  tensor_safetensors_release(f);
  CHECK(stray_temporaries() == 0);
  unlink(chain);
  unlink(link);
  unlink(dangling);
  unlink(real);
  unlink(gone);
  tensor_release(t);
}

static void test_modes_kept(void) {
  char path[128], fresh[128], st[128];
  tensor_t *t = filled(2, 1);
  const char *nm[1] = {"x"};
  const tensor_t *ts[1];
  struct stat sb;
  mode_t old = umask(022);
  path_of(path, sizeof path, "private.npy");
  path_of(fresh, sizeof fresh, "fresh.npy");
  path_of(st, sizeof st, "private.safetensors");
  write_file(path, "x", 1);
  CHECK(chmod(path, 0600) == 0);
  CHECK_OK(tensor_save_npy(path, t));
  CHECK(stat(path, &sb) == 0 && (sb.st_mode & 07777) == 0600);
  CHECK(npy_holds(path, 2, 1));
  write_file(st, "x", 1);
  CHECK(chmod(st, 0640) == 0);
  ts[0] = t;
  CHECK_OK(tensor_save_safetensors(st, nm, ts, 1));
  CHECK(stat(st, &sb) == 0 && (sb.st_mode & 07777) == 0640);
  /* A new file: 0666 less the umask. */
  umask(027);
  CHECK_OK(tensor_save_npy(fresh, t));
  CHECK(stat(fresh, &sb) == 0 && (sb.st_mode & 07777) == 0640);
  umask(old);
  unlink(path);
  unlink(fresh);
  unlink(st);
  tensor_release(t);
}

static void test_not_regular_refused(void) {
  char fifo[128], devlink[128], sub[128], target[64];
  tensor_t *t = filled(2, 1);
  const char *nm[1] = {"x"};
  const tensor_t *ts[1];
  struct stat sb, null_before, null_after;
  ssize_t n;
  ts[0] = t;
  path_of(fifo, sizeof fifo, "pipe.npy");
  path_of(devlink, sizeof devlink, "devnull.npy");
  path_of(sub, sizeof sub, "subdir.npy");
  CHECK(mkfifo(fifo, 0600) == 0);
  CHECK_STATUS(tensor_save_npy(fifo, t), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("tensor_save_npy");
  CHECK_ERROR_HAS("pipe.npy");
  CHECK_ERROR_HAS("FIFO");
  CHECK_STATUS(tensor_save_safetensors(fifo, nm, ts, 1), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("FIFO");
  CHECK(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
  /* A character device, reached through a link (the test never names /dev/null itself as
   * the path: a writer that renamed over it would replace the system's /dev/null). */
  CHECK(stat("/dev/null", &null_before) == 0);
  CHECK(symlink("/dev/null", devlink) == 0);
  CHECK_STATUS(tensor_save_npy(devlink, t), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("devnull.npy");
  CHECK_ERROR_HAS("character device");
  CHECK(lstat(devlink, &sb) == 0 && S_ISLNK(sb.st_mode));
  n = readlink(devlink, target, sizeof target - 1);
  CHECK(n == 9 && memcmp(target, "/dev/null", 9) == 0);
  CHECK(stat("/dev/null", &null_after) == 0 && S_ISCHR(null_after.st_mode));
  CHECK(null_after.st_ino == null_before.st_ino && null_after.st_rdev == null_before.st_rdev);
  /* A rename that fails after the temporary file was written (a trailing slash: "not a
   * directory") leaves no temporary file behind. */
  {
    char slash[128];
    path_of(slash, sizeof slash, "absent.npy/");
    CHECK_STATUS(tensor_save_npy(slash, t), TENSOR_ERR_IO);
    CHECK_ERROR_HAS("absent.npy/");
    CHECK_ERROR_HAS("cannot replace");
    CHECK(stray_temporaries() == 0);
  }
  /* A directory. */
  CHECK(mkdir(sub, 0700) == 0);
  CHECK_STATUS(tensor_save_npy(sub, t), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("directory");
  CHECK(lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode));
  CHECK(stray_temporaries() == 0);
  rmdir(sub);
  unlink(devlink);
  unlink(fifo);
  tensor_release(t);
}

/* ---- 4. loaders given a FIFO return promptly ----------------------------------------- */

static void test_fifo_loads(void) {
  char fifo[128];
  storage_t *s = NULL;
  tensor_t *t = NULL;
  tensor_safetensors_t *f = NULL;
  path_of(fifo, sizeof fifo, "load-pipe");
  CHECK(mkfifo(fifo, 0600) == 0);
  /* A loader that blocks in open() ends the program here (SIGALRM), failing the test. */
  alarm(10);
  CHECK_STATUS(storage_from_file(fifo, 0, TENSOR_MAP_TO_END, TENSOR_MAP_READ_ONLY, &s), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("load-pipe");
  CHECK_ERROR_HAS("FIFO");
  CHECK_STATUS(storage_from_file(fifo, 0, 16, TENSOR_MAP_SHARED, &s), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("FIFO");
  CHECK_STATUS(tensor_load_npy(fifo, TENSOR_MAP_PRIVATE, &t), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("FIFO");
  CHECK_STATUS(tensor_safetensors_load(fifo, &f), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("FIFO");
  /* A character device: not a file to map either. */
  CHECK_STATUS(tensor_load_npy("/dev/null", TENSOR_MAP_READ_ONLY, &t), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("character device");
  alarm(0);
  CHECK(s == NULL && t == NULL && f == NULL);
  unlink(fifo);
}

/* ---- 5. ENOMEM is OUT_OF_MEMORY ---------------------------------------------------- */

/* Whether this program runs under valgrind (which preloads its vgpreload_*.so). */
static int under_valgrind(void) {
  const char *p = getenv("LD_PRELOAD");
  return p != NULL && strstr(p, "vgpreload") != NULL;
}

/* A mapping that cannot fit the address space: the kernel's mmap says ENOMEM, which must be
 * OUT_OF_MEMORY. Valgrind bounces such a request itself with EINVAL (IO), which is no
 * ENOMEM, so there the check is only that the call fails cleanly. */
static void check_enomem(tensor_status_t st, const char *fn) {
  if (under_valgrind() && st == TENSOR_ERR_IO && strstr(tensor_last_error(), "Invalid argument")) {
    printf("under valgrind, %s's huge mmap fails with EINVAL, not ENOMEM\n", fn);
    return;
  }
  CHECK(st == TENSOR_ERR_OUT_OF_MEMORY);
  CHECK(strstr(tensor_last_error(), fn) != NULL);
  CHECK_ERROR_HAS("Cannot allocate memory");
}

static void test_enomem(void) {
  storage_t *s = NULL;
  char path[64];
  int fd;
  /* A segment larger than the address space: sized (sparse), then mmap fails. */
  check_enomem(storage_new_shared((size_t)1 << 62, &s), "storage_new_shared");
  CHECK(s == NULL);
  /* A sparse 2^50-byte file (a memfd, opened by its /proc path), mapped whole. */
  fd = memfd_create("libtensor-sparse", MFD_CLOEXEC);
  CHECK(fd >= 0);
  if (fd < 0) return;
  CHECK(ftruncate(fd, (off_t)1 << 50) == 0);
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  check_enomem(storage_from_file(path, 0, TENSOR_MAP_TO_END, TENSOR_MAP_READ_ONLY, &s), "storage_from_file");
  CHECK(s == NULL);
  close(fd);
}

/* ---- 6. a safetensors name with a NUL byte is refused ------------------------------- */

static void test_nul_name(void) {
  /* Two one-byte tensors: "ok" at offset 0, "x\0y" at offset 1 (index 1 in data order). */
  static const char json[] =
      "{\"ok\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"x\\u0000y\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}";
  unsigned char bytes[256];
  char path[128];
  uint64_t hl = (sizeof json - 1 + 7) / 8 * 8;
  tensor_safetensors_t *f = NULL;
  int i;
  memset(bytes, ' ', sizeof bytes);
  for (i = 0; i < 8; i++) bytes[i] = (unsigned char)(hl >> (8 * i));
  memcpy(bytes + 8, json, sizeof json - 1);
  bytes[8 + hl] = 11;
  bytes[8 + hl + 1] = 22;
  path_of(path, sizeof path, "nul.safetensors");
  write_file(path, bytes, 8 + hl + 2);
  CHECK_STATUS(tensor_safetensors_load(path, &f), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("nul.safetensors");
  CHECK_ERROR_HAS("tensor 1");
  CHECK_ERROR_HAS("NUL");
  CHECK(f == NULL);
  tensor_safetensors_release(f);
  unlink(path);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/libtensor-edges-%ld", (long)getpid());
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return 1;
  test_planted_symlinks();
  test_concurrent_saves();
  test_symlink_path();
  test_modes_kept();
  test_not_regular_refused();
  test_enomem();
  test_nul_name();
  test_fifo_loads(); /* last: before the fix it blocked until the alarm */
  CHECK(rmdir(dir) == 0);
  return harness_finish("test_file_edges");
}
