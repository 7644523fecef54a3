/* libtensor example: two processes share camera frames without copying.
 *
 * The "decoder" (parent) makes a shared-memory storage (memfd), wraps a 480x640x3 uint8
 * frame over it, fills it, and sends the segment's descriptor to the "inference" process
 * (child) over a UNIX socket (SCM_RIGHTS). The child maps the same pages read-only and
 * reads the frame in place: no byte is copied between the processes.
 *
 * Build and run (after `make release`):
 *   cc -std=c99 -Iinclude examples_c/shared_frames.c -o build/shared_frames \
 *      -Ltarget/release -Wl,-rpath,$PWD/target/release -ltensor && build/shared_frames */
#define _DEFAULT_SOURCE /* CMSG_SPACE / CMSG_LEN */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tensor.h"

#define TRY(call)                                                                       \
  do {                                                                                  \
    tensor_status_t st_ = (call);                                                       \
    if (st_ != TENSOR_OK) {                                                             \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, tensor_status_string(st_),        \
              tensor_last_error());                                                     \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

enum { H = 480, W = 640, C = 3 };

/* Sends one descriptor (plus one byte of payload) over a UNIX socket. */
static void send_fd(int sock, int fd) {
  char byte = 'F';
  struct iovec iov = {&byte, 1};
  struct msghdr msg;
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct cmsghdr *c;
  memset(&msg, 0, sizeof msg);
  memset(&u, 0, sizeof u);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof u.buf;
  c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  if (sendmsg(sock, &msg, 0) != 1) {
    perror("sendmsg");
    exit(1);
  }
}

/* Receives one descriptor; the caller owns (and closes) it. */
static int recv_fd(int sock) {
  char byte;
  int fd = -1;
  struct iovec iov = {&byte, 1};
  struct msghdr msg;
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct cmsghdr *c;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof u.buf;
  if (recvmsg(sock, &msg, 0) != 1 || !(c = CMSG_FIRSTHDR(&msg)) || c->cmsg_type != SCM_RIGHTS) return -1;
  memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

/* The inference process: maps the received segment read-only and reads the frame. */
static int inference(int sock) {
  int fd = recv_fd(sock);
  storage_t *s = NULL;
  tensor_t *frame = NULL, *green = NULL;
  int64_t sizes[] = {H, W, C}, ix[] = {100, 200};
  double v = 0;
  if (fd < 0) return 1;
  TRY(storage_from_fd(fd, 0, TENSOR_MAP_TO_END, TENSOR_MAP_READ_ONLY, &s));
  close(fd); /* the storage keeps its own duplicate */
  TRY(tensor_from_storage(s, 0, sizes, NULL, 3, TENSOR_UINT8, &frame));
  TRY(tensor_select(frame, 2, 1, &green)); /* a view of the green channel: no copy */
  TRY(tensor_get_f64(green, ix, 2, &v));
  printf("inference: frame %dx%dx%d mapped at %p (read-only: %s), green[100][200] = %g\n", H, W, C,
         storage_data_ptr(s), storage_is_read_only(s) ? "yes" : "no", v);
  if (tensor_fill_f64_(frame, 0.0) == TENSOR_ERR_READ_ONLY) printf("inference: writes are refused\n");
  tensor_release(green);
  tensor_release(frame);
  storage_release(s);
  return v == (double)((100 + 200 + 1) % 256) ? 0 : 1;
}

int main(void) {
  int sv[2], fd, status = 0;
  pid_t pid;
  storage_t *shm = NULL;
  tensor_t *frame = NULL;
  int64_t sizes[] = {H, W, C};
  unsigned char *px;
  size_t y, x, c;

  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
  fflush(stdout);
  pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) { /* inference process */
    int rc;
    close(sv[0]);
    rc = inference(sv[1]);
    close(sv[1]);
    fflush(stdout); /* _exit does not flush stdio */
    _exit(rc);
  }
  close(sv[1]);

  /* The decoder: one frame in shared memory, filled in place. */
  TRY(storage_new_shared((size_t)H * W * C, &shm));
  TRY(tensor_from_storage(shm, 0, sizes, NULL, 3, TENSOR_UINT8, &frame));
  px = tensor_data_ptr(frame);
  for (y = 0; y < H; y++)
    for (x = 0; x < W; x++)
      for (c = 0; c < C; c++) px[(y * W + x) * C + c] = (unsigned char)((y + x + c) % 256);
  TRY(storage_fd(shm, &fd));
  printf("decoder: frame filled at %p, sending descriptor %d\n", (void *)px, fd);
  send_fd(sv[0], fd);
  /* The decoder may let go right away: the segment lives while the receiver holds it. */
  tensor_release(frame);
  storage_release(shm);
  close(sv[0]);

  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "inference process failed\n");
    return 1;
  }
  printf("done: the inference process read the decoder's frame without a copy\n");
  return 0;
}
