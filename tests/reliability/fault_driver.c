/*
 * Fault injection around a real hvdrun job of two fault_worker ranks.
 *
 *   fault_driver kill-rank R HVDRUN WORKER   SIGKILL rank R in the middle of its
 *                                            allreduce loop
 *   fault_driver sigint HVDRUN WORKER        SIGINT to hvdrun
 *   fault_driver watchdog stop|sleep HVDRUN WORKER
 *                                            3 ranks; rank 1 stops (SIGSTOP) or sleeps
 *                                            inside an allgather that its peers wait
 *                                            for inside MPI: the watchdog
 *                                            (HVD_OP_TIMEOUT_SECONDS=3) ends the job
 *                                            with its line and status 124
 *   fault_driver watchdog slow HVDRUN WORKER  3 ranks; ranks 0 and 1 allreduce 16 MiB
 *                                            on a set of their own, a chunk every 0.5 s
 *                                            (HVD_TEST_PROGRESS_DELAY_MS), for longer than
 *                                            HVD_OP_TIMEOUT_SECONDS=3; rank 2 waits for
 *                                            them. Passes when the job succeeds and
 *                                            the in-flight warning was printed
 *   fault_driver watchdog slow-gather HVDRUN WORKER
 *                                            the same with an allgather of 8 MiB from
 *                                            each of ranks 0 and 1, in rounds of 1 MiB
 *                                            chunks
 *   fault_driver finalize HVDRUN WORKER       3 ranks; after hvd_shutdown rank 1 stops
 *                                            (SIGSTOP) instead of exiting, and the
 *                                            others' MPI_Finalize waits for it: with
 *                                            HVD_FINALIZE_TIMEOUT_SECONDS=2 they exit
 *                                            with their own status 0, saying so (the
 *                                            job's status is the launcher's)
 *   fault_driver before-init HVDRUN WORKER   3 ranks; rank 1 exits with status 3
 *                                            before hvd_init, the others wait in it
 *   fault_driver after-init HVDRUN WORKER    3 ranks; rank 1 exits with status 3 in
 *                                            the middle of the allreduce loop
 *
 * Passes when hvdrun exits non-zero within 30 s (the last three: with the status
 * and the message expected) and, shortly after, no process of the job is left. Every process of the job carries the run's unique scratch
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

/* hvdrun's stderr, kept in the scratch directory so the message can be checked. */
static char g_stderr_path[300];
/* More -x NAME=VALUE arguments for hvdrun (NULL-terminated). */
static const char* g_env[8];

static pid_t start_job(const char* hvdrun, const char* worker, const char* np,
                       const char* const* extra) {
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
    char hosts[32];
    snprintf(hosts, sizeof hosts, "localhost:%s", np);
    const char* argv[32] = {hvdrun, "-np", np, "-H", hosts, "-x", "HVD_OP_TIMEOUT_SECONDS=3"};
    int n = 7;
    for (int i = 0; g_env[i] && n < 19; ++i) {
      argv[n++] = "-x";
      argv[n++] = g_env[i];
    }
    argv[n++] = worker;
    argv[n++] = g_dir;
    for (int i = 0; extra && extra[i] && n < 23; ++i) argv[n++] = extra[i];
    argv[n] = NULL;
    if (g_stderr_path[0]) {
      FILE* err = freopen(g_stderr_path, "w", stderr);
      if (!err) _exit(126);
    }
    execv(hvdrun, (char* const*)argv);
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

/* The whole of hvdrun's stderr, echoed into the test log. */
static char* read_stderr(void) {
  static char text[1 << 16];
  FILE* f = fopen(g_stderr_path, "r");
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  if (f) fclose(f);
  text[n] = '\0';
  fprintf(stderr, "--- hvdrun's stderr\n%s--- end\n", text);
  return text;
}

/* The length of the rank prefix hvdrun's launcher puts before a rank's lines (Hydra
 * "[3] ", Open MPI "[1,3]<stderr>:"), 0 if the line has none. */
static size_t rank_prefix(const char* line) {
  if (line[0] != '[') return 0;
  const char* close = strchr(line, ']');
  const char* end = strchr(line, '\n');
  if (!close || (end && close > end)) return 0;
  if (close[1] == ' ') return (size_t)(close + 2 - line);
  if (close[1] == '<') {
    const char* colon = strstr(close, ">:");
    if (colon && (!end || colon < end)) return (size_t)(colon + 2 - line);
  }
  return 0;
}

/* The line of text that starts with prefix, after a rank's prefix if it has one
 * (pointing past that), or NULL. */
static const char* line_starting(const char* text, const char* prefix) {
  for (const char* p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    const char* q = p + rank_prefix(p);
    if (strncmp(q, prefix, strlen(prefix)) == 0) return q;
  }
  return NULL;
}

static int line_has(const char* line, const char* what) {
  const char* end = strchr(line, '\n');
  size_t len = end ? (size_t)(end - line) : strlen(line);
  char buf[4096];
  if (len >= sizeof buf) len = sizeof buf - 1;
  memcpy(buf, line, len);
  buf[len] = '\0';
  return strstr(buf, what) != NULL;
}

/* Checks of the stderr text for the modes that expect a message. */
static void check_message(const char* mode, const char* text) {
  if (strcmp(mode, "watchdog-slow") == 0 || strcmp(mode, "watchdog-slow-gather") == 0) {
    const char* op = strcmp(mode, "watchdog-slow") == 0 ? "allreduce of tensor 'watchdog.slow'"
                                                        : "allgather of tensor 'watchdog.slow.gather'";
    char warning[256], waits[256];
    snprintf(warning, sizeof warning, "WARNING: %s", op);
    snprintf(waits, sizeof waits, "it waits for ranks busy in %s", op);
    if (line_starting(text, "libhvd: watchdog:")) fail("%s", "the watchdog ended a job that progressed");
    const char* needed[] = {op, "process set 1 (ranks 0, 1)", "has been in flight for",
                            "bytes done", "HVD_OP_TIMEOUT_SECONDS"};
    const char* line = strstr(text, warning);
    if (!line) fail("no in-flight warning for %s", op);
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; ++i)
      if (!line_has(line, needed[i])) fail("the in-flight warning lacks '%s'", needed[i]);
    /* Rank 2 waits in negotiation for the set's ranks, and says so. */
    if (!strstr(text, waits)) fail("%s", "rank 2 did not say it waits for the set's ranks");
  } else if (strcmp(mode, "finalize") == 0) {
    const char* line = line_starting(text, "libhvd: rank ");
    if (!line || !line_has(line, "gave up waiting for MPI_Finalize"))
      fail("%s", "no line saying libhvd gave up waiting for MPI_Finalize");
    const char* needed[] = {"HVD_FINALIZE_TIMEOUT_SECONDS", "3 ranks", "exiting with status 0"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; ++i)
      if (!line_has(line, needed[i])) fail("the finalize line lacks '%s'", needed[i]);
  } else if (strcmp(mode, "watchdog") == 0) {
    const char* line = line_starting(text, "libhvd: watchdog:");
    if (!line) fail("%s", "no line starting with 'libhvd: watchdog:'");
    const char* needed[] = {"HVD_OP_TIMEOUT_SECONDS", "allgather", "'watchdog.gather'",
                            "process set 0", "bytes"};
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; ++i)
      if (!line_has(line, needed[i])) fail("the watchdog line lacks '%s'", needed[i]);
  } else {
    const char* line = line_starting(text, "hvdrun: the job failed: rank 1 ");
    if (!line) fail("%s", "hvdrun did not name rank 1 as the rank that failed");
    if (!line_has(line, "exited with status 3")) fail("%s", "hvdrun did not give rank 1's status 3");
  }
}

int main(int argc, char** argv) {
  int victim = -1;
  const char *hvdrun, *worker, *mode = argv[1] ? argv[1] : "";
  const char* np = "2";
  const char* extra[4] = {NULL};
  int want_status = -1;  /* -1: any non-zero */
  int any_status = 0;     /* the job ends by itself, with whatever status */
  if (argc == 5 && strcmp(mode, "kill-rank") == 0) {
    victim = atoi(argv[2]);
    hvdrun = argv[3];
    worker = argv[4];
  } else if (argc == 4 && strcmp(mode, "sigint") == 0) {
    hvdrun = argv[2];
    worker = argv[3];
  } else if (argc == 5 && strcmp(mode, "watchdog") == 0 &&
             (strcmp(argv[2], "slow") == 0 || strcmp(argv[2], "slow-gather") == 0)) {
    const int gather = strcmp(argv[2], "slow-gather") == 0;
    hvdrun = argv[3];
    worker = argv[4];
    np = "3";
    mode = gather ? "watchdog-slow-gather" : "watchdog-slow";
    extra[0] = gather ? "slow-gather" : "slow-op";
    extra[1] = "0";
    extra[2] = gather ? "8" : "16";
    g_env[0] = "HVD_TEST_PROGRESS_DELAY_MS=500";
    g_env[1] = "HVD_ALLREDUCE_CHUNK_BYTES=1M";
    g_env[2] = "HVD_FAR_CORES=never";
    g_env[3] = "HOROVOD_STALL_CHECK_TIME_SECONDS=1";
    want_status = 0;
  } else if (argc == 5 && strcmp(mode, "watchdog") == 0) {
    hvdrun = argv[3];
    worker = argv[4];
    np = "3";
    extra[0] = "stuck-op";
    extra[1] = "1";
    extra[2] = argv[2];
    want_status = 124;
  } else if (argc == 4 && strcmp(mode, "finalize") == 0) {
    hvdrun = argv[2];
    worker = argv[3];
    np = "3";
    extra[0] = "stop-at-exit";
    extra[1] = "1";
    extra[2] = "0";
    g_env[0] = "HVD_FINALIZE_TIMEOUT_SECONDS=2";
    /* The job's status is the launcher's: Hydra kills the stopped rank (9) once the
       others have exited without finalizing; the line carries their own status. */
    want_status = 0;
    any_status = 1;
  } else if (argc == 4 && (strcmp(mode, "before-init") == 0 || strcmp(mode, "after-init") == 0)) {
    hvdrun = argv[2];
    worker = argv[3];
    np = "3";
    extra[0] = mode;
    extra[1] = "1";
    extra[2] = "3";
    want_status = 3;
  } else {
    fprintf(stderr, "usage: fault_driver kill-rank R HVDRUN WORKER | sigint HVDRUN WORKER |\n"
                    "       watchdog stop|sleep|slow|slow-gather HVDRUN WORKER | finalize HVDRUN WORKER |\n"
                    "       before-init|after-init HVDRUN WORKER\n");
    return 2;
  }
  const int self_ending = want_status >= 0;
  const char* tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/hvd-fault-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) fail("mkdtemp: %s", strerror(errno));
  if (self_ending) snprintf(g_stderr_path, sizeof g_stderr_path, "%s/stderr", g_dir);

  g_hvdrun = start_job(hvdrun, worker, np, extra);
  double t0 = now();
  if (!self_ending) {
    pid_t ranks[2];
    wait_ranks_running(ranks);
    /* Let the loop run a little, so the fault lands in the middle of allreduces. */
    usleep(300000);
    t0 = now();
    if (victim >= 0) {
      printf("SIGKILL to rank %d (pid %ld)\n", victim, (long)ranks[victim]);
      if (kill(ranks[victim], SIGKILL) != 0) fail("kill rank: %s", strerror(errno));
    } else {
      printf("SIGINT to hvdrun (pid %ld)\n", (long)g_hvdrun);
      if (kill(g_hvdrun, SIGINT) != 0) fail("kill hvdrun: %s", strerror(errno));
    }
  }

  /* The job ends by itself in the last modes: the bound covers start-up too. */
  const double limit = self_ending ? kStartSeconds : kExitSeconds;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(g_hvdrun, &status, WNOHANG);
    if (r == g_hvdrun) break;
    if (r < 0 && errno != EINTR) fail("waitpid: %s", strerror(errno));
    if (now() - t0 > limit) fail("%s", "hvdrun still running long after the fault");
    usleep(20000);
  }
  g_hvdrun = -1;
  const double exited = now() - t0;
  if (any_status) {
    printf("hvdrun ended (status %d) after %.2f s\n", status, exited);
  } else if (WIFEXITED(status)) {
    printf("hvdrun exited with status %d after %.2f s\n", WEXITSTATUS(status), exited);
    if (WEXITSTATUS(status) == 0 && want_status != 0)
      fail("%s", "hvdrun reported success after the fault");
    if (want_status >= 0 && WEXITSTATUS(status) != want_status) {
      read_stderr();
      fail("%s", "hvdrun's status is not the failing rank's");
    }
  } else {
    printf("hvdrun died of signal %d after %.2f s\n", WTERMSIG(status), exited);
    if (want_status >= 0) fail("%s", "hvdrun died of a signal");
  }
  if (self_ending) check_message(mode, read_stderr());

  /* hvdrun has waited for mpiexec; anything of the job still alive is a leak. Allow
     a short grace for processes that are already exiting. */
  pid_t pids[64];
  const double deadline = now() + kGraceSeconds;
  int left;
  while ((left = job_pids(pids, 64)) > 0 && now() < deadline) usleep(50000);
  if (left > 0) fail("%s", "processes of the job are left after hvdrun exited");
  printf("no process of the job left (%.2f s after the %s)\n", now() - t0,
         self_ending ? "start" : "fault");

  char path[512];
  for (int r = 0; r < 3; ++r) {
    snprintf(path, sizeof path, "%s/rank.%d", g_dir, r);
    unlink(path);
  }
  if (self_ending) unlink(g_stderr_path);
  rmdir(g_dir);
  printf("PASS\n");
  return 0;
}
