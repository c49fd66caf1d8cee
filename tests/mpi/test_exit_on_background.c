/* exit() called on libhvd's background thread (a fatal-signal handler's exit, as a
 * test harness's SIGFPE or SIGSEGV handler does, or an MPI error handler that ends in
 * exit) while the main thread waits on a handle: the process must end with that
 * exit's status. The runtime's teardown once joined the background thread from the
 * background thread itself (std::system_error, an abort instead of the status), and
 * the handle table was destroyed under the main thread's wait.
 *
 * A forked child does it (a singleton, no launcher); the parent checks how it ended. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

enum { kExitStatus = 7 };

static void exit_from_handler(int sig) {
  (void)sig;
  exit(kExitStatus);
}

/* The child: init, a handle waited on while the background thread runs exit(). */
static int child(void) {
  if (hvd_init() != HVD_SUCCESS) return 2;
  signal(SIGUSR1, exit_from_handler);
  pid_t background = 0;
  if (tu_threads_named("hvd-background", &background) != 1) return 3;
  float x = 1.0f;
  hvd_handle_t h;
  if (hvd_allreduce_async(&x, &x, 1, HVD_FLOAT32, HVD_OP_SUM, "before.exit", NULL, &h) !=
      HVD_SUCCESS)
    return 4;
  if (syscall(SYS_tgkill, getpid(), background, SIGUSR1) != 0) return 5;
  hvd_wait(h);
  /* The handler's exit() ends the process; give it the time to. */
  for (int i = 0; i < 1000; ++i) usleep(10000);
  return 6;
}

static void exit_on_the_background_thread_keeps_its_status(void** state) {
  (void)state;
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(child());
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFSIGNALED(status))
    fail_msg("the child died of signal %d instead of exiting with %d", WTERMSIG(status),
             kExitStatus);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), kExitStatus);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exit_on_the_background_thread_keeps_its_status),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
