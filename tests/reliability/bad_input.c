/*
 * The bad-input matrix: every function of hvd.h and hvd_mpi.h called with every
 * kind of bad argument (NULL, negative, huge, out-of-range enum, unknown handle,
 * handle waited twice, a 10 MB name, a name that is not UTF-8, a bad struct_size),
 * before hvd_init, after it and after hvd_shutdown. Each call must return a status
 * with a non-empty hvd_last_error() (or, for int queries, -1), never crash; after
 * all of it a real allreduce must still give the right answer. Run on 2 ranks; every
 * rank makes the same calls, so the collectives that do run agree.
 *
 * Prints the number of calls checked per phase.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hvd/hvd.h>
#include <hvd/hvd_mpi.h>

static int g_cases, g_failures;
static const char* g_phase = "";
static int g_trace; /* BAD_INPUT_TRACE=1: name each call before making it */

static int trace(int line) {
  if (g_trace) fprintf(stderr, "[%s] line %d\n", g_phase, line);
  return 0;
}

static void failure(int line, const char* what, const char* why) {
  ++g_failures;
  fprintf(stderr, "FAIL [%s] line %d: %s: %s\n", g_phase, line, what, why);
}

/* A call that must fail with a status and a message. */
static void check_error(int line, const char* what, hvd_status_t st) {
  ++g_cases;
  if (st == HVD_SUCCESS) {
    failure(line, what, "returned HVD_SUCCESS");
    return;
  }
  const char* msg = hvd_last_error();
  if (!msg || !*msg) failure(line, what, "failed with an empty hvd_last_error()");
  const char* text = hvd_status_string(st);
  if (!text || !*text || strcmp(text, "unknown status") == 0)
    failure(line, what, "returned a status outside hvd_status_t");
}
#define EXPECT_ERROR(call) check_error(__LINE__, #call, (trace(__LINE__), (call)))

/* An int query that must say "no" with -1. */
static void check_minus_one(int line, const char* what, long long v) {
  ++g_cases;
  if (v != -1) {
    char buf[64];
    snprintf(buf, sizeof buf, "returned %lld, expected -1", v);
    failure(line, what, buf);
  }
}
#define EXPECT_MINUS_ONE(call) check_minus_one(__LINE__, #call, (trace(__LINE__), (long long)(call)))

/* An async call: an error at once, or a handle whose wait ends with an error. */
static void check_async_error(int line, const char* what, hvd_status_t st, hvd_handle_t* h) {
  if (st == HVD_SUCCESS) st = hvd_wait(*h);
  check_error(line, what, st);
}
#define EXPECT_ASYNC_ERROR(call, h) check_async_error(__LINE__, #call, (trace(__LINE__), (call)), &(h))

/* Arguments the library accepts although they are questionable: success is noted
   (printed once per phase), an error must still carry a message. */
static void check_error_or_note(int line, const char* what, hvd_status_t st) {
  if (st == HVD_SUCCESS) {
    ++g_cases;
    printf("[%s] note: accepted: %s\n", g_phase, what);
    return;
  }
  check_error(line, what, st);
}
#define EXPECT_ERROR_OR_NOTE(call) check_error_or_note(__LINE__, #call, (trace(__LINE__), (call)))

#define EXPECT_OK(call)                                                          \
  do {                                                                           \
    ++g_cases;                                                                   \
    hvd_status_t st_ = (call);                                                   \
    if (st_ != HVD_SUCCESS) failure(__LINE__, #call, hvd_last_error());          \
  } while (0)

enum { kBigName = 10 << 20 };
static char* g_big_name;          /* 10 MB of 'n' */
static const char kNotUtf8[] = "bad\xff\xfe\xc3(\x80name"; /* invalid sequences */

static float g_buf[64];
static int64_t g_shape[2] = {4, 4};
static void* g_out;
static int64_t g_dim0, g_per_rank[8], g_splits[8];

/* Collectives with bad arguments. Before init some of these are refused as
   HVD_ERR_NOT_INITIALIZED first, after init as HVD_ERR_INVALID_ARGUMENT: both pass. */
static void collectives(void) {
  const hvd_dtype_t bad_dtypes[] = {(hvd_dtype_t)-1, (hvd_dtype_t)11, (hvd_dtype_t)INT_MAX};
  const hvd_reduce_op_t bad_ops[] = {(hvd_reduce_op_t)-1, (hvd_reduce_op_t)6,
                                     (hvd_reduce_op_t)INT_MAX};
  hvd_handle_t h;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, 4, bad_dtypes[i], HVD_OP_SUM, "bad.dtype"));
    EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, 4, HVD_FLOAT32, bad_ops[i], "bad.op"));
    EXPECT_ERROR(hvd_broadcast(g_buf, 4, bad_dtypes[i], 0, "bad.dtype"));
    EXPECT_ERROR(hvd_allgather(g_buf, 2, g_shape, bad_dtypes[i], &g_out, &g_dim0, NULL,
                               "bad.dtype", NULL));
    EXPECT_ERROR(hvd_reducescatter(g_buf, g_buf, 2, g_shape, HVD_FLOAT32, bad_ops[i],
                                   "bad.op", NULL));
  }
  /* NULL buffers, negative and huge counts. */
  EXPECT_ERROR(hvd_allreduce(NULL, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, "null.send"));
  EXPECT_ERROR(hvd_allreduce(g_buf, NULL, 4, HVD_FLOAT32, HVD_OP_SUM, "null.recv"));
  EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, -1, HVD_FLOAT32, HVD_OP_SUM, "negative"));
  EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, INT64_MIN, HVD_FLOAT32, HVD_OP_SUM, "min"));
  EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, INT64_MAX, HVD_FLOAT32, HVD_OP_SUM, "huge"));
  EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, INT64_MAX / 4, HVD_FLOAT64, HVD_OP_SUM, "huge8"));
  EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, 4, HVD_BOOL, HVD_OP_AVERAGE, "bool.avg"));
  EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, 4, HVD_INT32, HVD_OP_ADASUM, "adasum.int"));
  EXPECT_ERROR(hvd_broadcast(NULL, 4, HVD_FLOAT32, 0, "null"));
  EXPECT_ERROR(hvd_broadcast(g_buf, -5, HVD_FLOAT32, 0, "negative"));
  EXPECT_ERROR(hvd_broadcast(g_buf, 4, HVD_FLOAT32, -1, "root.negative"));
  EXPECT_ERROR(hvd_broadcast(g_buf, 4, HVD_FLOAT32, INT_MAX, "root.huge"));
  /* Names: 10 MB. */
  EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, g_big_name));
  EXPECT_ERROR(hvd_broadcast(g_buf, 4, HVD_FLOAT32, 0, g_big_name));
  EXPECT_ERROR(hvd_allgather(g_buf, 2, g_shape, HVD_FLOAT32, &g_out, &g_dim0, NULL, g_big_name,
                             NULL));
  EXPECT_ERROR(hvd_alltoall(g_buf, 2, g_shape, HVD_FLOAT32, NULL, &g_out, &g_dim0, NULL,
                            g_big_name, NULL));
  EXPECT_ERROR(hvd_reducescatter(g_buf, g_buf, 2, g_shape, HVD_FLOAT32, HVD_OP_SUM, g_big_name,
                                 NULL));
  /* Async forms: NULL handle, bad options. */
  hvd_op_options_t opts;
  hvd_op_options_init(&opts);
  EXPECT_ERROR(hvd_allreduce_async(g_buf, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, "null.handle",
                                   NULL, NULL));
  EXPECT_ERROR(hvd_broadcast_async(g_buf, 4, HVD_FLOAT32, 0, "null.handle", NULL, NULL));
  const size_t bad_sizes[] = {0, 1, sizeof(size_t), 16};
  for (size_t i = 0; i < 4; ++i) {
    opts.struct_size = bad_sizes[i];
    EXPECT_ERROR(hvd_allreduce_async(g_buf, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, "bad.size",
                                     &opts, &h));
    EXPECT_ERROR(hvd_allgather(g_buf, 2, g_shape, HVD_FLOAT32, &g_out, &g_dim0, NULL,
                               "bad.size", &opts));
  }
  hvd_op_options_init(&opts);
  opts.device = -7;
  EXPECT_ERROR(hvd_allreduce_async(g_buf, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, "bad.device",
                                   &opts, &h));
  /* A device ordinal no machine has, with host buffers: refused at once or by the
     wait (an async call reports some errors only there). */
  opts.device = INT32_MAX;
  EXPECT_ASYNC_ERROR(hvd_broadcast_async(g_buf, 4, HVD_FLOAT32, 0, "bad.device", &opts, &h), h);
  hvd_op_options_init(&opts);
  opts.process_set_id = 12345;
  EXPECT_ERROR(hvd_allreduce_async(g_buf, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, "bad.set",
                                   &opts, &h));
  opts.process_set_id = -1;
  EXPECT_ERROR(hvd_reducescatter(g_buf, g_buf, 2, g_shape, HVD_FLOAT32, HVD_OP_SUM, "bad.set",
                                 &opts));
  hvd_op_options_init(&opts);
  opts.prescale_factor = 1.0 / 0.0;
  EXPECT_ERROR(hvd_allreduce_async(g_buf, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, "inf.scale",
                                   &opts, &h));
  opts.prescale_factor = 1.0;
  opts.postscale_factor = 0.0 / 0.0;
  EXPECT_ERROR(hvd_allreduce_async(g_buf, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, "nan.scale",
                                   &opts, &h));
  /* Grouped. */
  const void* sends[2] = {g_buf, g_buf + 8};
  void* recvs[2] = {g_buf, g_buf + 8};
  const void* null_sends[2] = {g_buf, NULL};
  int64_t counts[2] = {4, 4}, bad_counts[2] = {4, -1};
  EXPECT_ERROR(hvd_grouped_allreduce(-1, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "g", NULL));
  EXPECT_ERROR(hvd_grouped_allreduce(INT_MAX, NULL, NULL, NULL, HVD_FLOAT32, HVD_OP_SUM, "g", NULL));
  EXPECT_ERROR(hvd_grouped_allreduce(2, NULL, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "g", NULL));
  EXPECT_ERROR(hvd_grouped_allreduce(2, sends, NULL, counts, HVD_FLOAT32, HVD_OP_SUM, "g", NULL));
  EXPECT_ERROR(hvd_grouped_allreduce(2, sends, recvs, NULL, HVD_FLOAT32, HVD_OP_SUM, "g", NULL));
  EXPECT_ERROR(hvd_grouped_allreduce(2, null_sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "g",
                                     NULL));
  EXPECT_ERROR(hvd_grouped_allreduce(2, sends, recvs, bad_counts, HVD_FLOAT32, HVD_OP_SUM, "g",
                                     NULL));
  EXPECT_ERROR(hvd_grouped_allreduce(2, sends, recvs, counts, (hvd_dtype_t)42, HVD_OP_SUM, "g",
                                     NULL));
  EXPECT_ERROR(hvd_grouped_allreduce(2, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM,
                                     g_big_name, NULL));
  EXPECT_ERROR(hvd_grouped_allreduce_async(2, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "g",
                                           NULL, NULL));
  /* Shapes: ndim out of range, NULL shape, negative or overflowing dimensions. */
  const int64_t neg_shape[2] = {-1, 4}, huge_shape[2] = {INT64_MAX, 4},
                huge_shape2[3] = {1ll << 32, 1ll << 32, 1ll << 32};
  EXPECT_ERROR(hvd_allgather(g_buf, -1, g_shape, HVD_FLOAT32, &g_out, &g_dim0, NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, 0, g_shape, HVD_FLOAT32, &g_out, &g_dim0, NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, HVD_MAX_NDIM + 1, g_shape, HVD_FLOAT32, &g_out, &g_dim0,
                             NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, INT_MAX, g_shape, HVD_FLOAT32, &g_out, &g_dim0, NULL, "s",
                             NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, 2, NULL, HVD_FLOAT32, &g_out, &g_dim0, NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, 2, neg_shape, HVD_FLOAT32, &g_out, &g_dim0, NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, 2, huge_shape, HVD_FLOAT32, &g_out, &g_dim0, NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, 3, huge_shape2, HVD_FLOAT32, &g_out, &g_dim0, NULL, "s",
                             NULL));
  EXPECT_ERROR(hvd_allgather(NULL, 2, g_shape, HVD_FLOAT32, &g_out, &g_dim0, NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, 2, g_shape, HVD_FLOAT32, NULL, &g_dim0, NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather(g_buf, 2, g_shape, HVD_FLOAT32, &g_out, NULL, NULL, "s", NULL));
  EXPECT_ERROR(hvd_allgather_async(g_buf, 2, g_shape, HVD_FLOAT32, &g_out, &g_dim0, g_per_rank,
                                   "s", NULL, NULL));
  /* Alltoall: splits negative, not summing to the rows, rows not divisible. */
  const int64_t odd_shape[2] = {3, 4};
  g_splits[0] = -1;
  g_splits[1] = 5;
  EXPECT_ERROR(hvd_alltoall(g_buf, 2, g_shape, HVD_FLOAT32, g_splits, &g_out, &g_dim0, NULL,
                            "a", NULL));
  g_splits[0] = 100;
  g_splits[1] = 100;
  EXPECT_ERROR(hvd_alltoall(g_buf, 2, g_shape, HVD_FLOAT32, g_splits, &g_out, &g_dim0, NULL,
                            "a", NULL));
  g_splits[0] = INT64_MAX;
  g_splits[1] = INT64_MAX;
  EXPECT_ERROR(hvd_alltoall(g_buf, 2, g_shape, HVD_FLOAT32, g_splits, &g_out, &g_dim0, NULL,
                            "a", NULL));
  if (hvd_size() == 2 || hvd_size() == -1)
    EXPECT_ERROR(hvd_alltoall(g_buf, 2, odd_shape, HVD_FLOAT32, NULL, &g_out, &g_dim0, NULL,
                              "a", NULL));
  EXPECT_ERROR(hvd_alltoall(g_buf, -3, g_shape, HVD_FLOAT32, NULL, &g_out, &g_dim0, NULL, "a",
                            NULL));
  EXPECT_ERROR(hvd_alltoall(g_buf, 2, g_shape, HVD_FLOAT32, NULL, NULL, &g_dim0, NULL, "a", NULL));
  EXPECT_ERROR(hvd_alltoall(g_buf, 2, g_shape, (hvd_dtype_t)77, NULL, &g_out, &g_dim0, NULL, "a",
                            NULL));
  EXPECT_ERROR(hvd_alltoall_async(g_buf, 2, g_shape, HVD_FLOAT32, NULL, &g_out, &g_dim0, NULL,
                                  "a", NULL, NULL));
  /* Reducescatter. */
  EXPECT_ERROR(hvd_reducescatter(NULL, g_buf, 2, g_shape, HVD_FLOAT32, HVD_OP_SUM, "r", NULL));
  EXPECT_ERROR(hvd_reducescatter(g_buf, NULL, 2, g_shape, HVD_FLOAT32, HVD_OP_SUM, "r", NULL));
  EXPECT_ERROR(hvd_reducescatter(g_buf, g_buf, 2, NULL, HVD_FLOAT32, HVD_OP_SUM, "r", NULL));
  EXPECT_ERROR(hvd_reducescatter(g_buf, g_buf, 2, neg_shape, HVD_FLOAT32, HVD_OP_SUM, "r", NULL));
  EXPECT_ERROR(hvd_reducescatter(g_buf, g_buf, 2, huge_shape, HVD_FLOAT32, HVD_OP_SUM, "r", NULL));
  EXPECT_ERROR(hvd_reducescatter(g_buf, g_buf, 99, g_shape, HVD_FLOAT32, HVD_OP_SUM, "r", NULL));
  EXPECT_ERROR(hvd_reducescatter_async(g_buf, g_buf, 2, g_shape, HVD_FLOAT32, HVD_OP_SUM, "r",
                                       NULL, NULL));
}

/* Handles: unknown, never issued, NULL out-parameters. */
static void handles(void) {
  int done = 0;
  const hvd_handle_t bad[] = {0, -1, INT64_MIN, INT64_MAX, 123456789};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    EXPECT_ERROR(hvd_wait(bad[i]));
    EXPECT_ERROR(hvd_poll(bad[i], &done));
    EXPECT_ERROR(hvd_poll(bad[i], NULL));
  }
}

static void sync_and_sets(void) {
  int last = 0;
  EXPECT_ERROR(hvd_barrier(-1));
  EXPECT_ERROR(hvd_barrier(INT32_MAX));
  EXPECT_ERROR(hvd_join(-5, &last));
  EXPECT_ERROR_OR_NOTE(hvd_join(INT_MAX, &last));
  int32_t id = 0;
  const int dup[2] = {0, 0}, unsorted[2] = {1, 0}, out_of_range[2] = {0, 99},
            negative[2] = {-1, 0}, ok[1] = {0};
  EXPECT_ERROR(hvd_add_process_set(NULL, 2, &id));
  EXPECT_ERROR(hvd_add_process_set(ok, 1, NULL));
  EXPECT_ERROR(hvd_add_process_set(ok, -1, &id));
  EXPECT_ERROR(hvd_add_process_set(ok, 0, &id));
  /* More ranks than the job has (a count the array really holds: a count longer
     than the array is the caller's out-of-bounds read, not something to detect). */
  const int too_many[5] = {0, 1, 2, 3, 4};
  if (hvd_size() < 5) EXPECT_ERROR(hvd_add_process_set(too_many, 5, &id));
  EXPECT_ERROR(hvd_add_process_set(dup, 2, &id));
  EXPECT_ERROR(hvd_add_process_set(unsorted, 2, &id));
  EXPECT_ERROR(hvd_add_process_set(out_of_range, 2, &id));
  EXPECT_ERROR(hvd_add_process_set(negative, 2, &id));
  EXPECT_ERROR(hvd_remove_process_set(HVD_GLOBAL_PROCESS_SET));
  EXPECT_ERROR(hvd_remove_process_set(-1));
  EXPECT_ERROR(hvd_remove_process_set(9999));
  EXPECT_MINUS_ONE(hvd_process_set_rank(-1));
  EXPECT_MINUS_ONE(hvd_process_set_rank(9999));
  EXPECT_MINUS_ONE(hvd_process_set_size(INT32_MIN));
  EXPECT_MINUS_ONE(hvd_process_set_included(4242));
  int ranks[4], n = 0;
  int32_t ids[4];
  EXPECT_ERROR(hvd_process_set_ranks(9999, ranks, 4, &n));
  EXPECT_ERROR(hvd_process_set_ranks(0, ranks, -1, &n));
  EXPECT_ERROR(hvd_process_set_ranks(0, NULL, 4, &n));
  EXPECT_ERROR(hvd_process_set_ranks(0, ranks, 4, NULL));
  EXPECT_ERROR(hvd_process_set_ids(NULL, 4, &n));
  EXPECT_ERROR(hvd_process_set_ids(ids, -1, &n));
  EXPECT_ERROR(hvd_process_set_ids(ids, 4, NULL));
}

static void misc(void) {
  EXPECT_ERROR(hvd_op_options_init(NULL));
  EXPECT_ERROR(hvd_start_timeline(NULL, 0));
  EXPECT_ERROR(hvd_start_timeline("", 1));
  /* Only rank 0 opens the file (the others accept any non-empty path). */
  if (hvd_rank() <= 0) {
    EXPECT_ERROR(hvd_start_timeline("/nonexistent-dir/for/sure/timeline.json", 0));
    EXPECT_ERROR(hvd_start_timeline(g_big_name, 0));
  }
  EXPECT_ERROR(hvd_get_counters(NULL));
  hvd_counters_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = 0;
  EXPECT_ERROR(hvd_get_counters(&c));
  c.struct_size = 3;
  EXPECT_ERROR(hvd_get_counters(&c));
  char buf[64];
  EXPECT_ERROR(hvd_param_get(NULL, buf, sizeof buf));
  EXPECT_ERROR(hvd_param_get("HOROVOD_NO_SUCH_KNOB", buf, sizeof buf));
  EXPECT_ERROR(hvd_param_get(g_big_name, buf, sizeof buf));
  EXPECT_ERROR(hvd_param_get(kNotUtf8, buf, sizeof buf));
  EXPECT_ERROR(hvd_param_get("HOROVOD_FUSION_THRESHOLD", NULL, 16));
  /* hvd_refuse: an op that is no collective's name, no reason, a set this rank is not
   * in. None of these announces anything. */
  EXPECT_ERROR(hvd_refuse(NULL, "r", 0, NULL, "why"));
  EXPECT_ERROR(hvd_refuse("allreducex", "r", 0, NULL, "why"));
  EXPECT_ERROR(hvd_refuse("barrier", "r", 0, NULL, "why"));
  EXPECT_ERROR(hvd_refuse("allreduce", "r", 0, NULL, NULL));
  EXPECT_ERROR(hvd_refuse("allreduce", "r", 0, NULL, ""));
  EXPECT_ERROR(hvd_refuse("allreduce", g_big_name, 0, NULL, "why"));
  hvd_op_options_t refuse_opts;
  if (hvd_op_options_init(&refuse_opts) == HVD_SUCCESS) {
    refuse_opts.process_set_id = 4242;
    EXPECT_ERROR(hvd_refuse("grouped_allreduce", "r", 3, &refuse_opts, "why"));
    refuse_opts.struct_size = 1;
    EXPECT_ERROR(hvd_refuse("allreduce", "r", 0, &refuse_opts, "why"));
  }
  EXPECT_MINUS_ONE(hvd_reducescatter_rows(-1, 0, 2));
  EXPECT_MINUS_ONE(hvd_reducescatter_rows(4, -1, 2));
  EXPECT_MINUS_ONE(hvd_reducescatter_rows(4, 2, 2));
  EXPECT_MINUS_ONE(hvd_reducescatter_rows(4, 0, 0));
  EXPECT_MINUS_ONE(hvd_reducescatter_rows(4, 0, INT_MIN));
  /* Statuses outside the enum have a fixed text, never NULL. */
  const int bad_status[] = {-1, 13, 1000, INT_MAX, INT_MIN};
  for (size_t i = 0; i < 5; ++i) {
    ++g_cases;
    const char* s = hvd_status_string((hvd_status_t)bad_status[i]);
    if (!s || strcmp(s, "unknown status") != 0)
      failure(__LINE__, "hvd_status_string(bad)", s ? s : "NULL");
  }
  hvd_free(NULL);
}

/* Functions that have no bad arguments: callable in every state without crashing. */
static void queries(void) {
  (void)hvd_is_initialized();
  (void)hvd_rank();
  (void)hvd_size();
  (void)hvd_local_rank();
  (void)hvd_local_size();
  (void)hvd_cross_rank();
  (void)hvd_cross_size();
  (void)hvd_is_homogeneous();
  (void)hvd_gpu_device();
  (void)hvd_version();
  (void)hvd_mpi_built();
  (void)hvd_cuda_built();
  (void)hvd_nccl_built();
  (void)hvd_hwloc_built();
  g_cases += 2;
  if (!hvd_version_string() || !hvd_mpi_library_version()) failure(__LINE__, "version", "NULL");
  if (!hvd_last_error()) failure(__LINE__, "hvd_last_error", "NULL");
}

/* The last error begins with text: a blocking call names itself, not the _async
   form it is made through. */
static void expect_named(const char* text, int line) {
  if (strncmp(hvd_last_error(), text, strlen(text)) != 0)
    failure(line, text, hvd_last_error());
}

static void not_initialized(void) {
  /* Valid calls that need the runtime. */
  EXPECT_MINUS_ONE(hvd_rank());
  EXPECT_MINUS_ONE(hvd_size());
  EXPECT_MINUS_ONE(hvd_local_rank());
  EXPECT_MINUS_ONE(hvd_cross_size());
  EXPECT_MINUS_ONE(hvd_is_homogeneous());
  EXPECT_MINUS_ONE(hvd_process_set_size(0));
  EXPECT_ERROR(hvd_allreduce(g_buf, g_buf, 4, HVD_FLOAT32, HVD_OP_SUM, "not.init"));
  expect_named("hvd_allreduce called before hvd_init", __LINE__);
  EXPECT_ERROR(hvd_broadcast(g_buf, 4, HVD_FLOAT32, 0, "not.init"));
  expect_named("hvd_broadcast called before hvd_init", __LINE__);
  const int64_t shape[1] = {4};
  void* out = NULL;
  int64_t rows = 0;
  EXPECT_ERROR(hvd_allgather(g_buf, 1, shape, HVD_FLOAT32, &out, &rows, NULL, "not.init", NULL));
  expect_named("hvd_allgather called before hvd_init", __LINE__);
  EXPECT_ERROR(hvd_barrier(0));
  EXPECT_ERROR(hvd_join(HVD_DEVICE_CPU, NULL));
  EXPECT_ERROR(hvd_stop_timeline());
  hvd_counters_t c = {sizeof c};
  EXPECT_ERROR(hvd_get_counters(&c));
}

/* Bad arguments to the initializers; they must not initialize the library. Once it
   is initialized they are idempotent (documented): success is then noted. */
static void bad_init(int initialized) {
  void (*check)(int, const char*, hvd_status_t) = initialized ? check_error_or_note : check_error;
#define EXPECT_INIT_ERROR(call) check(__LINE__, #call, (trace(__LINE__), (call)))
  const int r0[1] = {0}, r99[1] = {99}, dup[2] = {0, 0};
  const int* sets1[1] = {r0};
  const int* sets99[1] = {r99};
  const int* setsdup[1] = {dup};
  const int* null_set[1] = {NULL};
  const int one = 1, two = 2, minus = -1;
  EXPECT_INIT_ERROR(hvd_init_with_process_sets(-1, sets1, &one));
  EXPECT_INIT_ERROR(hvd_init_with_process_sets(1, NULL, &one));
  EXPECT_INIT_ERROR(hvd_init_with_process_sets(1, sets1, NULL));
  EXPECT_INIT_ERROR(hvd_init_with_process_sets(1, null_set, &one));
  EXPECT_INIT_ERROR(hvd_init_with_process_sets(1, sets1, &minus));
  EXPECT_INIT_ERROR(hvd_init_with_process_sets(1, sets99, &one));
  EXPECT_INIT_ERROR(hvd_init_with_process_sets(1, setsdup, &two));
  EXPECT_INIT_ERROR(hvd_init_with_process_sets(INT_MAX, NULL, NULL));
  EXPECT_INIT_ERROR(hvd_init_comm(MPI_COMM_NULL));
  /* Invalid Fortran handles: MPI reports them (with the fix in runtime_init) as an
     error instead of aborting the process. */
  EXPECT_INIT_ERROR(hvd_init_comm_f(-1));
  EXPECT_INIT_ERROR(hvd_init_comm_f(INT_MAX));
#undef EXPECT_INIT_ERROR
}

static void a_handle_waited_twice(void) {
  hvd_handle_t h;
  float v[4] = {1, 2, 3, 4};
  EXPECT_OK(hvd_allreduce_async(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "twice", NULL, &h));
  EXPECT_OK(hvd_wait(h));
  EXPECT_ERROR(hvd_wait(h));
  int done = 0;
  EXPECT_ERROR(hvd_poll(h, &done));
  /* Duplicate name in flight: the second is refused, the first completes. Each rank
     first submits a name of its own, which no peer submits before the barrier (a
     negotiated one: this thread may not call MPI beside the background thread), so
     it is certainly still in flight when the same name comes again; after the
     barrier every rank submits every other rank's name, and all complete. */
  int32_t sync = 1;
  const int n = hvd_size(), me = hvd_rank();
  hvd_handle_t* handles = calloc((size_t)n, sizeof *handles);
  float* data = calloc((size_t)n * 4, sizeof *data);
  char name[32];
  snprintf(name, sizeof name, "dup.name.%d", me);
  EXPECT_OK(hvd_allreduce_async(data + 4 * me, data + 4 * me, 4, HVD_FLOAT32, HVD_OP_SUM, name,
                                NULL, &handles[me]));
  hvd_handle_t refused = 0;
  float w[4] = {1, 1, 1, 1};
  trace(__LINE__);
  hvd_status_t st = hvd_allreduce_async(w, w, 4, HVD_FLOAT32, HVD_OP_SUM, name, NULL, &refused);
  if (n > 1) {
    check_error(__LINE__, "the same name again while in flight", st);
  } else if (st == HVD_SUCCESS) {
    /* Alone, the first may have completed already: the name was free again. */
    EXPECT_OK(hvd_wait(refused));
  }
  EXPECT_OK(hvd_barrier(0));
  for (int q = 0; q < n; ++q) {
    if (q == me) continue;
    snprintf(name, sizeof name, "dup.name.%d", q);
    EXPECT_OK(hvd_allreduce_async(data + 4 * q, data + 4 * q, 4, HVD_FLOAT32, HVD_OP_SUM, name,
                                  NULL, &handles[q]));
  }
  for (int q = 0; q < n; ++q) EXPECT_OK(hvd_wait(handles[q]));
  free(handles);
  free(data);
  EXPECT_OK(hvd_allreduce(&sync, &sync, 1, HVD_INT32, HVD_OP_SUM, "dup.sync"));
}

/* A name that is not UTF-8: refused with a message, or carried as bytes and then the
   collective must work. Every rank uses the same bytes. */
static void not_utf8_name(void) {
  float v[4] = {1, 2, 3, 4};
  hvd_status_t st = hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, kNotUtf8);
  ++g_cases;
  if (st != HVD_SUCCESS) {
    check_error(__LINE__, "non-UTF-8 name", st);
    printf("[%s] a non-UTF-8 name is refused: %s\n", g_phase, hvd_last_error());
  } else {
    for (int i = 0; i < 4; ++i)
      if (v[i] != (float)((i + 1) * hvd_size())) failure(__LINE__, "non-UTF-8 name", "wrong sum");
    printf("[%s] a non-UTF-8 name is accepted as bytes\n", g_phase);
  }
}

static void phase(const char* name, void (*extra)(void)) {
  g_phase = name;
  const int before = g_cases;
  collectives();
  handles();
  sync_and_sets();
  misc();
  queries();
  if (extra) extra();
  printf("[%s] %d calls checked\n", name, g_cases - before);
}

static void initialized_extra(void) {
  bad_init(1);
  a_handle_waited_twice();
  not_utf8_name();
}

static void uninitialized_extra(void) {
  not_initialized();
  bad_init(0);
  ++g_cases;
  if (hvd_is_initialized()) failure(__LINE__, "bad init", "the library became initialized");
}

int main(void) {
  g_trace = getenv("BAD_INPUT_TRACE") != NULL;
  g_big_name = malloc(kBigName + 1);
  if (!g_big_name) return 2;
  memset(g_big_name, 'n', kBigName);
  g_big_name[kBigName] = '\0';

  phase("before init", uninitialized_extra);

  if (hvd_init() != HVD_SUCCESS) {
    fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  phase("after init", initialized_extra);

  /* The runtime still works. */
  float v[1000];
  for (int i = 0; i < 1000; ++i) v[i] = (float)(i + hvd_rank());
  EXPECT_OK(hvd_allreduce(v, v, 1000, HVD_FLOAT32, HVD_OP_SUM, "still.works"));
  const int n = hvd_size();
  for (int i = 0; i < 1000; ++i)
    if (v[i] != (float)(n * i + n * (n - 1) / 2)) {
      failure(__LINE__, "allreduce after the matrix", "wrong result");
      break;
    }
  EXPECT_OK(hvd_shutdown());

  phase("after shutdown", uninitialized_extra);

  /* And once more after a fresh init. */
  EXPECT_OK(hvd_init());
  int32_t x = 1;
  EXPECT_OK(hvd_allreduce(&x, &x, 1, HVD_INT32, HVD_OP_SUM, "after.reinit"));
  ++g_cases;
  if (x != hvd_size()) failure(__LINE__, "allreduce after re-init", "wrong result");
  EXPECT_OK(hvd_shutdown());

  free(g_big_name);
  printf("%d calls checked, %d failures\n", g_cases, g_failures);
  return g_failures ? 1 : 0;
}
