/* Allreduce on host memory across real MPI ranks: every op x dtype, in place and out
 * of place, scaling, orders, threads, many tensors, tensors beyond the fusion
 * threshold, and the response cache across steps. */
#include <pthread.h>

#include "test_util.h"

/* Input of element i on rank r: small integers whose sums, products, minima and
 * maxima are exact in every dtype (float16 and bfloat16 included). */
static double input_value(hvd_reduce_op_t op, hvd_dtype_t d, int64_t i, int r) {
  if (d == HVD_BOOL) return (double)((i + r) % 2);
  if (op == HVD_OP_PRODUCT) return 1.0 + (double)((i + r) % 2);
  return (double)(i % 7 + r + 1);
}

static double expected_value(hvd_reduce_op_t op, hvd_dtype_t d, int64_t i, int size) {
  double acc = input_value(op, d, i, 0);
  for (int r = 1; r < size; ++r) {
    double v = input_value(op, d, i, r);
    switch (op) {
      case HVD_OP_SUM: case HVD_OP_AVERAGE: acc += v; break;
      case HVD_OP_MIN: acc = fmin(acc, v); break;
      case HVD_OP_MAX: acc = fmax(acc, v); break;
      case HVD_OP_PRODUCT: acc *= v; break;
      default: break;
    }
  }
  if (d == HVD_BOOL) {
    int any = 0, all = 1;
    for (int r = 0; r < size; ++r) {
      int v = input_value(op, d, i, r) != 0;
      any |= v;
      all &= v;
    }
    return (op == HVD_OP_MIN || op == HVD_OP_PRODUCT) ? all : any;
  }
  if (op == HVD_OP_AVERAGE) acc = tu_is_float(d) ? acc / size : floor(acc / size);
  return acc;
}

typedef struct {
  void* send;
  void* recv;
  int64_t count;
  hvd_dtype_t dtype;
  hvd_reduce_op_t op;
  hvd_handle_t handle;
} Case;

static void check_case(const Case* c, int size, const char* label) {
  for (int64_t i = 0; i < c->count; ++i) {
    double got = tu_get(c->recv, c->dtype, i);
    double want = expected_value(c->op, c->dtype, i, size);
    if (!tu_close(got, want, c->dtype))
      fail_msg("%s: dtype %d op %d count %lld element %lld: got %g, want %g", label,
               (int)c->dtype, (int)c->op, (long long)c->count, (long long)i, got, want);
  }
}

static void every_op_and_dtype(void** state) {
  (void)state;
  const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX,
                                 HVD_OP_PRODUCT};
  const int64_t counts[] = {0, 1, 17, 1000};
  const int rank = hvd_rank(), size = hvd_size();
  Case cases[5 * NUM_DTYPES * 2 * 4];
  int n = 0;
  for (int o = 0; o < 5; ++o)
    for (int t = 0; t < NUM_DTYPES; ++t)
      for (int inplace = 0; inplace < 2; ++inplace)
        for (int k = 0; k < 4; ++k) {
          if (kAllDtypes[t] == HVD_BOOL && ops[o] == HVD_OP_AVERAGE) continue;
          Case* c = &cases[n++];
          c->dtype = kAllDtypes[t];
          c->op = ops[o];
          c->count = counts[k];
          size_t bytes = (size_t)c->count * tu_dtype_size(c->dtype);
          c->send = tu_alloc(bytes);
          c->recv = inplace ? c->send : tu_alloc(bytes);
          for (int64_t i = 0; i < c->count; ++i)
            tu_set(c->send, c->dtype, i, input_value(c->op, c->dtype, i, rank));
          char name[96];
          snprintf(name, sizeof name, "ar.op%d.dt%d.ip%d.n%lld", (int)c->op, (int)c->dtype,
                   inplace, (long long)c->count);
          assert_hvd_ok(hvd_allreduce_async(c->send, c->recv, c->count, c->dtype, c->op, name,
                                            NULL, &c->handle));
        }
  for (int i = 0; i < n; ++i) {
    assert_hvd_ok(hvd_wait(cases[i].handle));
    check_case(&cases[i], size, "every_op_and_dtype");
    if (cases[i].recv != cases[i].send) free(cases[i].recv);
    free(cases[i].send);
  }
}

/* MIN and MAX of the unsigned types compare as unsigned: values above the signed
 * range (MPICH 4.0's MPI_MAX of MPI_UINT8_T gave max(100, 150) = 100), fused with
 * others and alone beyond the fusion threshold. */
static void unsigned_min_max_above_signed_range(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  const hvd_dtype_t dtypes[] = {HVD_UINT8, HVD_UINT16};
  const double tops[] = {255, 65535};
  const int64_t counts[] = {5, 600000}; /* 600000 bytes and more: alone */
  for (int t = 0; t < 2; ++t)
    for (int o = 0; o < 2; ++o)
      for (int k = 0; k < 2; ++k) {
        const hvd_dtype_t d = dtypes[t];
        const hvd_reduce_op_t op = o ? HVD_OP_MAX : HVD_OP_MIN;
        const int64_t count = counts[k];
        void* buf = tu_alloc((size_t)count * tu_dtype_size(d));
        /* element i of rank r: spread over the whole range, the highest rank's the
         * largest for even i and the smallest for odd i */
        for (int64_t i = 0; i < count; ++i) {
          const double step = (tops[t] - 100) / size;
          const double v = 100 + step * (i % 2 ? size - 1 - rank : rank);
          tu_set(buf, d, i, floor(v));
        }
        char name[64];
        snprintf(name, sizeof name, "unsigned.%d.%d.%d", t, o, k);
        assert_hvd_ok(hvd_allreduce(buf, buf, count, d, op, name));
        const double step = (tops[t] - 100) / size;
        const double low = 100, high = floor(100 + step * (size - 1));
        for (int64_t i = 0; i < count; i += 997) {
          const double want = op == HVD_OP_MAX ? high : low;
          if (tu_get(buf, d, i) != want)
            fail_msg("%s element %lld: got %g want %g", name, (long long)i, tu_get(buf, d, i),
                     want);
        }
        free(buf);
      }
}

/* An average is the sum divided by the ranks, rounded once (as torch's t / n): on 3
 * ranks a third of integer sums differ in the last bit from sum * float(1 / 3). Bit
 * for bit, float32 and float64, through each way a tensor goes: fused with others,
 * alone beyond the fusion threshold, and a lone repeat (completed with its negotiation
 * round). */
static float averaged_input(int64_t i, int r) { return (float)((i * 7 + r * r * (i % 11 + 1)) % 1000); }

static void check_average(const void* got, hvd_dtype_t dtype, int64_t count, const char* what) {
  const int size = hvd_size();
  for (int64_t i = 0; i < count; ++i) {
    double sum = 0; /* integers: exact in either type */
    for (int r = 0; r < size; ++r) sum += averaged_input(i, r);
    const double want = dtype == HVD_FLOAT32 ? (double)((float)sum / (float)size) : sum / size;
    const double have = tu_get(got, dtype, i); /* exact: a float32 widens without rounding */
    if (have != want)
      fail_msg("%s: dtype %d element %lld: got %a, expected %a", what, (int)dtype, (long long)i, have, want);
  }
}

static void fill_average_input(void* x, hvd_dtype_t dtype, int64_t count) {
  for (int64_t i = 0; i < count; ++i) tu_set(x, dtype, i, averaged_input(i, hvd_rank()));
}

static void averages_round_once(void** state) {
  (void)state;
  const hvd_dtype_t dtypes[2] = {HVD_FLOAT32, HVD_FLOAT64};
  for (int t = 0; t < 2; ++t) {
    const hvd_dtype_t d = dtypes[t];
    const size_t elem = tu_dtype_size(d);
    enum { kFused = 4, kSmall = 1000, kLone = 16 };
    const int64_t large = (4 << 20) / (int64_t)elem; /* 4 MB: beyond the suite's 1 MB threshold */
    void* small[kFused];
    hvd_handle_t handles[kFused + 1];
    for (int k = 0; k < kFused; ++k) {
      small[k] = tu_alloc((size_t)kSmall * elem);
      fill_average_input(small[k], d, kSmall);
      char name[48];
      snprintf(name, sizeof name, "avg.fused.%d.%d", t, k);
      assert_hvd_ok(hvd_allreduce_async(small[k], small[k], kSmall, d, HVD_OP_AVERAGE, name, NULL, &handles[k]));
    }
    void* big = tu_alloc((size_t)large * elem);
    fill_average_input(big, d, large);
    char name[48];
    snprintf(name, sizeof name, "avg.large.%d", t);
    assert_hvd_ok(hvd_allreduce_async(big, big, large, d, HVD_OP_AVERAGE, name, NULL, &handles[kFused]));
    for (int k = 0; k <= kFused; ++k) assert_hvd_ok(hvd_wait(handles[k]));
    for (int k = 0; k < kFused; ++k) {
      check_average(small[k], d, kSmall, "fused");
      free(small[k]);
    }
    check_average(big, d, large, "alone");
    free(big);
    void* lone = tu_alloc((size_t)kLone * elem);
    snprintf(name, sizeof name, "avg.lone.%d", t);
    for (int rep = 0; rep < 5; ++rep) {
      fill_average_input(lone, d, kLone);
      assert_hvd_ok(hvd_allreduce(lone, lone, kLone, d, HVD_OP_AVERAGE, name));
      check_average(lone, d, kLone, "lone repeat");
    }
    free(lone);
  }
}

static void blocking_unnamed_calls(void** state) {
  (void)state;
  const int size = hvd_size();
  for (int step = 0; step < 5; ++step) {
    int64_t v[3] = {1, 2, 3};
    assert_hvd_ok(hvd_allreduce(v, v, 3, HVD_INT64, HVD_OP_SUM, NULL));
    for (int i = 0; i < 3; ++i) assert_int_equal(v[i], (i + 1) * size);
  }
}

/* Big tensors go without fusion copies: scaling must be applied in place. They are
 * just above HVD_INPLACE_MIN_BYTES (an odd count, so the last piece is short): a scaled
 * tensor is staged in pieces (HVD_FUSION_PIECE_BYTES, 4 KiB in the pieces runs), each
 * an MPI call, so a bigger one adds calls, not paths. Scaled tensors above the fusion
 * threshold are test_fuse_large.c's. */
static void prescale_and_postscale(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  const hvd_dtype_t dtypes[] = {HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16, HVD_INT32};
  const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE};
  char text[32];
  assert_hvd_ok(hvd_param_get("HVD_INPLACE_MIN_BYTES", text, sizeof text));
  const int64_t inplace_min = atoll(text);
  for (int t = 0; t < 5; ++t)
    for (int o = 0; o < 2; ++o)
      for (int big = 0; big < 2; ++big) {
        hvd_dtype_t d = dtypes[t];
        const int64_t esize = (int64_t)tu_dtype_size(d);
        const int64_t count = big ? ((inplace_min + esize - 1) / esize) | 1 : 33;
        void* buf = tu_alloc((size_t)count * tu_dtype_size(d));
        for (int64_t i = 0; i < count; ++i) tu_set(buf, d, i, (double)(i % 5 + rank));
        hvd_op_options_t opts;
        assert_hvd_ok(hvd_op_options_init(&opts));
        opts.prescale_factor = 2.0;
        opts.postscale_factor = 3.0;
        char name[64];
        snprintf(name, sizeof name, "scaled.%d.%d.%d", t, o, big);
        hvd_handle_t h;
        assert_hvd_ok(hvd_allreduce_async(buf, buf, count, d, ops[o], name, &opts, &h));
        assert_hvd_ok(hvd_wait(h));
        for (int64_t i = 0; i < count; i += 97) {
          double sum = 0;
          for (int r = 0; r < size; ++r) sum += 2.0 * (double)(i % 5 + r);
          double want = ops[o] == HVD_OP_AVERAGE
                            ? (tu_is_float(d) ? sum / size * 3.0 : floor(sum / size) * 3.0)
                            : sum * 3.0;
          double got = tu_get(buf, d, i);
          if (!tu_close(got, want, d))
            fail_msg("%s element %lld: got %g want %g", name, (long long)i, got, want);
        }
        free(buf);
      }
}

static void ranks_enqueue_in_different_orders(void** state) {
  (void)state;
  enum { N = 60 };
  const int rank = hvd_rank(), size = hvd_size();
  float data[N][8];
  hvd_handle_t handles[N];
  for (int k = 0; k < N; ++k) {
    int t = (k + rank * 17) % N; /* each rank starts elsewhere */
    if (rank % 2) t = N - 1 - t; /* and odd ranks go backwards */
    for (int i = 0; i < 8; ++i) data[t][i] = (float)(t + rank);
    char name[32];
    snprintf(name, sizeof name, "order.%d", t);
    assert_hvd_ok(hvd_allreduce_async(data[t], data[t], 8, HVD_FLOAT32, HVD_OP_SUM, name, NULL,
                                      &handles[t]));
  }
  for (int t = 0; t < N; ++t) {
    assert_hvd_ok(hvd_wait(handles[t]));
    float want = (float)(t * size + size * (size - 1) / 2);
    for (int i = 0; i < 8; ++i) assert_float_equal(data[t][i], want, 0);
  }
}

typedef struct {
  int thread;
  int failures;
  char message[256];
} ThreadArgs;

static void* thread_body(void* arg) {
  ThreadArgs* a = arg;
  const int rank = hvd_rank(), size = hvd_size();
  for (int i = 0; i < 50; ++i) {
    double v[5];
    for (int k = 0; k < 5; ++k) v[k] = rank + a->thread + i + k;
    char name[48];
    snprintf(name, sizeof name, "thread%d.%d", a->thread, i);
    hvd_status_t st = hvd_allreduce(v, v, 5, HVD_FLOAT64, HVD_OP_SUM, name);
    if (st != HVD_SUCCESS) {
      a->failures++;
      snprintf(a->message, sizeof a->message, "%s: %s", name, hvd_last_error());
      continue;
    }
    for (int k = 0; k < 5; ++k) {
      double want = size * (a->thread + i + k) + size * (size - 1) / 2.0;
      if (v[k] != want) {
        a->failures++;
        snprintf(a->message, sizeof a->message, "%s[%d]: got %g want %g", name, k, v[k], want);
      }
    }
  }
  return NULL;
}

static void four_threads_at_once(void** state) {
  (void)state;
  pthread_t threads[4];
  ThreadArgs args[4];
  for (int t = 0; t < 4; ++t) {
    args[t] = (ThreadArgs){t, 0, ""};
    assert_int_equal(pthread_create(&threads[t], NULL, thread_body, &args[t]), 0);
  }
  for (int t = 0; t < 4; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < 4; ++t)
    if (args[t].failures) fail_msg("thread %d: %d failures, last: %s", t, args[t].failures, args[t].message);
}

static void two_thousand_small_tensors(void** state) {
  (void)state;
  enum { N = 2000 };
  const int rank = hvd_rank(), size = hvd_size();
  int32_t* data = tu_alloc(sizeof(int32_t) * N * 4);
  hvd_handle_t* handles = tu_alloc(sizeof(hvd_handle_t) * N);
  for (int step = 0; step < 2; ++step) { /* the second step runs from the response cache */
    for (int t = N - 1; t >= 0; --t) {
      for (int k = 0; k < 4; ++k) data[t * 4 + k] = t + k + rank + step;
      char name[32];
      snprintf(name, sizeof name, "small.%d", t);
      assert_hvd_ok(hvd_allreduce_async(&data[t * 4], &data[t * 4], 4, HVD_INT32, HVD_OP_SUM,
                                        name, NULL, &handles[t]));
    }
    for (int t = 0; t < N; ++t) assert_hvd_ok(hvd_wait(handles[t]));
    for (int t = 0; t < N; ++t)
      for (int k = 0; k < 4; ++k)
        assert_int_equal(data[t * 4 + k], size * (t + k + step) + size * (size - 1) / 2);
  }
  free(handles);
  free(data);
}

/* Half as large again as HOROVOD_FUSION_THRESHOLD (1 MiB in the suite): above it, and
 * more than one MPI call under MPICH's default HVD_ALLREDUCE_CHUNK_BYTES (1 MiB) or the
 * chunks runs' 64 KiB. */
static void tensor_larger_than_fusion_threshold(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  char text[32];
  assert_hvd_ok(hvd_param_get("HOROVOD_FUSION_THRESHOLD", text, sizeof text));
  const int64_t big = atoll(text) / (int64_t)sizeof(float) * 3 / 2 + 1;
  float* a = tu_alloc(sizeof(float) * big);
  float* b = tu_alloc(sizeof(float) * big);
  float small[100][64];
  hvd_handle_t hs[100], ha, hb;
  for (int64_t i = 0; i < big; ++i) a[i] = (float)(i % 1000 + rank);
  assert_hvd_ok(hvd_allreduce_async(a, b, big, HVD_FLOAT32, HVD_OP_SUM, "big.out", NULL, &hb));
  assert_hvd_ok(hvd_allreduce_async(a, a, big, HVD_FLOAT32, HVD_OP_AVERAGE, "big.in", NULL, &ha));
  for (int t = 0; t < 100; ++t) {
    for (int k = 0; k < 64; ++k) small[t][k] = (float)(rank * 2);
    char name[32];
    snprintf(name, sizeof name, "beside.big.%d", t);
    assert_hvd_ok(hvd_allreduce_async(small[t], small[t], 64, HVD_FLOAT32, HVD_OP_SUM, name, NULL, &hs[t]));
  }
  assert_hvd_ok(hvd_wait(hb));
  assert_hvd_ok(hvd_wait(ha));
  for (int t = 0; t < 100; ++t) assert_hvd_ok(hvd_wait(hs[t]));
  for (int64_t i = 0; i < big; i += 4099) {
    double sum = size * (double)(i % 1000) + size * (size - 1) / 2.0;
    assert_float_equal(b[i], sum, 1e-3);
    assert_float_equal(a[i], sum / size, 1e-3);
  }
  for (int t = 0; t < 100; ++t) assert_float_equal(small[t][0], size * (size - 1), 0);
  free(a);
  free(b);
}

/* A name reused with another count on every rank is a new tensor, not a mismatch:
 * the cache entry is replaced. */
static void cached_name_with_new_shape(void** state) {
  (void)state;
  const int size = hvd_size();
  for (int step = 0; step < 6; ++step) {
    int64_t count = 4 + step % 3;
    float v[8];
    for (int i = 0; i < 8; ++i) v[i] = 1.0f;
    assert_hvd_ok(hvd_allreduce(v, v, count, HVD_FLOAT32, HVD_OP_SUM, "reshaped"));
    for (int i = 0; i < count; ++i) assert_float_equal(v[i], size, 0);
    for (int i = (int)count; i < 8; ++i) assert_float_equal(v[i], 1.0f, 0);
  }
}

static void grouped_allreduce(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  float a[10], b[1000], c[3];
  for (int i = 0; i < 10; ++i) a[i] = (float)rank;
  for (int i = 0; i < 1000; ++i) b[i] = 1.0f;
  for (int i = 0; i < 3; ++i) c[i] = 2.0f;
  const void* sends[3] = {a, b, c};
  void* recvs[3] = {a, b, c};
  const int64_t counts[3] = {10, 1000, 3};
  assert_hvd_ok(hvd_grouped_allreduce(3, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "group", NULL));
  assert_float_equal(a[9], size * (size - 1) / 2.0, 0);
  assert_float_equal(b[999], size, 0);
  assert_float_equal(c[2], 2.0 * size, 0);
}

/* A group of empty tensors is one fused batch of zero bytes: it completes on every
 * path (the fused ring included, which once divided by its zero count) and touches
 * nothing, and a group mixing empty and full members reduces the full ones. */
static void grouped_allreduce_of_empty_tensors(void** state) {
  (void)state;
  const int size = hvd_size();
  float untouched[2] = {7.0f, 7.0f}, full[5];
  for (int i = 0; i < 5; ++i) full[i] = 1.0f;
  const void* sends[4] = {untouched, untouched + 1, untouched, untouched + 1};
  void* recvs[4] = {untouched, untouched + 1, untouched, untouched + 1};
  const int64_t none[4] = {0, 0, 0, 0};
  assert_hvd_ok(hvd_grouped_allreduce(4, sends, recvs, none, HVD_FLOAT32, HVD_OP_AVERAGE,
                                      "group.empty", NULL));
  assert_float_equal(untouched[0], 7.0f, 0);
  assert_float_equal(untouched[1], 7.0f, 0);
  const void* mixed_sends[3] = {untouched, full, untouched + 1};
  void* mixed_recvs[3] = {untouched, full, untouched + 1};
  const int64_t mixed[3] = {0, 5, 0};
  assert_hvd_ok(hvd_grouped_allreduce(3, mixed_sends, mixed_recvs, mixed, HVD_FLOAT32, HVD_OP_SUM,
                                      "group.mixed", NULL));
  for (int i = 0; i < 5; ++i) assert_float_equal(full[i], (float)size, 0);
  assert_float_equal(untouched[0], 7.0f, 0);
}

/* A group is one fused unit: members above the in-place size (HVD_INPLACE_MIN_BYTES)
 * and small ones go in one collective, with AVERAGE and scaling applied per member;
 * twice, the second time from the response cache. */
static void grouped_allreduce_is_one_collective(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  char text[32];
  assert_hvd_ok(hvd_param_get("HVD_INPLACE_MIN_BYTES", text, sizeof text));
  const int C = (int)(atoll(text) / (int64_t)sizeof(float)) + 7, A = C + C / 2, B = 7;
  float* a = tu_alloc(sizeof(float) * A);
  float* b = tu_alloc(sizeof(float) * B);
  float* c = tu_alloc(sizeof(float) * C);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < A; ++i) a[i] = (float)(rank + i % 5);
    for (int i = 0; i < B; ++i) b[i] = 2.0f * (float)rank;
    for (int i = 0; i < C; ++i) c[i] = 1.0f;
    const void* sends[3] = {a, b, c};
    void* recvs[3] = {a, b, c};
    const int64_t counts[3] = {A, B, C};
    hvd_op_options_t opts;
    hvd_op_options_init(&opts);
    opts.postscale_factor = 2.0;
    const uint64_t before = tu_collectives();
    assert_hvd_ok(hvd_grouped_allreduce(3, sends, recvs, counts, HVD_FLOAT32, HVD_OP_AVERAGE,
                                        "group.unit", &opts));
    assert_int_equal(tu_collectives() - before, 1);
    const double mean_rank = (size - 1) / 2.0;
    for (int i = 0; i < A; i += 997) assert_float_equal(a[i], 2.0 * (mean_rank + i % 5), 1e-4);
    assert_float_equal(a[A - 1], 2.0 * (mean_rank + (A - 1) % 5), 1e-4);
    for (int i = 0; i < B; ++i) assert_float_equal(b[i], 4.0 * mean_rank, 1e-4);
    assert_float_equal(c[0], 2.0f, 0);
    assert_float_equal(c[C - 1], 2.0f, 0);
  }
  free(a);
  free(b);
  free(c);
}

/* hvd_stream_wait on a host operation: waits for completion, keeps the handle. */
static void stream_wait_on_host_operation(void** state) {
  (void)state;
  const int size = hvd_size();
  float v[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  hvd_handle_t h;
  assert_hvd_ok(hvd_allreduce_async(v, v, 8, HVD_FLOAT32, HVD_OP_SUM, "stream.wait", NULL, &h));
  assert_hvd_ok(hvd_stream_wait(h, NULL));
  assert_true(v[7] == (float)size);
  int done = 0;
  assert_hvd_ok(hvd_poll(h, &done));
  assert_int_equal(done, 1);
  assert_hvd_ok(hvd_wait(h));
  assert_hvd_status(hvd_stream_wait(h, NULL), HVD_ERR_INVALID_ARGUMENT);
}

/* A process set of one rank (the global set at one rank, a set of one otherwise): the
 * reduction is the identity, so each tensor is only copied where it is not in place and
 * scaled (prescale, then postscale, as with peers); one collective, no bytes sent. */
static void a_set_of_one_copies_and_scales(void** state) {
  (void)state;
  const int size = hvd_size(), rank = hvd_rank();
  enum { kMaxSets = 8, N = 1000 };
  int32_t ids[kMaxSets];
  const int sets = size > 1 && size <= kMaxSets ? size : 0;
  if (size > kMaxSets) skip();
  for (int q = 0; q < sets; ++q) assert_hvd_ok(hvd_add_process_set(&q, 1, &ids[q]));
  const int32_t mine = sets ? ids[rank] : 0;
  static float in_place[N], src[N], out[N];
  static int32_t ints[N], ints_out[N];
  for (int i = 0; i < N; ++i) {
    in_place[i] = src[i] = (float)(i % 7 + rank);
    out[i] = -1;
    ints[i] = i % 9 - 4;
    ints_out[i] = 99;
  }
  hvd_op_options_t o;
  hvd_op_options_init(&o);
  o.process_set_id = mine;
  o.prescale_factor = 0.5;
  o.postscale_factor = 3.0;
  const hvd_counters_t before = tu_counters();
  const void* sends[2] = {in_place, src};
  void* recvs[2] = {in_place, out};
  const int64_t counts[2] = {N, N};
  assert_hvd_ok(hvd_grouped_allreduce(2, sends, recvs, counts, HVD_FLOAT32, HVD_OP_AVERAGE,
                                      "alone.group", &o));
  const hvd_counters_t after = tu_counters();
  assert_int_equal(after.collectives - before.collectives, 1);
  assert_int_equal(after.global_bytes, before.global_bytes);
  for (int i = 0; i < N; ++i) {
    const float want = (float)(i % 7 + rank) * 1.5f;  /* exact */
    if (in_place[i] != want || out[i] != want || src[i] != (float)(i % 7 + rank))
      fail_msg("element %d: in place %g, out %g, src %g; expected %g", i, in_place[i], out[i],
               src[i], want);
  }
  hvd_op_options_init(&o);
  o.process_set_id = mine;
  hvd_handle_t h;
  assert_hvd_ok(hvd_allreduce_async(ints, ints_out, N, HVD_INT32, HVD_OP_SUM, "alone.ints", &o, &h));
  assert_hvd_ok(hvd_wait(h));
  assert_memory_equal(ints_out, ints, sizeof ints);
  for (int q = 0; q < sets; ++q) assert_hvd_ok(hvd_remove_process_set(ids[q]));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_op_and_dtype),
      cmocka_unit_test(unsigned_min_max_above_signed_range),
      cmocka_unit_test(averages_round_once),
      cmocka_unit_test(blocking_unnamed_calls),
      cmocka_unit_test(prescale_and_postscale),
      cmocka_unit_test(ranks_enqueue_in_different_orders),
      cmocka_unit_test(four_threads_at_once),
      cmocka_unit_test(two_thousand_small_tensors),
      cmocka_unit_test(tensor_larger_than_fusion_threshold),
      cmocka_unit_test(cached_name_with_new_shape),
      cmocka_unit_test(grouped_allreduce),
      cmocka_unit_test(grouped_allreduce_of_empty_tensors),
      cmocka_unit_test(grouped_allreduce_is_one_collective),
      cmocka_unit_test(stream_wait_on_host_operation),
      cmocka_unit_test(a_set_of_one_copies_and_scales),
  };
  return cmocka_run_group_tests_name("allreduce", tests, tu_group_init, tu_group_shutdown);
}
