/*
 * hvd_shutdown on one rank while every rank has operations pending: each pending
 * operation on every rank, of every collective kind, completes with an error (none
 * hangs), whether its handle is blocked in hvd_wait on another thread or polled;
 * afterwards every rank re-initializes and collectives work again. Run once with the
 * coordinator (rank 0) shutting down and once with the last rank.
 *
 * Pending operations are of two sorts: ones only this rank submits (no other rank
 * ever will) and ones every rank but the one shutting down submits. A watchdog ends
 * the process with a message if anything hangs, before the suite's timeout.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <hvd/hvd.h>

#include "../test_timeouts.h"

enum { kWatchdogSeconds = 90, kMaxOps = 32, kRows = 4, kCols = 3 };

#define assert_hvd_ok(expr)                                                         \
  do {                                                                              \
    hvd_status_t st_ = (expr);                                                      \
    if (st_ != HVD_SUCCESS) fail_msg("%s: %s (%s)", #expr, hvd_status_string(st_), \
                                     hvd_last_error());                             \
  } while (0)

typedef struct {
  hvd_handle_t handle;
  char name[64];
  int by_thread; /* waited in a thread of its own, else polled then waited here */
  pthread_t thread;
  hvd_status_t status;
  char error[512];
} pending_op;

typedef struct {
  float in[kRows * kCols], out[kRows * kCols];
  float g0[kCols], g1[kCols];
  void* gathered;
  int64_t dim0, per_rank[64], splits[64], recv_splits[64];
} buffers;

static pending_op ops[kMaxOps];
static int nops;
static buffers bufs[kMaxOps];

static void on_watchdog(int sig) {
  (void)sig;
  static const char msg[] = "FAIL: a pending operation did not complete (watchdog)\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
  _exit(3);
}

static void* wait_thread(void* arg) {
  pending_op* op = arg;
  op->status = hvd_wait(op->handle);
  snprintf(op->error, sizeof op->error, "%s", hvd_last_error());
  return NULL;
}

/* Enqueues one operation of kind k (cycling through the collectives) named name. */
static hvd_status_t enqueue(int k, const char* name, int slot, int size, hvd_handle_t* h) {
  buffers* b = &bufs[slot];
  memset(b, 0, sizeof *b);
  const int64_t shape[2] = {kRows, kCols};
  switch (k % 6) {
    case 0:
      return hvd_allreduce_async(b->in, b->out, kRows * kCols, HVD_FLOAT32, HVD_OP_SUM, name,
                                 NULL, h);
    case 1:
      return hvd_broadcast_async(b->in, kRows * kCols, HVD_FLOAT32, size - 1, name, NULL, h);
    case 2:
      return hvd_allgather_async(b->in, 2, shape, HVD_FLOAT32, &b->gathered, &b->dim0,
                                 b->per_rank, name, NULL, h);
    case 3: {
      for (int r = 0; r < size; ++r) b->splits[r] = r == 0 ? kRows : 0;
      return hvd_alltoall_async(b->in, 2, shape, HVD_FLOAT32, b->splits, &b->gathered,
                                &b->dim0, b->recv_splits, name, NULL, h);
    }
    case 4: {
      const void* sends[2] = {b->g0, b->g1};
      void* recvs[2] = {b->g0, b->g1};
      const int64_t counts[2] = {kCols, kCols};
      return hvd_grouped_allreduce_async(2, sends, recvs, counts, HVD_FLOAT32, HVD_OP_AVERAGE,
                                         name, NULL, h);
    }
    default:
      return hvd_reducescatter_async(b->in, b->out, 2, shape, HVD_FLOAT32, HVD_OP_SUM, name,
                                     NULL, h);
  }
}

static void add_op(int k, const char* name, int by_thread, int size) {
  assert_true(nops < kMaxOps);
  pending_op* op = &ops[nops];
  memset(op, 0, sizeof *op);
  snprintf(op->name, sizeof op->name, "%s", name);
  op->by_thread = by_thread;
  assert_hvd_ok(enqueue(k, name, nops, size, &op->handle));
  if (by_thread) assert_int_equal(pthread_create(&op->thread, NULL, wait_thread, op), 0);
  ++nops;
}

static void shutdown_with_pending(int victim_of(int size)) {
  assert_hvd_ok(hvd_init());
  const int rank = hvd_rank(), size = hvd_size();
  const int victim = victim_of(size);
  nops = 0;
  char name[64];
  /* Only this rank submits these. */
  for (int k = 0; k < 12; ++k) {
    snprintf(name, sizeof name, "alone.%d.%d", rank, k);
    add_op(k, name, k % 2, size);
  }
  /* Every rank but the victim submits these. */
  if (rank != victim) {
    for (int k = 0; k < 6; ++k) {
      snprintf(name, sizeof name, "partial.%d", k);
      add_op(k, name, k % 2 == 0, size);
    }
  }
  /* Every rank has its pending operations in the queue and negotiated once more:
     this allreduce completes among them. */
  int32_t x = 1;
  assert_hvd_ok(hvd_allreduce(&x, &x, 1, HVD_INT32, HVD_OP_SUM, "everyone.enqueued"));
  assert_int_equal(x, size);

  alarm(test_timeout_seconds(kWatchdogSeconds));
  if (rank == victim) assert_hvd_ok(hvd_shutdown());
  int failed = 0;
  for (int i = 0; i < nops; ++i) {
    pending_op* op = &ops[i];
    if (op->by_thread) {
      assert_int_equal(pthread_join(op->thread, NULL), 0);
    } else {
      int done = 0;
      /* Polling either sees it done or it is still pending; waiting ends it. */
      hvd_status_t pst = hvd_poll(op->handle, &done);
      (void)pst;
      op->status = hvd_wait(op->handle);
      snprintf(op->error, sizeof op->error, "%s", hvd_last_error());
    }
    if (op->status == HVD_SUCCESS || op->error[0] == '\0') {
      fprintf(stderr, "rank %d: %s ended with %s [%s]\n", rank, op->name,
              hvd_status_string(op->status), op->error);
      ++failed;
    }
    if (bufs[i].gathered) hvd_free(bufs[i].gathered);
  }
  alarm(0);
  printf("rank %d (victim %d): %d pending operations ended with an error\n", rank, victim,
         nops - failed);
  assert_int_equal(failed, 0);
  /* New operations are refused until everyone has re-initialized. */
  if (rank != victim) {
    hvd_status_t st = hvd_allreduce(&x, &x, 1, HVD_INT32, HVD_OP_SUM, "after");
    assert_int_not_equal(st, HVD_SUCCESS);
  }
  assert_hvd_ok(hvd_shutdown());

  assert_hvd_ok(hvd_init());
  float v[kCols] = {1, 2, 3};
  assert_hvd_ok(hvd_allreduce(v, v, kCols, HVD_FLOAT32, HVD_OP_SUM, "works.again"));
  for (int i = 0; i < kCols; ++i) assert_true(v[i] == (float)((i + 1) * size));
  assert_hvd_ok(hvd_shutdown());
}

static int coordinator(int size) { (void)size; return 0; }
static int last_rank(int size) { return size - 1; }

static void coordinator_shuts_down(void** state) {
  (void)state;
  shutdown_with_pending(coordinator);
}

static void last_rank_shuts_down(void** state) {
  (void)state;
  shutdown_with_pending(last_rank);
}

int main(void) {
  signal(SIGALRM, on_watchdog);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(coordinator_shuts_down),
      cmocka_unit_test(last_rank_shuts_down),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
