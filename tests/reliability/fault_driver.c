/*
 * Fault injection around a real hvdrun job of two fault_worker ranks.
 *
 *   fault_driver kill-rank R HVDRUN WORKER   SIGKILL rank R in the middle of its
 *                                            allreduce loop
 *   fault_driver sigint HVDRUN WORKER        SIGINT to hvdrun
 *
 * Passes when hvdrun exits non-zero within 30 s and, shortly after, no process of
 * the job is left. Every process of the job carries the run's unique scratch
 * directory in its command line (hvdrun, mpiexec, the proxies, the ranks), so
 * `pgrep -f DIR` finds exactly this job. hvdrun is started with SIGINT at its
 * default disposition: a shell starts background jobs with SIGINT ignored, and
 * hvdrun rightly keeps an ignored signal ignored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kStartSeconds = 120, kExitSeconds = 30, kGraceSeconds = 10 };

static char g_dir[256];
static pid_t g_hvdrun = -1;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* pgrep's pattern for the scratch directory, with its first character in brackets:
   the same regular expression, but the shell running pgrep, whose command line
   holds the pattern, does not match it. */
static const char* pattern(void) {
  static char buf[300];
  snprintf(buf, sizeof buf, "[%c]%s", g_dir[0], g_dir + 1);
  return buf;
}

/* The pids of processes whose command line holds the scratch directory; 0 if none. */
static int job_pids(pid_t* pids, int cap) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "pgrep -f -- '%s'", pattern());
  FILE* p = popen(cmd, "r");
  if (!p) return 0;
  int n = 0;
  long pid;
  while (n < cap && fscanf(p, "%ld", &pid) == 1) pids[n++] = (pid_t)pid;
  pclose(p);
  return n;
}

static void print_job(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "pgrep -a -f -- '%s' >&2", pattern());
  if (system(cmd) < 0) perror("system");
}

/* On failure, leave nothing running: kill what is left of this job, by pid. */
static void fail(const char* fmt, const char* detail) {
  fprintf(stderr, "FAIL: ");
  fprintf(stderr, fmt, detail);
  fprintf(stderr, "\n");
  print_job();
  pid_t pids[64];
  int n = job_pids(pids, 64);
  for (int i = 0; i < n; ++i) kill(pids[i], SIGKILL);
  if (g_hvdrun > 0) {
    kill(g_hvdrun, SIGKILL);
    waitpid(g_hvdrun, NULL, 0);
  }
  exit(1);
}

static pid_t read_pid(int rank) {
  char path[512];
  snprintf(path, sizeof path, "%s/rank.%d", g_dir, rank);
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  long pid = -1;
  if (fscanf(f, "%ld", &pid) != 1) pid = -1;
  fclose(f);
  return (pid_t)pid;
}

static pid_t start_job(const char* hvdrun, const char* worker) {
  pid_t pid = fork();
  if (pid < 0) fail("fork: %s", strerror(errno));
  if (pid == 0) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char* argv[] = {(char*)hvdrun, "-np", "2", "-H", "localhost:2",
                    (char*)worker, g_dir, NULL};
    execv(hvdrun, argv);
    perror("execv hvdrun");
    _exit(127);
  }
  return pid;
}

static void wait_ranks_running(pid_t* rank_pids) {
  const double deadline = now() + kStartSeconds;
  for (;;) {
    rank_pids[0] = read_pid(0);
    rank_pids[1] = read_pid(1);
    if (rank_pids[0] > 0 && rank_pids[1] > 0) return;
    int status;
    if (waitpid(g_hvdrun, &status, WNOHANG) == g_hvdrun) {
      g_hvdrun = -1;
      fail("%s", "the job ended before both ranks were running");
    }
    if (now() > deadline) fail("%s", "the ranks did not start in time");
    usleep(20000);
  }
}

int main(int argc, char** argv) {
  int victim = -1;
  const char *hvdrun, *worker;
  if (argc == 5 && strcmp(argv[1], "kill-rank") == 0) {
    victim = atoi(argv[2]);
    hvdrun = argv[3];
    worker = argv[4];
  } else if (argc == 4 && strcmp(argv[1], "sigint") == 0) {
    hvdrun = argv[2];
    worker = argv[3];
  } else {
    fprintf(stderr, "usage: fault_driver kill-rank R HVDRUN WORKER | sigint HVDRUN WORKER\n");
    return 2;
  }
  const char* tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/hvd-fault-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) fail("mkdtemp: %s", strerror(errno));

  g_hvdrun = start_job(hvdrun, worker);
  pid_t ranks[2];
  wait_ranks_running(ranks);
  /* Let the loop run a little, so the fault lands in the middle of allreduces. */
  usleep(300000);

  const double t0 = now();
  if (victim >= 0) {
    printf("SIGKILL to rank %d (pid %ld)\n", victim, (long)ranks[victim]);
    if (kill(ranks[victim], SIGKILL) != 0) fail("kill rank: %s", strerror(errno));
  } else {
    printf("SIGINT to hvdrun (pid %ld)\n", (long)g_hvdrun);
    if (kill(g_hvdrun, SIGINT) != 0) fail("kill hvdrun: %s", strerror(errno));
  }

  int status = 0;
  for (;;) {
    pid_t r = waitpid(g_hvdrun, &status, WNOHANG);
    if (r == g_hvdrun) break;
    if (r < 0 && errno != EINTR) fail("waitpid: %s", strerror(errno));
    if (now() - t0 > kExitSeconds) fail("%s", "hvdrun still running 30 s after the fault");
    usleep(20000);
  }
  g_hvdrun = -1;
  const double exited = now() - t0;
  if (WIFEXITED(status)) {
    printf("hvdrun exited with status %d after %.2f s\n", WEXITSTATUS(status), exited);
    if (WEXITSTATUS(status) == 0) fail("%s", "hvdrun reported success after the fault");
  } else {
    printf("hvdrun died of signal %d after %.2f s\n", WTERMSIG(status), exited);
  }

  /* hvdrun has waited for mpiexec; anything of the job still alive is a leak. Allow
     a short grace for processes that are already exiting. */
  pid_t pids[64];
  const double deadline = now() + kGraceSeconds;
  int left;
  while ((left = job_pids(pids, 64)) > 0 && now() < deadline) usleep(50000);
  if (left > 0) fail("%s", "processes of the job are left after hvdrun exited");
  printf("no process of the job left (%.2f s after the fault)\n", now() - t0);

  char path[512];
  for (int r = 0; r < 2; ++r) {
    snprintf(path, sizeof path, "%s/rank.%d", g_dir, r);
    unlink(path);
  }
  rmdir(g_dir);
  printf("PASS\n");
  return 0;
}
