/*
 * fork() after hvd_init: the child must not touch the parent's runtime. In the
 * child, libhvd reads as not initialized, every call fails at once with a status and
 * a message that says why (fork after init) and what to do, and a normal exit (which
 * runs atexit handlers) does not shut the parent's runtime down. The parent goes on
 * with its collectives afterwards. The child is forked twice: while the background
 * thread is idle, and while operations are in flight. Under mpiexec -n 2 (or more).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hvd/hvd.h>

enum { kChildSeconds = 30, kInFlight = 8, kCount = 1 << 16 };

static int g_rank = -1, g_size = -1;
static pid_t g_parent_pid;

#ifdef __SANITIZE_ADDRESS__
/* LeakSanitizer asks this before its check at exit. A forked child holds a copy of
 * the parent's memory without the threads that refer to much of it (libhvd's
 * background thread, MPI's), so all of that reads as leaked there: only the parent is
 * checked. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return getpid() != g_parent_pid; }
#endif

#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "fork_child rank %d: %s:%d: ", g_rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                               \
      fprintf(stderr, "\n");                                                      \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

/* The child's checks; it then exits normally, through exit() and the atexit handlers. */
static void child(void) {
  CHECK(!hvd_is_initialized(), "hvd_is_initialized() is true in the forked child");
  /* The parent's topology, as Horovod's copied state gives it (a DataLoader worker
     seeds itself with its rank). */
  CHECK(hvd_rank() == g_rank && hvd_size() == g_size && hvd_local_rank() >= 0 &&
            hvd_cross_size() >= 1 && hvd_is_homogeneous() >= 0,
        "rank/size are %d/%d in the child of rank %d of %d", hvd_rank(), hvd_size(), g_rank,
        g_size);
  float x = 1;
  hvd_status_t st = hvd_allreduce(&x, &x, 1, HVD_FLOAT32, HVD_OP_SUM, "in.child");
  CHECK(st == HVD_ERR_NOT_INITIALIZED, "allreduce in the child returned %d", st);
  CHECK(strstr(hvd_last_error(), "fork()") && strstr(hvd_last_error(), "before hvd_init"),
        "the message does not say why: %s", hvd_last_error());
  hvd_handle_t h;
  st = hvd_broadcast_async(&x, 1, HVD_FLOAT32, 0, "in.child.async", NULL, &h);
  CHECK(st == HVD_ERR_NOT_INITIALIZED, "broadcast_async in the child returned %d", st);
  st = hvd_init();
  CHECK(st == HVD_ERR_UNSUPPORTED, "hvd_init in the child returned %d", st);
  CHECK(strstr(hvd_last_error(), "fork()"), "hvd_init's message: %s", hvd_last_error());
  st = hvd_shutdown();
  CHECK(st != HVD_SUCCESS && strstr(hvd_last_error(), "fork()"),
        "hvd_shutdown in the child returned %d: %s", st, hvd_last_error());
  exit(0);
}

/* Waits for the child with a bound: a child blocked in the parent's runtime fails. */
static void wait_child(pid_t pid) {
  const time_t start = time(NULL);
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    CHECK(r == 0 || errno == EINTR, "waitpid: %s", strerror(errno));
    if (time(NULL) - start > kChildSeconds) {
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
      CHECK(0, "the forked child did not exit within %d s (blocked in libhvd?)", kChildSeconds);
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status 0x%x", status);
}

static void allreduce_checked(const char* name) {
  const int size = hvd_size();
  float v[4] = {1, 2, 3, (float)g_rank};
  CHECK(hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, name) == HVD_SUCCESS, "%s: %s", name,
        hvd_last_error());
  CHECK(v[0] == size && v[1] == 2 * size && v[3] == size * (size - 1) / 2.0f, "%s: wrong sum", name);
}

int main(void) {
  g_parent_pid = getpid();
  CHECK(hvd_init() == HVD_SUCCESS, "hvd_init: %s", hvd_last_error());
  g_rank = hvd_rank();
  g_size = hvd_size();
  allreduce_checked("before.fork");

  /* 1: the background thread idle. */
  pid_t pid = fork();
  CHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) child();
  wait_child(pid);
  allreduce_checked("after.fork.idle");

  /* 2: operations in flight in the parent while it forks. */
  static float bufs[kInFlight][kCount];
  hvd_handle_t handles[kInFlight];
  for (int i = 0; i < kInFlight; ++i) {
    char name[32];
    snprintf(name, sizeof name, "inflight.%d", i);
    for (int k = 0; k < kCount; ++k) bufs[i][k] = 1;
    CHECK(hvd_allreduce_async(bufs[i], bufs[i], kCount, HVD_FLOAT32, HVD_OP_SUM, name, NULL,
                              &handles[i]) == HVD_SUCCESS,
          "async: %s", hvd_last_error());
  }
  pid = fork();
  CHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) child();
  for (int i = 0; i < kInFlight; ++i) {
    CHECK(hvd_wait(handles[i]) == HVD_SUCCESS, "wait: %s", hvd_last_error());
    CHECK(bufs[i][kCount - 1] == hvd_size(), "in-flight result wrong");
  }
  wait_child(pid);
  allreduce_checked("after.fork.busy");

  CHECK(hvd_shutdown() == HVD_SUCCESS, "hvd_shutdown: %s", hvd_last_error());
  printf("fork_child rank %d: PASS\n", g_rank);
  return 0;
}
