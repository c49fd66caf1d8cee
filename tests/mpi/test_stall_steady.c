/* The stall inspector in steady state: tensors every rank has run before (so they
 * are in the response cache, or not with HOROVOD_CACHE_CAPACITY=0) that the last
 * rank stops submitting. Rank 0 must warn once per tensor (the warning time is 2 s,
 * the shutdown time 3 s: one interval), naming the tensor and the missing rank, and
 * every rank that submitted them must get HVD_ERR_TIMEOUT; afterwards the names work
 * again. Rank 0 reads its own stderr through a file. Run with
 * HOROVOD_STALL_CHECK_TIME_SECONDS=2 and HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=3. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

#include "test_util.h"

static const char* const kNames[] = {"steady.a", "steady.b"};
enum { kTensors = 2, kWarmSteps = 3 };

static int g_saved_stderr = -1;
static char g_log_path[256];

static void capture_stderr(void) {
  snprintf(g_log_path, sizeof g_log_path, "/tmp/hvd-stall-steady-%d.log", (int)getpid());
  int fd = open(g_log_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
  assert_true(fd >= 0);
  fflush(stderr);
  g_saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
}

/* Restores stderr and returns what was written meanwhile (also echoed to the log). */
static char* release_stderr(void) {
  static char text[1 << 16];
  fflush(stderr);
  dup2(g_saved_stderr, 2);
  close(g_saved_stderr);
  FILE* f = fopen(g_log_path, "r");
  assert_non_null(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  unlink(g_log_path);
  text[n] = '\0';
  fprintf(stderr, "--- rank 0's stderr during the stall\n%s--- end\n", text);
  return text;
}

/* Warning lines about tensor name (the stall inspector's, "has waited"). */
static int warnings_about(const char* text, const char* name, int missing_rank) {
  char quoted[64], ranks[64];
  snprintf(quoted, sizeof quoted, "'%s'", name);
  snprintf(ranks, sizeof ranks, "rank(s) %d:", missing_rank);
  int count = 0;
  for (const char* line = text; *line;) {
    const char* end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[1024];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, line, len);
    buf[len] = '\0';
    if (strstr(buf, quoted) && strstr(buf, "has waited")) {
      assert_non_null(strstr(buf, ranks));
      ++count;
    }
    line = end ? end + 1 : line + len;
  }
  return count;
}

static void step(int rank, float* values) {
  for (int t = 0; t < kTensors; ++t) values[t] = (float)(rank + t);
  hvd_handle_t h[kTensors];
  for (int t = 0; t < kTensors; ++t)
    assert_hvd_ok(hvd_allreduce_async(&values[t], &values[t], 1, HVD_FLOAT32, HVD_OP_SUM,
                                      kNames[t], NULL, &h[t]));
  for (int t = 0; t < kTensors; ++t) assert_hvd_ok(hvd_wait(h[t]));
}

static void stopped_rank_is_reported_and_timed_out(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  const int stopped = size - 1;
  float v[kTensors];
  for (int s = 0; s < kWarmSteps; ++s) {
    step(rank, v);
    for (int t = 0; t < kTensors; ++t)
      assert_true(v[t] == (float)(size * (size - 1) / 2 + size * t));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) capture_stderr();
  if (rank != stopped) {
    hvd_handle_t h[kTensors];
    for (int t = 0; t < kTensors; ++t)
      assert_hvd_ok(hvd_allreduce_async(&v[t], &v[t], 1, HVD_FLOAT32, HVD_OP_SUM, kNames[t], NULL,
                                        &h[t]));
    for (int t = 0; t < kTensors; ++t) {
      hvd_status_t st = hvd_wait(h[t]);
      if (rank == 0 && st != HVD_ERR_TIMEOUT) release_stderr();
      assert_int_equal(st, HVD_ERR_TIMEOUT);
      assert_non_null(strstr(hvd_last_error(), kNames[t]));
      assert_non_null(strstr(hvd_last_error(), "never submitted"));
    }
  }
  /* The stopped rank waits outside libhvd until the others have their timeouts. */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const char* text = release_stderr();
    for (int t = 0; t < kTensors; ++t) assert_int_equal(warnings_about(text, kNames[t], stopped), 1);
  }
  /* Every rank submits the names again: they run, with the right sums. */
  step(rank, v);
  for (int t = 0; t < kTensors; ++t) assert_true(v[t] == (float)(size * (size - 1) / 2 + size * t));
}

int main(int argc, char** argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const struct CMUnitTest tests[] = {cmocka_unit_test(stopped_rank_is_reported_and_timed_out)};
  int failed = provided < MPI_THREAD_MULTIPLE
                   ? 77
                   : cmocka_run_group_tests_name("stall_steady", tests, tu_group_init,
                                                 tu_group_shutdown);
  MPI_Finalize();
  return failed;
}
