/*
 * A worker of an elastic job, for hvdrun's tests: it does what docs/elastic.md says a
 * worker does at the points the tests need (generation from HVD_ELASTIC_GENERATION,
 * HELLO to HVD_ELASTIC_DRIVER from rank 0, status 75 for a change of hosts, 76 when a
 * collective failed because of a peer), without the Python API.
 *
 * Every rank first appends "gen=G rank=R size=S host=H" to LOG (H: HOROVOD_HOSTNAME).
 *
 *   elastic_worker LOG grow TARGET HOSTS_FILE NEW_HOSTS
 *       With fewer than TARGET ranks: rank 0 says HELLO, writes NEW_HOSTS (one host a
 *       line) into HOSTS_FILE, which the test's discovery script prints, and waits for
 *       hvdrun's HOSTS_UPDATED line (appending "notified gen=G: LINE" to LOG); then
 *       every rank leaves with 75. With TARGET ranks or more: every rank exits 0.
 *   elastic_worker LOG fail GEN RANK
 *       In generation GEN (-1: in every one) rank RANK exits 1 once the job formed;
 *       the others' allreduce fails and they exit 76 (or the launcher ends them). In
 *       other generations every rank allreduces once and exits 0.
 *   elastic_worker LOG loop READY
 *       Generation 0 allreduces for ever (76 once a peer is gone), rank 0 writing a
 *       line to READY (a named pipe the test reads) before its third allreduce; later
 *       generations allreduce three times and exit 0.
 */
#define _DEFAULT_SOURCE 1 /* getaddrinfo, with the build's strict C standard */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <hvd/hvd.h>

enum { kRestart = 75, kPeerFailed = 76, kNoticeSeconds = 60, kLifetimeSeconds = 200 };

static int rank_ = -1;
static const char* log_path_;

static void log_line(const char* text) {
  const int fd = open(log_path_, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0 || write(fd, text, strlen(text)) < 0) {
    perror("elastic_worker: log");
    exit(3);
  }
  close(fd);
}

static const char* env_or(const char* name, const char* fallback) {
  const char* v = getenv(name);
  return v ? v : fallback;
}

/* One allreduce of a few floats; 1 when it worked. */
static int allreduce_ok(const char* name, int count) {
  static float buf[1 << 16];
  for (int i = 0; i < count; ++i) buf[i] = (float)rank_;
  return hvd_allreduce(buf, buf, count, HVD_FLOAT32, HVD_OP_SUM, name) == HVD_SUCCESS;
}

/* Connects to HVD_ELASTIC_DRIVER and says HELLO; the socket, or -1. */
static int hello(void) {
  char addr[256];
  snprintf(addr, sizeof addr, "%s", env_or("HVD_ELASTIC_DRIVER", ""));
  char* colon = strrchr(addr, ':');
  if (!colon) {
    fprintf(stderr, "elastic_worker: HVD_ELASTIC_DRIVER is [%s]\n", addr);
    return -1;
  }
  *colon = '\0';
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(addr, colon + 1, &hints, &res) != 0) return -1;
  const int fd = socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    perror("elastic_worker: connect");
    freeaddrinfo(res);
    return -1;
  }
  freeaddrinfo(res);
  char line[128];
  snprintf(line, sizeof line, "HELLO %s %s\n", env_or("HVD_ELASTIC_TOKEN", ""),
           env_or("HVD_ELASTIC_GENERATION", ""));
  if (write(fd, line, strlen(line)) < 0) return -1;
  return fd;
}

/* Waits for a HOSTS_UPDATED line on fd, at most kNoticeSeconds; 1 when it came. */
static int wait_for_update(int fd, char* line, size_t size) {
  size_t got = 0;
  const time_t until = time(NULL) + kNoticeSeconds;
  while (time(NULL) < until && got + 1 < size) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    const ssize_t n = read(fd, line + got, 1);
    if (n <= 0) return 0;
    if (line[got] == '\n') {
      line[got] = '\0';
      if (strncmp(line, "HOSTS_UPDATED ", 14) == 0) return 1;
      got = 0;  /* a line it does not know */
      continue;
    }
    ++got;
  }
  return 0;
}

static void write_file(const char* path, const char* text) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE* f = fopen(tmp, "w");
  if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
    perror("elastic_worker: hosts file");
    exit(3);
  }
}

static int grow(int target, const char* hosts_file, const char* new_hosts) {
  const char* gen = env_or("HVD_ELASTIC_GENERATION", "?");
  if (hvd_size() >= target) return allreduce_ok("grow.done", 1) ? 0 : kPeerFailed;
  int leave = 0;
  if (rank_ == 0) {
    const int fd = hello();
    if (fd >= 0) {
      write_file(hosts_file, new_hosts);
      char line[256], text[320];
      if (wait_for_update(fd, line, sizeof line)) {
        snprintf(text, sizeof text, "notified gen=%s: %s\n", gen, line);
        log_line(text);
        leave = 1;
      }
      close(fd);
    }
  }
  if (hvd_broadcast(&leave, 1, HVD_INT32, 0, "grow.leave") != HVD_SUCCESS) return kPeerFailed;
  if (!leave) {
    fprintf(stderr, "elastic_worker: rank 0 got no HOSTS_UPDATED within %d s\n", kNoticeSeconds);
    return 3;
  }
  hvd_shutdown();
  return kRestart;
}

static int fail(int gen_to_fail, int rank_to_fail) {
  const int gen = atoi(env_or("HVD_ELASTIC_GENERATION", "0"));
  if (!allreduce_ok("fail.formed", 1)) return kPeerFailed;
  if ((gen_to_fail < 0 || gen == gen_to_fail) && rank_ == rank_to_fail) _exit(1);
  if (gen_to_fail < 0 || gen == gen_to_fail) {
    if (!allreduce_ok("fail.after", 1)) return kPeerFailed;
  }
  hvd_shutdown();
  return 0;
}

static int loop(const char* ready) {
  const int gen = atoi(env_or("HVD_ELASTIC_GENERATION", "0"));
  if (gen > 0) {
    for (int i = 0; i < 3; ++i)
      if (!allreduce_ok("loop.after", 1 << 16)) return kPeerFailed;
    hvd_shutdown();
    return 0;
  }
  const time_t start = time(NULL);
  for (long iter = 0; time(NULL) - start < kLifetimeSeconds; ++iter) {
    if (iter == 2 && rank_ == 0) {
      FILE* f = fopen(ready, "w");
      if (!f || fprintf(f, "generation 0 under way\n") < 0 || fclose(f) != 0) return 3;
    }
    if (!allreduce_ok("loop.gen0", 1 << 16)) return kPeerFailed;
  }
  return 4;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: elastic_worker LOG grow|fail|loop ARGS...\n");
    return 2;
  }
  log_path_ = argv[1];
  if (hvd_init() != HVD_SUCCESS) {
    fprintf(stderr, "elastic_worker: hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  rank_ = hvd_rank();
  char text[512];
  snprintf(text, sizeof text, "gen=%s rank=%d size=%d host=%s\n", env_or("HVD_ELASTIC_GENERATION", "?"),
           rank_, hvd_size(), env_or("HOROVOD_HOSTNAME", "?"));
  log_line(text);
  if (strcmp(argv[2], "grow") == 0 && argc == 6) return grow(atoi(argv[3]), argv[4], argv[5]);
  if (strcmp(argv[2], "fail") == 0 && argc == 5) return fail(atoi(argv[3]), atoi(argv[4]));
  if (strcmp(argv[2], "loop") == 0 && argc == 4) return loop(argv[3]);
  fprintf(stderr, "elastic_worker: bad arguments\n");
  return 2;
}
