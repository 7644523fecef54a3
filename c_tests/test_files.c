/* Memory beyond the allocator, from C: storages over mapped files (three modes, any
 * offset, every error a user can act on), zero-copy loading of .safetensors and .npy
 * (the data pointer inside the mapping, RSS not growing by the file size), saving both,
 * hostile files, shared memory between two processes (fork + SCM_RIGHTS) with either
 * side exiting first, and copies between two mappings of the same pages. */
#define _DEFAULT_SOURCE /* CMSG_SPACE / CMSG_LEN */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* The head of DLPack 1.x's DLManagedTensorVersioned (public ABI), up to the flags this
 * test reads; the DLTensor that follows is not used here. */
struct DLManagedTensorVersioned {
  uint32_t version_major, version_minor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
};
#define DLPACK_FLAG_READ_ONLY 1u

#include "harness.h"

#include "files_util.h"

/* Whether `path` appears in this process's mappings. */
static int is_mapped_now(const char *path) {
  char line[512];
  int found = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strstr(line, path)) found = 1;
  fclose(f);
  return found;
}

/* Resident set size in bytes (/proc/self/statm, second field). */
static long rss_bytes(void) {
  long size = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

/* ---- 1. storages over a file region ------------------------------------------------- */

static void test_map_modes(void) {
  char path[128];
  unsigned char bytes[10000], back[10000];
  storage_t *s = NULL, *w = NULL, *c = NULL;
  storage_weak_t *weak = NULL;
  tensor_t *t = NULL;
  int64_t sz[] = {100}, ix[] = {3};
  double v = 0;
  size_t i;
  for (i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i % 251);
  path_of(path, sizeof path, "region.bin");
  write_file(path, bytes, sizeof bytes);

  /* Read-only, at an offset that is not a page multiple. */
  CHECK_OK(storage_from_file(path, 4099, 100, TENSOR_MAP_READ_ONLY, &s));
  CHECK(storage_is_mapped(s) && storage_is_read_only(s) && !storage_is_resizable(s));
  CHECK(storage_nbytes(s) == 100);
  CHECK(memcmp(storage_data_ptr(s), bytes + 4099, 100) == 0);
  CHECK(is_mapped_now(path) == 1);
  CHECK_OK(tensor_from_storage(s, 0, sz, NULL, 1, TENSOR_UINT8, &t));
  CHECK_OK(tensor_get_f64(t, ix, 1, &v));
  CHECK(v == (double)bytes[4102]);
  CHECK_STATUS(tensor_set_f64(t, ix, 1, 1.0), TENSOR_ERR_READ_ONLY);
  CHECK_STATUS(tensor_fill_f64(t, 0.0), TENSOR_ERR_READ_ONLY);
  CHECK_STATUS(storage_resize(s, 10), TENSOR_ERR_NOT_RESIZABLE);
  {
    struct DLManagedTensor *u = NULL; /* a read-only export needs the versioned protocol */
    struct DLManagedTensorVersioned *m = NULL;
    CHECK_STATUS(tensor_to_dlpack_unversioned(t, &u), TENSOR_ERR_READ_ONLY);
    CHECK_OK(tensor_to_dlpack(t, &m));
    CHECK(m != NULL && (m->flags & DLPACK_FLAG_READ_ONLY) != 0);
    if (m) m->deleter(m);
  }
  /* Lifetimes: the tensor holds the mapping; a weak reference does not. */
  CHECK_OK(storage_weak_new(s, &weak));
  storage_release(s);
  CHECK(!storage_weak_expired(weak) && is_mapped_now(path) == 1);
  tensor_release(t);
  CHECK(storage_weak_expired(weak));
  CHECK(is_mapped_now(path) == 0);
  storage_weak_release(weak);

  /* Shared read-write: writes reach the file. Private: they do not. */
  CHECK_OK(storage_from_file(path, 10, 2, TENSOR_MAP_SHARED, &w));
  CHECK(!storage_is_read_only(w));
  ((unsigned char *)storage_data_ptr(w))[0] = 7;
  storage_release(w);
  CHECK(read_file(path, back, sizeof back) == sizeof back && back[10] == 7 && back[11] == 11);
  CHECK_OK(storage_from_file(path, 0, TENSOR_MAP_TO_END, TENSOR_MAP_PRIVATE, &c));
  CHECK(storage_nbytes(c) == sizeof bytes);
  ((unsigned char *)storage_data_ptr(c))[0] = 99;
  CHECK(((unsigned char *)storage_data_ptr(c))[10] == 7);
  storage_release(c);
  CHECK(read_file(path, back, sizeof back) == sizeof back && back[0] == 0);
  remove(path);
}

static void test_map_errors(void) {
  char path[128], missing[128];
  unsigned char four[4] = {1, 2, 3, 4};
  storage_t *s = NULL;
  int fd;
  path_of(path, sizeof path, "four.bin");
  path_of(missing, sizeof missing, "no-such-file.bin");
  write_file(path, four, 4);
  CHECK_STATUS(storage_from_file(missing, 0, 1, TENSOR_MAP_READ_ONLY, &s), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("no-such-file.bin");
  CHECK_ERROR_HAS("No such file");
  CHECK_STATUS(storage_from_file(path, 2, 3, TENSOR_MAP_READ_ONLY, &s), TENSOR_ERR_OUT_OF_BOUNDS);
  CHECK_ERROR_HAS("3 bytes at offset 2");
  CHECK_ERROR_HAS("(4 bytes)");
  CHECK_ERROR_HAS("four.bin");
  CHECK_STATUS(storage_from_file(path, 4, TENSOR_MAP_TO_END, TENSOR_MAP_READ_ONLY, &s),
               TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_ERROR_HAS("zero-length");
  CHECK_STATUS(storage_from_file(path, 0, 0, TENSOR_MAP_READ_ONLY, &s), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(storage_from_file(path, 0, 1, (tensor_map_mode_t)7, &s), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(storage_from_file(NULL, 0, 1, TENSOR_MAP_READ_ONLY, &s), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(storage_from_file(path, 0, 1, TENSOR_MAP_READ_ONLY, NULL), TENSOR_ERR_NULL_POINTER);
  CHECK_STATUS(storage_from_file(dir, 0, 1, TENSOR_MAP_READ_ONLY, &s), TENSOR_ERR_IO);
  /* Permission denied (holds for root too): a shared read-write map of a read-only fd. */
  fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  CHECK_STATUS(storage_from_fd(fd, 0, 4, TENSOR_MAP_SHARED, &s), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("ermission denied");
  CHECK_OK(storage_from_fd(fd, 1, 2, TENSOR_MAP_PRIVATE, &s));
  CHECK(((unsigned char *)storage_data_ptr(s))[1] == 3);
  storage_release(s);
  close(fd);
  CHECK_STATUS(storage_from_fd(-1, 0, 4, TENSOR_MAP_READ_ONLY, &s), TENSOR_ERR_INVALID_ARGUMENT);
  CHECK_STATUS(storage_from_fd(1000000, 0, 4, TENSOR_MAP_READ_ONLY, &s), TENSOR_ERR_IO);
  remove(path);
}

/* ---- 2. safetensors: zero copy, RSS, read-only -------------------------------------- */

#define BIG_FLOATS (16u << 20) /* 64 MiB of float32 */

static void test_safetensors_zero_copy_big(void) {
  char path[128];
  const char *json = "{\"big\":{\"dtype\":\"F32\",\"shape\":[16777216],\"data_offsets\":[0,67108864]}}";
  char header[128];
  uint64_t n;
  size_t hl = strlen(json), i, k;
  float *chunk = malloc(1u << 20);
  FILE *f;
  tensor_safetensors_t *file = NULL;
  tensor_t *t = NULL;
  storage_t *s;
  long rss0, rss1, rss2;
  int64_t ix[] = {0};
  double v = 0;
  volatile unsigned char sink = 0;
  const unsigned char *p, *base;

  memcpy(header, json, hl);
  while ((8 + hl) % 8) header[hl++] = ' ';
  n = hl;
  path_of(path, sizeof path, "big.safetensors");
  f = fopen(path, "wb");
  CHECK(f != NULL && chunk != NULL);
  if (!f || !chunk) {
    free(chunk);
    if (f) fclose(f);
    return;
  }
  fwrite(&n, 8, 1, f); /* little-endian host */
  fwrite(header, 1, hl, f);
  for (k = 0; k < 64; k++) {
    for (i = 0; i < (1u << 18); i++) chunk[i] = (float)(k * 1000 + i % 1000);
    CHECK(fwrite(chunk, 1, 1u << 20, f) == (1u << 20));
  }
  fclose(f);
  free(chunk);

  rss0 = rss_bytes();
  CHECK_OK(tensor_safetensors_load(path, &file));
  CHECK_OK(tensor_safetensors_get(file, "big", &t));
  rss1 = rss_bytes();
  s = tensor_storage(t);
  base = storage_data_ptr(s);
  p = tensor_data_ptr(t);
  /* The tensor's bytes are the file's pages: inside the one mapping, after the header. */
  CHECK(storage_is_mapped(s) && storage_is_read_only(s));
  CHECK(p == base + 8 + hl);
  CHECK(p + (size_t)BIG_FLOATS * 4 <= base + storage_nbytes(s));
  CHECK(tensor_nbytes(t) == (size_t)BIG_FLOATS * 4);
  /* Loading did not read the file: RSS grew by far less than its 64 MiB ... */
  CHECK(rss0 > 0 && rss1 - rss0 < (8l << 20));
  /* ... and touching every page does make it resident (the measure can tell). */
  for (i = 0; i < (size_t)BIG_FLOATS * 4; i += 4096) sink ^= p[i];
  rss2 = rss_bytes();
  CHECK(rss2 - rss0 > (48l << 20));
  printf("safetensors 64 MiB: RSS +%ld KiB after load, +%ld KiB after touching every page\n",
         (rss1 - rss0) >> 10, (rss2 - rss0) >> 10);
  ix[0] = 5 * 262144 + 17;
  CHECK_OK(tensor_get_f64(t, ix, 1, &v));
  CHECK(v == 5017.0);
  CHECK_STATUS(tensor_set_f64(t, ix, 1, 1.0), TENSOR_ERR_READ_ONLY);
  tensor_safetensors_release(file);
  CHECK(is_mapped_now(path) == 1); /* the tensor keeps the mapping */
  tensor_release(t);
  CHECK(is_mapped_now(path) == 0);
  (void)sink;
  remove(path);
}

/* ---- 3. save + load round trips ----------------------------------------------------- */

static const tensor_dtype_t all_dtypes[] = {
    TENSOR_UINT8,    TENSOR_INT8,    TENSOR_INT16,  TENSOR_INT32,  TENSOR_INT64,
    TENSOR_FLOAT16,  TENSOR_FLOAT32, TENSOR_FLOAT64, TENSOR_COMPLEX64, TENSOR_COMPLEX128,
    TENSOR_BOOL,     TENSOR_BFLOAT16, TENSOR_UINT16, TENSOR_UINT32, TENSOR_UINT64};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

static tensor_t *sample(tensor_dtype_t d) {
  tensor_t *a = NULL, *b = NULL, *c = NULL;
  int64_t sz[] = {3, 4};
  CHECK_OK(tensor_arange(12, TENSOR_INT64, &a));
  CHECK_OK(tensor_view(a, sz, 2, &b));
  CHECK_OK(tensor_to_dtype(b, d, &c));
  tensor_release(a);
  tensor_release(b);
  return c;
}

static void test_npy_round_trip(void) {
  char path[128];
  size_t i;
  path_of(path, sizeof path, "x.npy");
  for (i = 0; i < N_DTYPES; i++) {
    tensor_t *t = sample(all_dtypes[i]), *tt = NULL, *back = NULL;
    bool eq = false;
    if (all_dtypes[i] == TENSOR_BFLOAT16) {
      CHECK_STATUS(tensor_save_npy(path, t), TENSOR_ERR_DTYPE);
      tensor_release(t);
      continue;
    }
    /* A transposed (non-contiguous) tensor is written in C order. */
    CHECK_OK(tensor_transpose(t, 0, 1, &tt));
    CHECK_OK(tensor_save_npy(path, tt));
    CHECK_OK(tensor_load_npy(path, TENSOR_MAP_READ_ONLY, &back));
    CHECK(tensor_dtype(back) == all_dtypes[i]);
    CHECK_OK(tensor_equal(back, tt, &eq));
    CHECK(eq);
    CHECK(storage_is_mapped(tensor_storage(back)));
    /* As NumPy writes it, the data starts on a 64-byte boundary: the view is there. */
    {
      ptrdiff_t off = (const char *)tensor_data_ptr(back) - (const char *)storage_data_ptr(tensor_storage(back));
      CHECK(off > 0 && off % 64 == 0);
    }
    tensor_release(back);
    tensor_release(tt);
    tensor_release(t);
  }
  remove(path);
}

static void test_npy_modes_and_orders(void) {
  char path[128];
  /* 2x3 uint8 in Fortran order: column-major bytes 0..5. */
  const char dict[] = "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 3), }   \n";
  unsigned char file[256], back[256];
  size_t hl = sizeof dict - 1, n;
  tensor_t *t = NULL;
  int64_t ix[] = {1, 2};
  double v = 0;
  memcpy(file, "\x93NUMPY\x01\x00", 8);
  file[8] = (unsigned char)hl;
  file[9] = 0;
  memcpy(file + 10, dict, hl);
  for (n = 0; n < 6; n++) file[10 + hl + n] = (unsigned char)n;
  n = 10 + hl + 6;
  path_of(path, sizeof path, "f.npy");
  write_file(path, file, n);
  CHECK_OK(tensor_load_npy(path, TENSOR_MAP_SHARED, &t));
  CHECK_OK(tensor_get_f64(t, ix, 2, &v));
  CHECK(v == 5.0);
  CHECK_OK(tensor_set_f64(t, ix, 2, 42.0)); /* shared: reaches the file */
  tensor_release(t);
  CHECK(read_file(path, back, sizeof back) == n && back[n - 1] == 42);
  CHECK_OK(tensor_load_npy(path, TENSOR_MAP_PRIVATE, &t));
  CHECK_OK(tensor_set_f64(t, ix, 2, 1.0));
  tensor_release(t);
  CHECK(read_file(path, back, sizeof back) == n && back[n - 1] == 42);
  CHECK_STATUS(tensor_load_npy(path, (tensor_map_mode_t)3, &t), TENSOR_ERR_INVALID_ARGUMENT);
  remove(path);
}

static void test_safetensors_round_trip(void) {
  char path[128];
  const char *names[N_DTYPES];
  char name_buf[N_DTYPES][16];
  const tensor_t *ts[N_DTYPES];
  tensor_t *owned[N_DTYPES];
  tensor_safetensors_t *f = NULL;
  size_t i, n = 0;
  path_of(path, sizeof path, "x.safetensors");
  for (i = 0; i < N_DTYPES; i++) {
    owned[i] = sample(all_dtypes[i]);
    if (all_dtypes[i] == TENSOR_COMPLEX128) continue;
    snprintf(name_buf[n], sizeof name_buf[n], "t_%s", tensor_dtype_name(all_dtypes[i]));
    names[n] = name_buf[n];
    ts[n] = owned[i];
    n++;
  }
  CHECK_OK(tensor_save_safetensors(path, names, ts, n));
  CHECK_OK(tensor_safetensors_load(path, &f));
  CHECK(tensor_safetensors_count(f) == n);
  for (i = 0; i < n; i++) {
    tensor_t *back = NULL;
    bool eq = false;
    CHECK_OK(tensor_safetensors_get(f, names[i], &back));
    CHECK_OK(tensor_equal(back, ts[i], &eq));
    CHECK(eq && tensor_dtype(back) == tensor_dtype(ts[i]));
    CHECK(storage_is_mapped(tensor_storage(back)) && storage_is_read_only(tensor_storage(back)));
    tensor_release(back);
  }
  {
    tensor_t *a = NULL, *b = NULL;
    const char *first = tensor_safetensors_name(f, 0);
    CHECK(first != NULL && tensor_safetensors_name(f, n) == NULL);
    CHECK_OK(tensor_safetensors_at(f, 0, &a));
    CHECK_OK(tensor_safetensors_get(f, first, &b));
    CHECK(tensor_shares_storage(a, b) && tensor_data_ptr(a) == tensor_data_ptr(b));
    /* Every tensor of the file shares the one mapping. */
    tensor_release(b);
    b = NULL;
    CHECK_OK(tensor_safetensors_at(f, n - 1, &b));
    CHECK(tensor_shares_storage(a, b));
    tensor_release(a);
    tensor_release(b);
  }
  {
    tensor_t *x = NULL;
    CHECK_STATUS(tensor_safetensors_get(f, "nope", &x), TENSOR_ERR_INDEX);
    CHECK_ERROR_HAS("'nope'");
    CHECK_STATUS(tensor_safetensors_at(f, n, &x), TENSOR_ERR_INDEX);
    CHECK_STATUS(tensor_safetensors_get(NULL, "a", &x), TENSOR_ERR_NULL_POINTER);
  }
  tensor_safetensors_release(f);
  /* Refusals: complex128, duplicate names, reserved name. */
  {
    const char *nm[2] = {"a", "a"};
    const tensor_t *two[2];
    two[0] = owned[0];
    two[1] = owned[1];
    for (i = 0; i < N_DTYPES; i++)
      if (all_dtypes[i] == TENSOR_COMPLEX128) two[1] = owned[i];
    nm[1] = "b";
    CHECK_STATUS(tensor_save_safetensors(path, nm, two, 2), TENSOR_ERR_DTYPE);
    CHECK_ERROR_HAS("complex128");
    two[1] = owned[1];
    nm[1] = "a";
    CHECK_STATUS(tensor_save_safetensors(path, nm, two, 2), TENSOR_ERR_INVALID_ARGUMENT);
    nm[0] = "__metadata__";
    nm[1] = "b";
    CHECK_STATUS(tensor_save_safetensors(path, nm, two, 2), TENSOR_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(tensor_save_safetensors(path, NULL, two, 2), TENSOR_ERR_NULL_POINTER);
  }
  for (i = 0; i < N_DTYPES; i++) tensor_release(owned[i]);
  remove(path);
}

/* ---- 4. hostile files through the C API --------------------------------------------- */

static void test_hostile_files(void) {
  char path[128];
  tensor_safetensors_t *f = NULL;
  tensor_t *t = NULL;
  /* F4 counts single 4-bit values; libtensor's float4_e2m1fn_x2 counts pairs */
  const char *f8 = "{\"w\":{\"dtype\":\"F4\",\"shape\":[2,4],\"data_offsets\":[0,4]}}";
  const char *odd = "{\"w\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[0,3]}}";
  uint64_t ol = strlen(odd);
  uint64_t hl = strlen(f8);
  unsigned char buf[128];
  path_of(path, sizeof path, "hostile.bin");

  write_file(path, "", 0);
  CHECK_STATUS(tensor_safetensors_load(path, &f), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("empty");
  CHECK_STATUS(tensor_load_npy(path, TENSOR_MAP_READ_ONLY, &t), TENSOR_ERR_IO);

  write_file(path, "garbage garbage garbage", 23);
  CHECK_STATUS(tensor_safetensors_load(path, &f), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("hostile.bin");
  CHECK_STATUS(tensor_load_npy(path, TENSOR_MAP_READ_ONLY, &t), TENSOR_ERR_IO);
  CHECK_ERROR_HAS("not a .npy file");

  /* F4 [2, 3]: an odd last dim has no whole float4_e2m1fn_x2 pairs, refused by name. */
  memcpy(buf, &ol, 8); /* little-endian host */
  memcpy(buf + 8, odd, ol);
  memset(buf + 8 + ol, 0, 3);
  write_file(path, buf, 8 + ol + 3);
  CHECK_STATUS(tensor_safetensors_load(path, &f), TENSOR_ERR_DTYPE);
  CHECK_ERROR_HAS("safetensors dtype F4 with shape [2, 3]");
  CHECK_ERROR_HAS("even last dim");
  /* F4 [2, 4]: float4_e2m1fn_x2 [2, 2] over the same bytes (PyTorch's mapping). */
  memcpy(buf, &hl, 8);
  memcpy(buf + 8, f8, hl);
  buf[8 + hl] = 0x12;
  buf[8 + hl + 1] = 0x34;
  buf[8 + hl + 2] = 0x56;
  buf[8 + hl + 3] = 0x78;
  write_file(path, buf, 8 + hl + 4);
  CHECK_OK(tensor_safetensors_load(path, &f));
  CHECK_OK(tensor_safetensors_at(f, 0, &t));
  CHECK(tensor_dtype(t) == TENSOR_FLOAT4_E2M1FN_X2 && tensor_ndim(t) == 2);
  CHECK(tensor_sizes(t)[0] == 2 && tensor_sizes(t)[1] == 2);
  CHECK(memcmp(tensor_data_ptr(t), buf + 8 + hl, 4) == 0);
  {
    /* ...and saves back as F4 [2, 4] with the same bytes; a 0-dim one has no last dim. */
    const char *name = "w";
    const tensor_t *one[1];
    tensor_t *scalar = NULL;
    unsigned char back[128];
    size_t n;
    one[0] = t;
    CHECK_OK(tensor_save_safetensors(path, &name, one, 1));
    n = read_file(path, back, sizeof back);
    CHECK(n > 12 && memcmp(back + n - 4, buf + 8 + hl, 4) == 0);
    back[n - 4] = 0;
    CHECK(strstr((const char *)back + 8, "\"dtype\":\"F4\",\"shape\":[2,4]") != NULL);
    CHECK_OK(tensor_empty(NULL, 0, TENSOR_FLOAT4_E2M1FN_X2, &scalar));
    one[0] = scalar;
    CHECK_STATUS(tensor_save_safetensors(path, &name, one, 1), TENSOR_ERR_DTYPE);
    CHECK_ERROR_HAS("0-dim float4_e2m1fn_x2");
    tensor_release(scalar);
  }
  tensor_release(t);
  t = NULL;
  tensor_safetensors_release(f);
  f = NULL;
  /* Truncated: the data is one byte short. */
  write_file(path, buf, 8 + hl + 3);
  CHECK_STATUS(tensor_safetensors_load(path, &f), TENSOR_ERR_IO);
  CHECK(f == NULL && t == NULL);
  remove(path);
}

/* ---- 5. shared memory between two processes ----------------------------------------- */

static int send_fd(int sock, int fd) {
  char byte = 'F';
  struct iovec iov;
  struct msghdr msg;
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct cmsghdr *c;
  memset(&msg, 0, sizeof msg);
  memset(&u, 0, sizeof u);
  iov.iov_base = &byte;
  iov.iov_len = 1;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof u.buf;
  c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock) {
  char byte;
  int fd = -1;
  struct iovec iov;
  struct msghdr msg;
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct cmsghdr *c;
  memset(&msg, 0, sizeof msg);
  iov.iov_base = &byte;
  iov.iov_len = 1;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof u.buf;
  if (recvmsg(sock, &msg, 0) != 1) return -1;
  c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
  memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

/* The child: receives the segment, maps it (read-only or read-write), checks the frame's
 * values, optionally writes a marker, and exits with its failure count via _exit. */
static void child(int sock, int writable) {
  int fd = recv_fd(sock), failed = 0;
  char go;
  storage_t *s = NULL;
  tensor_t *t = NULL;
  int64_t sz[] = {480, 640, 3}, ix[] = {479, 639, 2};
  double v = -1;
  failed += fd < 0;
  failed += read(sock, &go, 1) != 1; /* wait until the parent says so */
  if (storage_from_fd(fd, 0, TENSOR_MAP_TO_END, writable ? TENSOR_MAP_SHARED : TENSOR_MAP_READ_ONLY, &s) !=
      TENSOR_OK)
    failed++;
  close(fd);
  failed += tensor_from_storage(s, 0, sz, NULL, 3, TENSOR_UINT8, &t) != TENSOR_OK;
  failed += tensor_get_f64(t, ix, 3, &v) != TENSOR_OK || v != (double)((479 + 639 + 2) % 256);
  failed += !storage_is_mapped(s);
  if (writable) {
    ix[0] = 0;
    ix[1] = 0;
    ix[2] = 0;
    failed += tensor_set_f64(t, ix, 3, 200.0) != TENSOR_OK;
  } else {
    failed += tensor_set_f64(t, ix, 3, 1.0) != TENSOR_ERR_READ_ONLY;
  }
  tensor_release(t);
  storage_release(s);
  close(sock);
  _exit(failed);
}

static void test_shared_memory(int parent_exits_first) {
  int sv[2], fd = -1, status = 0;
  pid_t pid;
  storage_t *s = NULL, *other = NULL;
  tensor_t *frame = NULL;
  int64_t sz[] = {480, 640, 3};
  size_t nbytes = 480 * 640 * 3, i, j, k;
  unsigned char *p;
  CHECK_OK(storage_new_shared(nbytes, &s));
  CHECK(storage_is_mapped(s) && !storage_is_read_only(s) && storage_nbytes(s) == nbytes);
  CHECK_OK(tensor_from_storage(s, 0, sz, NULL, 3, TENSOR_UINT8, &frame));
  p = storage_data_ptr(s);
  for (i = 0; i < 480; i++)
    for (j = 0; j < 640; j++)
      for (k = 0; k < 3; k++) p[(i * 640 + j) * 3 + k] = (unsigned char)((i + j + k) % 256);
  CHECK_OK(storage_fd(s, &fd));
  CHECK(fd >= 0);
  CHECK(tensor_storage(frame) == s);
  CHECK_STATUS(storage_fd(NULL, &fd), TENSOR_ERR_NULL_POINTER);
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    close(sv[0]);
    tensor_release(frame);
    storage_release(s);
    child(sv[1], !parent_exits_first);
  }
  close(sv[1]);
  CHECK(send_fd(sv[0], fd) == 0);
  if (parent_exits_first) {
    /* The parent's side goes away entirely before the child maps the segment. */
    tensor_release(frame);
    storage_release(s);
    frame = NULL;
    s = NULL;
  }
  CHECK(write(sv[0], "g", 1) == 1);
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!parent_exits_first) {
    /* The child exited first: the segment is still ours, with the child's write in it. */
    CHECK(p[0] == 200 && p[1] == 1);
    CHECK_OK(storage_from_fd(fd, 0, TENSOR_MAP_TO_END, TENSOR_MAP_READ_ONLY, &other));
    CHECK(((unsigned char *)storage_data_ptr(other))[0] == 200);
    CHECK(storage_data_ptr(other) != storage_data_ptr(s)); /* another mapping, same pages */
    storage_release(other);
  }
  close(sv[0]);
  tensor_release(frame);
  storage_release(s);
  {
    storage_t *a = NULL, *none = NULL;
    CHECK_STATUS(storage_new_shared(0, &none), TENSOR_ERR_INVALID_ARGUMENT);
    CHECK_OK(storage_new(16, NULL, &a));
    CHECK_STATUS(storage_fd(a, &fd), TENSOR_ERR_INVALID_ARGUMENT);
    CHECK(!storage_is_mapped(a));
    storage_release(a);
  }
}

/* ---- two mappings of the same pages: the copy overlap rule compares file offsets ---- */

#define ALIAS_N 1024

/* Over storages `sa` (whose element k is file element k) and `sb` (file element k + skip),
 * fills the file with 0, 1, 2, ... through `sa`, then copies, through the two mappings,
 * a[skip + 1:] = b[:N - skip - 1] (with copy_ or copy_affine_ with scale 1, shift 0): the
 * same as a[skip + 1:] = a[skip:N - 1], which must give a[i] = i - 1 for i > skip (a
 * snapshot of src), not values already overwritten. Returns the number of wrong elements. */
static int shifted_copy_errors(storage_t *sa, storage_t *sb, int skip, int affine) {
  int64_t n[1] = {ALIAS_N}, nb[1] = {ALIAS_N - skip};
  tensor_t *a = NULL, *b = NULL, *dst = NULL, *src = NULL;
  double one = 1.0, zero = 0.0;
  float *p;
  int i, wrong = 0;
  CHECK_OK(tensor_from_storage(sa, 0, n, NULL, 1, TENSOR_FLOAT32, &a));
  CHECK_OK(tensor_from_storage(sb, 0, nb, NULL, 1, TENSOR_FLOAT32, &b));
  if (!a || !b) return ALIAS_N;
  p = (float *)tensor_data_ptr(a);
  for (i = 0; i < ALIAS_N; i++) p[i] = (float)i;
  CHECK_OK(tensor_slice(a, 0, skip + 1, ALIAS_N, 1, &dst));
  CHECK_OK(tensor_slice(b, 0, 0, ALIAS_N - skip - 1, 1, &src));
  /* really two addresses for one set of pages */
  CHECK(tensor_data_ptr(a) != tensor_data_ptr(b));
  CHECK(((float *)tensor_data_ptr(b))[0] == (float)skip);
  if (affine)
    CHECK_OK(tensor_copy_affine_(dst, src, 0, &one, &zero, 1));
  else
    CHECK_OK(tensor_copy_(dst, src));
  for (i = 0; i < ALIAS_N; i++)
    if (p[i] != (float)(i <= skip ? i : i - 1)) wrong++;
  tensor_release(dst);
  tensor_release(src);
  tensor_release(a);
  tensor_release(b);
  return wrong;
}

static void test_two_mappings_alias(void) {
  char path[128];
  static float zeros[ALIAS_N];
  storage_t *sa = NULL, *sb = NULL;
  int fd = -1, affine, wrong;
  path_of(path, sizeof path, "alias.bin");
  write_file(path, zeros, sizeof zeros);
  for (affine = 0; affine < 2; affine++) {
    /* a shared-memory segment and its descriptor mapped again in the same process */
    CHECK_OK(storage_new_shared(sizeof zeros, &sa));
    CHECK_OK(storage_fd(sa, &fd));
    CHECK_OK(storage_from_fd(fd, 0, TENSOR_MAP_TO_END, TENSOR_MAP_SHARED, &sb));
    wrong = shifted_copy_errors(sa, sb, 0, affine);
    if (wrong) fprintf(stderr, "memfd twice (affine %d): %d elements wrong\n", affine, wrong);
    CHECK(wrong == 0);
    storage_release(sb);
    storage_release(sa);
    /* two shared maps of one file */
    CHECK_OK(storage_from_file(path, 0, TENSOR_MAP_TO_END, TENSOR_MAP_SHARED, &sa));
    CHECK_OK(storage_from_file(path, 0, TENSOR_MAP_TO_END, TENSOR_MAP_SHARED, &sb));
    wrong = shifted_copy_errors(sa, sb, 0, affine);
    if (wrong) fprintf(stderr, "file twice (affine %d): %d elements wrong\n", affine, wrong);
    CHECK(wrong == 0);
    storage_release(sb);
    /* the second map at another file offset (one float in, not page-aligned): the file
     * ranges, not the storage offsets, are compared */
    CHECK_OK(storage_from_file(path, 4, TENSOR_MAP_TO_END, TENSOR_MAP_SHARED, &sb));
    wrong = shifted_copy_errors(sa, sb, 1, affine);
    if (wrong) fprintf(stderr, "file at offset 4 (affine %d): %d elements wrong\n", affine, wrong);
    CHECK(wrong == 0);
    storage_release(sb);
    /* src a private map: its pages not yet written here are the file's, which dst's
     * writes change */
    CHECK_OK(storage_from_file(path, 0, TENSOR_MAP_TO_END, TENSOR_MAP_PRIVATE, &sb));
    wrong = shifted_copy_errors(sa, sb, 0, affine);
    if (wrong) fprintf(stderr, "private src (affine %d): %d elements wrong\n", affine, wrong);
    CHECK(wrong == 0);
    storage_release(sb);
    storage_release(sa);
  }
  unlink(path);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/libtensor-files-%ld", (long)getpid());
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return 1;
  test_map_modes();
  test_map_errors();
  test_safetensors_zero_copy_big();
  test_npy_round_trip();
  test_npy_modes_and_orders();
  test_safetensors_round_trip();
  test_hostile_files();
  test_shared_memory(1);
  test_shared_memory(0);
  test_two_mappings_alias();
  rmdir(dir);
  return harness_finish("test_files");
}
