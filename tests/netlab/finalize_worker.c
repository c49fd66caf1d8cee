/*
 * A rank for the lab's finalize test: its collectives, checked, then hvd_shutdown;
 * then it says so on DONE (a named pipe the driver reads, one line per rank) and waits
 * on GO (a named pipe the driver writes one byte per rank to, once it has cut a
 * node's links) before it returns from main, where libhvd's exit handler runs
 * MPI_Finalize, bounded by HVD_FINALIZE_TIMEOUT_SECONDS.
 *
 *   finalize_worker DONE GO
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hvd/hvd.h>

static int fail(const char* what) {
  fprintf(stderr, "finalize_worker rank %d: %s: %s\n", hvd_rank(), what, hvd_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: finalize_worker DONE GO\n");
    return 2;
  }
  if (hvd_init() != HVD_SUCCESS) return fail("hvd_init");
  const int rank = hvd_rank(), size = hvd_size();
  enum { kCount = 1 << 16 };
  static float buf[kCount];
  for (int step = 0; step < 3; ++step) {
    for (int i = 0; i < kCount; ++i) buf[i] = (float)(rank + i % 5);
    if (hvd_allreduce(buf, buf, kCount, HVD_FLOAT32, HVD_OP_SUM, "finalize.sum") != HVD_SUCCESS)
      return fail("hvd_allreduce");
    for (int i = 0; i < kCount; ++i)
      if (buf[i] != (float)(size * (size - 1) / 2 + size * (i % 5))) return fail("wrong sum");
  }
  const int64_t shape[1] = {1};
  const int64_t mine = rank;
  void* out = NULL;
  int64_t rows = 0;
  if (hvd_allgather(&mine, 1, shape, HVD_INT64, &out, &rows, NULL, "finalize.ranks", NULL) != HVD_SUCCESS)
    return fail("hvd_allgather");
  for (int r = 0; r < size; ++r)
    if (((int64_t*)out)[r] != r) return fail("wrong allgather");
  hvd_free(out);
  if (hvd_shutdown() != HVD_SUCCESS) return fail("hvd_shutdown");

  char line[64];
  const int n = snprintf(line, sizeof line, "rank %d done\n", rank);
  const int done = open(argv[1], O_WRONLY);
  if (done < 0 || write(done, line, (size_t)n) != n || close(done) != 0) {
    perror("finalize_worker: DONE");
    return 3;
  }
  char go = 0;
  const int wait_fd = open(argv[2], O_RDONLY);
  if (wait_fd < 0 || read(wait_fd, &go, 1) != 1) {
    perror("finalize_worker: GO");
    return 3;
  }
  close(wait_fd);
  fprintf(stderr, "finalize_worker rank %d: finalizing\n", rank);
  return 0; /* libhvd's exit handler calls MPI_Finalize */
}
