/*
 * Soak: many small allreduces and many large ones on every rank, with the response
 * cache on and then off (HOROVOD_CACHE_CAPACITY, read at hvd_init). Every result is
 * checked. After a warm-up (the first tenth of each run), resident memory (VmRSS),
 * open file descriptors and threads are sampled ten times; the run fails if memory
 * grows by more than kSlackKiB, the descriptor count changes or the thread count
 * grows. (A peer's shutdown ends this rank's background thread: the ranks meet before
 * each shutdown so that no sample sees it, and fewer threads would not be a leak.)
 *
 *   soak [SMALL LARGE]     default 20000 small and 200 large per cache setting;
 *                          HVD_SOAK_FULL=1 means 1000000 and 10000
 *
 * Small ops are steps of kStep float32 tensors of kSmall elements with the same names
 * every step, as a training loop has; large ones are kLarge float32 elements (4 MiB).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hvd/hvd.h>

enum { kStep = 16, kSmall = 16, kLarge = 1 << 20, kSamples = 10 };
static const long kSlackKiB = 16 * 1024;

/* Under AddressSanitizer freed memory waits in a quarantine (up to 256 MiB), so
   resident memory grows by design: it is printed but not checked there. */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_CHECK_MEMORY 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_CHECK_MEMORY 0
#endif
#endif
#ifndef SOAK_CHECK_MEMORY
#define SOAK_CHECK_MEMORY 1
#endif

typedef struct {
  long rss_kib, fds, threads;
} usage;

static long status_field(const char* field) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  const size_t n = strlen(field);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

static long count_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  long n = 0;
  struct dirent* e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n - 1; /* the directory's own descriptor */
}

static usage measure(void) {
  usage u = {status_field("VmRSS"), count_fds(), status_field("Threads")};
  return u;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int g_rank, g_size, g_failed;

static void die(const char* what) {
  fprintf(stderr, "rank %d: %s: %s\n", g_rank, what, hvd_last_error());
  exit(1);
}

/* One step of kStep small tensors; element j of tensor t on rank r is r + t + j, so
   the sum is size*(t+j) + size*(size-1)/2. */
static void small_step(void) {
  static float bufs[kStep][kSmall];
  static char names[kStep][32];
  hvd_handle_t h[kStep];
  for (int t = 0; t < kStep; ++t) {
    if (!names[t][0]) snprintf(names[t], sizeof names[t], "soak.small.%d", t);
    for (int j = 0; j < kSmall; ++j) bufs[t][j] = (float)(g_rank + t + j);
    if (hvd_allreduce_async(bufs[t], bufs[t], kSmall, HVD_FLOAT32, HVD_OP_SUM, names[t], NULL,
                            &h[t]) != HVD_SUCCESS)
      die("small allreduce enqueue");
  }
  for (int t = 0; t < kStep; ++t) {
    if (hvd_wait(h[t]) != HVD_SUCCESS) die("small allreduce");
    for (int j = 0; j < kSmall; ++j)
      if (bufs[t][j] != (float)(g_size * (t + j) + g_size * (g_size - 1) / 2)) {
        fprintf(stderr, "rank %d: small tensor %d element %d is %g\n", g_rank, t, j, bufs[t][j]);
        exit(1);
      }
  }
}

static void large_op(long iter) {
  static float* buf;
  if (!buf) buf = malloc(sizeof(float) * kLarge);
  const float v = (float)(g_rank + 1 + iter % 3);
  for (int j = 0; j < kLarge; ++j) buf[j] = v;
  if (hvd_allreduce(buf, buf, kLarge, HVD_FLOAT32, HVD_OP_SUM, "soak.large") != HVD_SUCCESS)
    die("large allreduce");
  const float want = (float)(g_size * (g_size + 1) / 2 + g_size * (iter % 3));
  for (int j = 0; j < kLarge; ++j)
    if (buf[j] != want) {
      fprintf(stderr, "rank %d: large element %d is %g, want %g\n", g_rank, j, buf[j], want);
      exit(1);
    }
}

/* Runs iterations of fn in kSamples+1 slices; the first slice is the warm-up. */
static void run(const char* label, long iterations, long per_call, void (*fn)(long)) {
  const long slice = iterations / (kSamples + 1) > 0 ? iterations / (kSamples + 1) : 1;
  usage base = {0, 0, 0}, peak = {0, 0, 0}, last = {0, 0, 0};
  const double t0 = now();
  long done = 0, sample = -1;
  while (done < iterations) {
    fn(done);
    done += per_call;
    if (done / slice != (done - per_call) / slice || done >= iterations) {
      usage u = measure();
      if (sample < 0) {
        base = peak = u;
      } else {
        if (u.rss_kib > peak.rss_kib) peak.rss_kib = u.rss_kib;
        if (u.fds != base.fds || u.threads > base.threads) {
          fprintf(stderr, "rank %d %s: fds %ld -> %ld, threads %ld -> %ld\n", g_rank, label,
                  base.fds, u.fds, base.threads, u.threads);
          g_failed = 1;
        }
      }
      last = u;
      ++sample;
    }
  }
  const double secs = now() - t0;
  printf("rank %d %-22s %8ld ops %7.1f s | VmRSS after warm-up %ld KiB, peak %ld KiB, end %ld KiB"
         " (+%ld) | fds %ld -> %ld | threads %ld -> %ld\n",
         g_rank, label, done, secs, base.rss_kib, peak.rss_kib, last.rss_kib,
         last.rss_kib - base.rss_kib, base.fds, last.fds, base.threads, last.threads);
  if (SOAK_CHECK_MEMORY && peak.rss_kib - base.rss_kib > kSlackKiB) {
    fprintf(stderr, "rank %d %s: resident memory grew by %ld KiB after warm-up\n", g_rank, label,
            peak.rss_kib - base.rss_kib);
    g_failed = 1;
  }
}

static void small_fn(long i) { (void)i; small_step(); }

int main(int argc, char** argv) {
  long small = 20000, large = 200;
  if (getenv("HVD_SOAK_FULL") && strcmp(getenv("HVD_SOAK_FULL"), "1") == 0) {
    small = 1000000;
    large = 10000;
  }
  if (argc == 3) {
    small = atol(argv[1]);
    large = atol(argv[2]);
  }
  const char* caches[2] = {"1024", "0"};
  for (int c = 0; c < 2; ++c) {
    setenv("HOROVOD_CACHE_CAPACITY", caches[c], 1);
    if (hvd_init() != HVD_SUCCESS) die("hvd_init");
    g_rank = hvd_rank();
    g_size = hvd_size();
    char label[64];
    snprintf(label, sizeof label, "small, cache %s", caches[c]);
    run(label, small, kStep, small_fn);
    snprintf(label, sizeof label, "large, cache %s", caches[c]);
    run(label, large, 1, large_op);
    /* A peer's shutdown ends this rank's background thread too; without the barrier
       a fast peer could shut down before this rank took its last sample, which then
       counted one thread fewer. */
    if (hvd_barrier(HVD_GLOBAL_PROCESS_SET) != HVD_SUCCESS) die("hvd_barrier");
    if (hvd_shutdown() != HVD_SUCCESS) die("hvd_shutdown");
  }
  if (g_failed) return 1;
  printf("rank %d: soak passed\n", g_rank);
  return 0;
}
