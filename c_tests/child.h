/* Runs a piece of a C test in a forked child, for what must end the process (an abort) or
 * must see the environment before the library first reads it: the child's wait status and
 * what it wrote to stderr. POSIX only; include after harness.h. */
#ifndef LIBTENSOR_TEST_CHILD_H
#define LIBTENSOR_TEST_CHILD_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* A memory checker watches this program: AddressSanitizer (compiled in) or valgrind. */
#if defined(__SANITIZE_ADDRESS__)
#define CHILD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHILD_ASAN 1
#endif
#endif
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CHILD_HAVE_VALGRIND_H 1
#endif
#endif

static inline int child_under_valgrind(void) {
#ifdef CHILD_HAVE_VALGRIND_H
  return RUNNING_ON_VALGRIND ? 1 : 0;
#else
  const char *p = getenv("LD_PRELOAD");
  return p != NULL && strstr(p, "vgpreload_memcheck") != NULL;
#endif
}

static inline int child_under_checker(void) {
#ifdef CHILD_ASAN
  return 1;
#else
  return child_under_valgrind();
#endif
}

/* In a child that is about to misuse memory on purpose: valgrind's report of it is
 * expected, not a failure of the test (the parent checks the child's own report). */
static inline void child_expect_memory_errors(void) {
#ifdef CHILD_HAVE_VALGRIND_H
  VALGRIND_DISABLE_ERROR_REPORTING;
#endif
}

/* Runs body(arg) in a child whose stderr goes to `err` (NUL-terminated, at most cap - 1
 * bytes kept); the child exits 0 when body returns. Returns the wait status, -1 when the
 * child could not be started. */
static inline int child_run(void (*body)(void *), void *arg, char *err, size_t cap) {
  int fds[2];
  int status = -1;
  size_t used = 0;
  pid_t pid;
  err[0] = '\0';
  if (pipe(fds) != 0) {
    return -1;
  }
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    close(fds[1]);
    body(arg);
    fflush(stderr);
    _exit(0);
  }
  close(fds[1]);
  for (;;) {
    char chunk[512];
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    size_t keep;
    if (n <= 0) {
      break;
    }
    keep = (size_t)n < cap - 1 - used ? (size_t)n : cap - 1 - used;
    memcpy(err + used, chunk, keep);
    used += keep;
  }
  err[used] = '\0';
  close(fds[0]);
  if (waitpid(pid, &status, 0) != pid) {
    return -1;
  }
  return status;
}

/* The child was ended by SIGABRT. */
static inline int child_aborted(int status) {
  return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

/* The child returned from its body normally (exit status 0). */
static inline int child_exited_ok(int status) {
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* How many times `needle` occurs in `hay`. */
static inline int child_count(const char *hay, const char *needle) {
  int n = 0;
  const char *p = hay;
  while ((p = strstr(p, needle)) != NULL) {
    n++;
    p += strlen(needle);
  }
  return n;
}

#endif
