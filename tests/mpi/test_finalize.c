/* The application owns MPI (it called MPI_Init_thread, as a C program or mpi4py
 * imported first does) and finalizes it. With hvd_shutdown first (the way): libhvd
 * frees its own MPI objects (reduction ops, negotiation types), so MPI_Finalize
 * reports no leak; an operation still pending completes with HVD_ERR_SHUT_DOWN.
 * With "no-shutdown" (misuse; run with Open MPI only): libhvd shuts itself down at
 * the start of MPI_Finalize with a warning that says what to do, instead of calling
 * MPI after it. MPICH 4 turns its thread locking off before that point, so there a
 * background-thread call in flight can still make it abort at exit (see
 * shutdown_at_mpi_finalize in lib/runtime/runtime.cpp). Not a CMocka program:
 * MPI_Finalize ends what a test group could still check, so the checks are plain. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, pread */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvd/hvd.h>

static int failures = 0;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "test_finalize: FAILED: " __VA_ARGS__); \
      fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);  \
      ++failures;                                         \
    }                                                     \
  } while (0)

/* What MPI_Finalize wrote to stderr: MPICH (yaksa, UCX) and Open MPI report leaked
 * objects and calls after finalizing there. */
static char finalize_output[8192];

static void finalize_capturing_stderr(void) {
  char path[] = "/tmp/hvd-test-finalize-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    MPI_Finalize();
    return;
  }
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  MPI_Finalize();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  ssize_t n = pread(fd, finalize_output, sizeof finalize_output - 1, 0);
  finalize_output[n > 0 ? n : 0] = '\0';
  close(fd);
}

int main(int argc, char** argv) {
  const int shutdown_first = !(argc > 1 && strcmp(argv[1], "no-shutdown") == 0);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  CHECK(hvd_init() == HVD_SUCCESS, "hvd_init");
  const int size = hvd_size(), rank = hvd_rank();

  /* Work of every kind that creates libhvd's MPI objects: a float16 sum (its own
   * reduction op), negotiation rounds (their datatypes). */
  float f = 1.0f;
  CHECK(hvd_allreduce(&f, &f, 1, HVD_FLOAT32, HVD_OP_SUM, "finalize.float") == HVD_SUCCESS,
        "float32 allreduce");
  CHECK(f == (float)size, "float32 sum %g, expected %d", f, size);
  /* Left pending: rank 0 submits a name no other rank does, so the shutdown finds it
   * queued (with one rank, it just completes). Submitted before the next collective,
   * which every rank must finish first: the others cannot shut down (ending rank 0's
   * runtime too) before rank 0 has queued it. */
  float pending = 1.0f;
  hvd_handle_t handle = 0;
  if (rank == 0)
    CHECK(hvd_allreduce_async(&pending, &pending, 1, HVD_FLOAT32, HVD_OP_SUM, "finalize.pending",
                              NULL, &handle) == HVD_SUCCESS,
          "async allreduce");
  uint16_t half[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00}; /* 1.0 */
  CHECK(hvd_allreduce(half, half, 4, HVD_FLOAT16, HVD_OP_SUM, "finalize.half") == HVD_SUCCESS,
        "float16 allreduce");


  if (shutdown_first) CHECK(hvd_shutdown() == HVD_SUCCESS, "hvd_shutdown");
  finalize_capturing_stderr();

  CHECK(hvd_is_initialized() == 0, "libhvd still initialized after MPI_Finalize");
  if (rank == 0) {
    hvd_status_t status = hvd_wait(handle);
    CHECK(status == HVD_ERR_SHUT_DOWN || (size == 1 && status == HVD_SUCCESS),
          "the pending operation ended with status %d", (int)status);
  }
  CHECK(hvd_allreduce(&f, &f, 1, HVD_FLOAT32, HVD_OP_SUM, "after") != HVD_SUCCESS,
        "an allreduce after MPI_Finalize succeeded");
  CHECK(hvd_init() != HVD_SUCCESS, "hvd_init after MPI_Finalize succeeded");
  if (!shutdown_first)
    CHECK(strstr(finalize_output, "Call hvd_shutdown()") != NULL,
          "no warning from libhvd at MPI_Finalize: %s", finalize_output);
  const char* const complaints[] = {"leaked", "not returned", "after finalizing", "Attempting"};
  for (size_t i = 0; i < sizeof complaints / sizeof complaints[0]; ++i)
    CHECK(strstr(finalize_output, complaints[i]) == NULL, "MPI_Finalize reported: %s",
          finalize_output);
  if (failures == 0) printf("test_finalize: ok\n");
  return failures ? 1 : 0;
}
