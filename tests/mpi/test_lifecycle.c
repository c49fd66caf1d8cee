#define _DEFAULT_SOURCE /* usleep */
/* Calls before init, re-initialization, shutdown with operations pending on this and
 * on other ranks. */
#include <mpi.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <hvd/hvd_mpi.h>

#include "test_util.h"

static void before_init(void** state) {
  (void)state;
  float v = 1;
  hvd_handle_t h;
  int done;
  assert_int_equal(hvd_is_initialized(), 0);
  assert_int_equal(hvd_rank(), -1);
  assert_int_equal(hvd_size(), -1);
  assert_int_equal(hvd_local_rank(), -1);
  assert_int_equal(hvd_local_size(), -1);
  assert_int_equal(hvd_cross_rank(), -1);
  assert_int_equal(hvd_cross_size(), -1);
  assert_hvd_status(hvd_allreduce(&v, &v, 1, HVD_FLOAT32, HVD_OP_SUM, "x"), HVD_ERR_NOT_INITIALIZED);
  assert_non_null(strstr(hvd_last_error(), "hvd_init"));
  assert_hvd_status(hvd_broadcast(&v, 1, HVD_FLOAT32, 0, "x"), HVD_ERR_NOT_INITIALIZED);
  assert_hvd_status(hvd_allreduce_async(&v, &v, 1, HVD_FLOAT32, HVD_OP_SUM, "x", NULL, &h), HVD_ERR_NOT_INITIALIZED);
  assert_hvd_status(hvd_poll(1, &done), HVD_ERR_NOT_INITIALIZED);
  assert_hvd_status(hvd_wait(1), HVD_ERR_NOT_INITIALIZED);
  assert_hvd_ok(hvd_shutdown()); /* harmless */
  assert_true(hvd_version() >= 100);
  assert_int_equal(hvd_mpi_built(), 1);
}

/* A misspelt knob is named at init with the knob it likely meant, by rank 0 and once
 * per process, however often libhvd is initialized again. The first test to initialize
 * libhvd in this process: the check is made at the first initialization. */
static void a_misspelt_knob_is_named_once(void** state) {
  (void)state;
  setenv("HVD_FUSED_RNG", "1", 1);
  fflush(stderr);
  FILE* captured = tmpfile();
  assert_non_null(captured);
  int saved_stderr = dup(2);
  dup2(fileno(captured), 2);
  for (int round = 0; round < 2; ++round) {
    assert_hvd_ok(hvd_init());
    assert_hvd_ok(hvd_shutdown());
  }
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  unsetenv("HVD_FUSED_RNG");

  char text[8192] = {0};
  rewind(captured);
  size_t n = fread(text, 1, sizeof text - 1, captured);
  fclose(captured);
  text[n] = 0;
  fputs(text, stderr); /* what libhvd printed, for the log */
  int named = 0;
  for (const char* at = text; (at = strstr(at, "HVD_FUSED_RNG")) != NULL; at += 1) {
    assert_non_null(strstr(at, "did you mean HVD_FUSED_RING?"));
    ++named;
  }
  assert_int_equal(named, tu_launcher_rank() == 0 ? 1 : 0);
}

static void init_is_idempotent_and_reinit_works(void** state) {
  (void)state;
  for (int round = 0; round < 3; ++round) {
    assert_hvd_ok(hvd_init());
    assert_hvd_ok(hvd_init());
    assert_int_equal(hvd_is_initialized(), 1);
    int size = hvd_size();
    assert_true(hvd_rank() >= 0 && hvd_rank() < size);
    int32_t v = 1;
    assert_hvd_ok(hvd_allreduce(&v, &v, 1, HVD_INT32, HVD_OP_SUM, "reinit"));
    assert_int_equal(v, size);
    assert_hvd_ok(hvd_shutdown());
    assert_int_equal(hvd_is_initialized(), 0);
    assert_hvd_status(hvd_allreduce(&v, &v, 1, HVD_INT32, HVD_OP_SUM, "x"), HVD_ERR_NOT_INITIALIZED);
  }
}

/* The count of threads named `name` once it is `want`, or after 2 s what it is then:
 * a listing of /proc/self/task taken while another thread ends may miss an entry, and
 * a joined thread may still be listed for a moment (the kernel wakes the joiner before
 * it removes the thread). */
static int threads_named_settled(const char* name, int want) {
  int found = -1;
  for (int tries = 0; tries < 2000 && (found = tu_threads_named(name, NULL)) != want; ++tries)
    usleep(1000);
  return found;
}

/* The background thread is named, so that top -H, perf and gdb tell it from the
 * caller's threads, and it is gone after shutdown. */
static void the_background_thread_is_named(void** state) {
  (void)state;
  assert_hvd_ok(hvd_init());
  assert_int_equal(threads_named_settled("hvd-background", 1), 1);
  /* One rank's shutdown ends every rank's background thread: all have looked first. */
  MPI_Barrier(MPI_COMM_WORLD);
  assert_hvd_ok(hvd_shutdown());
  assert_int_equal(threads_named_settled("hvd-background", 0), 0);
}

typedef struct {
  hvd_handle_t handle;
  hvd_status_t status;
} Waiter;

static void* wait_in_thread(void* arg) {
  Waiter* w = arg;
  w->status = hvd_wait(w->handle);
  return NULL;
}

/* Rank 0 has an operation nobody else submits; every rank shuts down. The pending
 * operation completes with HVD_ERR_SHUT_DOWN for a thread blocked in hvd_wait. */
static void shutdown_completes_pending_handles(void** state) {
  (void)state;
  assert_hvd_ok(hvd_init());
  if (hvd_size() == 1) { /* alone, the operation would simply complete */
    assert_hvd_ok(hvd_shutdown());
    skip();
  }
  float v = 1;
  Waiter w = {0, HVD_SUCCESS};
  pthread_t thread;
  int rank0 = hvd_rank() == 0;
  if (rank0) {
    assert_hvd_ok(hvd_allreduce_async(&v, &v, 1, HVD_FLOAT32, HVD_OP_SUM, "never.matched", NULL, &w.handle));
    assert_int_equal(pthread_create(&thread, NULL, wait_in_thread, &w), 0);
  }
  int32_t x = 1;
  assert_hvd_ok(hvd_allreduce(&x, &x, 1, HVD_INT32, HVD_OP_SUM, "before.shutdown"));
  assert_hvd_ok(hvd_shutdown());
  if (rank0) {
    pthread_join(thread, NULL);
    assert_int_equal(w.status, HVD_ERR_SHUT_DOWN);
  }
}

/* Rank 0 waits on an operation only it submitted; the last rank shuts down alone.
 * Rank 0's operation fails with HVD_ERR_SHUT_DOWN instead of hanging, and new
 * operations are refused until every rank has re-initialized. */
static void shutdown_by_one_rank_releases_the_others(void** state) {
  (void)state;
  assert_hvd_ok(hvd_init());
  const int rank = hvd_rank(), size = hvd_size();
  if (size == 1) {
    assert_hvd_ok(hvd_shutdown());
    return;
  }
  float v = 1;
  hvd_handle_t h;
  int32_t x = 1;
  assert_hvd_ok(hvd_allreduce(&x, &x, 1, HVD_INT32, HVD_OP_SUM, "sync"));
  if (rank == 0) {
    /* The other rank may have shut down before this enqueue: then the enqueue itself
       is refused; otherwise the wait ends with the error. Either way, no hang. */
    hvd_status_t st = hvd_allreduce_async(&v, &v, 1, HVD_FLOAT32, HVD_OP_SUM, "orphan", NULL, &h);
    if (st == HVD_SUCCESS) st = hvd_wait(h);
    assert_int_equal(st, HVD_ERR_SHUT_DOWN);
    assert_non_null(strstr(hvd_last_error(), "another rank"));
    assert_hvd_status(hvd_allreduce(&x, &x, 1, HVD_INT32, HVD_OP_SUM, "after"), HVD_ERR_SHUT_DOWN);
  }
  if (rank == size - 1) assert_hvd_ok(hvd_shutdown());
  assert_hvd_ok(hvd_shutdown());
  /* All ranks can start again. */
  assert_hvd_ok(hvd_init());
  x = 1;
  assert_hvd_ok(hvd_allreduce(&x, &x, 1, HVD_INT32, HVD_OP_SUM, "again"));
  assert_int_equal(x, size);
  assert_hvd_ok(hvd_shutdown());
}

/* hvd_init_comm on a split communicator: even and odd world ranks form two jobs. */
static void init_on_a_sub_communicator(void** state) {
  (void)state;
  int world_rank, world_size;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  int half_size;
  MPI_Comm_size(half, &half_size);
  assert_hvd_status(hvd_init_comm(MPI_COMM_NULL), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_ok(hvd_init_comm_f(MPI_Comm_c2f(half)));
  MPI_Comm_free(&half); /* libhvd holds its own duplicate */
  assert_int_equal(hvd_size(), half_size);
  assert_int_equal(hvd_rank(), world_rank / 2);
  int32_t v = world_rank;
  assert_hvd_ok(hvd_allreduce(&v, &v, 1, HVD_INT32, HVD_OP_SUM, "half"));
  int32_t want = 0;
  for (int r = world_rank % 2; r < world_size; r += 2) want += r;
  assert_int_equal(v, want);
  assert_hvd_ok(hvd_shutdown());
}

int main(int argc, char** argv) {
  int provided;
  const struct CMUnitTest before[] = {cmocka_unit_test(before_init)};
  /* The first test runs before anyone initializes MPI; then this program takes MPI
   * itself so it can build communicators for hvd_init_comm. */
  int failed = cmocka_run_group_tests_name("lifecycle.before_init", before, NULL, NULL);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_misspelt_knob_is_named_once),
      cmocka_unit_test(init_is_idempotent_and_reinit_works),
      cmocka_unit_test(the_background_thread_is_named),
      cmocka_unit_test(shutdown_completes_pending_handles),
      cmocka_unit_test(shutdown_by_one_rank_releases_the_others),
      cmocka_unit_test(init_on_a_sub_communicator),
  };
  failed += cmocka_run_group_tests_name("lifecycle", tests, NULL, NULL);
  MPI_Finalize();
  return failed;
}
