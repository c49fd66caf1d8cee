/* Calls that repeat the last allreduce under their name, as a training loop's do
 * every step. libhvd queues an exact repeat without its argument checks (it passed
 * them last time): these tests hold that path to what the checked one does. A repeat
 * that changes anything (count, element type, reduction, scales, shape, process set)
 * is reduced as asked; a repeat with a bad argument gets the same clear error as any
 * call; a name still in flight is refused; and after hvd_shutdown a repeat is refused
 * as any call is. Repeats are also recognized by their order (the name after the last
 * one is tried first): steps whose order changes, threads that push in turn and a
 * second initialization must get every result right all the same. */
#include <math.h>
#include <pthread.h>

#include "test_util.h"

static void assert_last_error_mentions(const char* a, const char* b) {
  const char* text = hvd_last_error();
  if (!strstr(text, a) || (b && !strstr(text, b)))
    fail_msg("last error '%s' should mention '%s'%s%s", text, a, b ? " and " : "", b ? b : "");
}

/* Allreduces buf (count elements of dtype, element i of rank r = r + 1 + i % 5) under
 * name and checks the result against op over the ranks, scaled by the options'
 * factors (NULL: none). */
static void reduce_and_check(const char* name, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
                             const hvd_op_options_t* opts) {
  const int size = hvd_size(), rank = hvd_rank();
  void* buf = tu_alloc((size_t)count * tu_dtype_size(dtype) + 1);
  for (int64_t i = 0; i < count; ++i) tu_set(buf, dtype, i, rank + 1 + i % 5);
  hvd_handle_t h;
  assert_hvd_ok(hvd_allreduce_async(buf, buf, count, dtype, op, name, opts, &h));
  assert_hvd_ok(hvd_wait(h));
  const double pre = opts ? opts->prescale_factor : 1, post = opts ? opts->postscale_factor : 1;
  for (int64_t i = 0; i < count; ++i) {
    double sum = 0, max = 0;
    for (int r = 0; r < size; ++r) {
      const double v = (r + 1 + i % 5) * pre;
      sum += v;
      max = r == 0 || v > max ? v : max;
    }
    const double want = (op == HVD_OP_MAX ? max : op == HVD_OP_AVERAGE ? sum / size : sum) * post;
    if (!tu_close(tu_get(buf, dtype, i), want, dtype))
      fail_msg("%s: element %lld is %g, want %g", name, (long long)i, tu_get(buf, dtype, i), want);
  }
  free(buf);
}

/* The same name, step after step, with one property changed at a time and changed
 * back: each step is reduced as that step asks, whether it repeats the last or not. */
static void repeats_follow_every_change(void** state) {
  (void)state;
  hvd_op_options_t scaled;
  assert_hvd_ok(hvd_op_options_init(&scaled));
  scaled.prescale_factor = 2;
  scaled.postscale_factor = 0.5;
  hvd_op_options_t shaped;
  assert_hvd_ok(hvd_op_options_init(&shaped));
  const int64_t dims[2] = {3, 4};
  shaped.shape = dims;
  shaped.ndim = 2;
  for (int round = 0; round < 3; ++round) {
    reduce_and_check("rep.change", 12, HVD_FLOAT32, HVD_OP_SUM, NULL);
    reduce_and_check("rep.change", 12, HVD_FLOAT32, HVD_OP_SUM, NULL); /* a repeat */
    reduce_and_check("rep.change", 20, HVD_FLOAT32, HVD_OP_SUM, NULL); /* count */
    reduce_and_check("rep.change", 20, HVD_INT32, HVD_OP_SUM, NULL);   /* element type */
    reduce_and_check("rep.change", 20, HVD_INT32, HVD_OP_MAX, NULL);   /* reduction */
    reduce_and_check("rep.change", 20, HVD_FLOAT64, HVD_OP_AVERAGE, NULL);
    reduce_and_check("rep.change", 20, HVD_FLOAT64, HVD_OP_SUM, &scaled); /* scales */
    reduce_and_check("rep.change", 20, HVD_FLOAT64, HVD_OP_SUM, &scaled);
    reduce_and_check("rep.change", 12, HVD_FLOAT32, HVD_OP_SUM, &shaped); /* shape given */
    reduce_and_check("rep.change", 12, HVD_FLOAT32, HVD_OP_SUM, &shaped);
  }
}

/* Bad buffers, a missing handle and a shape that does not fit the count, each on a
 * call that would otherwise repeat the last one exactly: refused with the checked
 * path's message, nothing queued, the name free for the next call. */
static void bad_repeats_are_refused(void** state) {
  (void)state;
  float buf[8] = {0};
  hvd_handle_t h;
  reduce_and_check("rep.bad", 8, HVD_FLOAT32, HVD_OP_SUM, NULL);
  assert_hvd_status(hvd_allreduce_async(NULL, buf, 8, HVD_FLOAT32, HVD_OP_SUM, "rep.bad", NULL, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("sendbuf", NULL);
  assert_hvd_status(hvd_allreduce_async(buf, NULL, 8, HVD_FLOAT32, HVD_OP_SUM, "rep.bad", NULL, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("recvbuf", NULL);
  assert_hvd_status(hvd_allreduce_async(buf, buf, 8, HVD_FLOAT32, HVD_OP_SUM, "rep.bad", NULL, NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("handle", NULL);
  reduce_and_check("rep.bad", 8, HVD_FLOAT32, HVD_OP_SUM, NULL); /* the name is free */

  /* The last call had shape [2, 4] and 8 elements; the same shape with another count
   * must not be taken for a repeat (libhvd would reduce 8 elements of a buffer the
   * caller sized otherwise). */
  hvd_op_options_t shaped;
  assert_hvd_ok(hvd_op_options_init(&shaped));
  const int64_t dims[2] = {2, 4};
  shaped.shape = dims;
  shaped.ndim = 2;
  reduce_and_check("rep.shape", 8, HVD_FLOAT32, HVD_OP_SUM, &shaped);
  assert_hvd_status(hvd_allreduce_async(buf, buf, 4, HVD_FLOAT32, HVD_OP_SUM, "rep.shape", &shaped, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("shape", NULL);
  reduce_and_check("rep.shape", 8, HVD_FLOAT32, HVD_OP_SUM, &shaped);
}

/* A repeat with a scale that is not a number, or a shape with a negative dimension,
 * is refused as any call with them, even right after the same name's good call. */
static void repeats_with_bad_options_are_refused(void** state) {
  (void)state;
  float buf[8] = {0};
  hvd_handle_t h;
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  reduce_and_check("rep.opts", 8, HVD_FLOAT32, HVD_OP_SUM, &opts);
  opts.prescale_factor = NAN;
  assert_hvd_status(hvd_allreduce_async(buf, buf, 8, HVD_FLOAT32, HVD_OP_SUM, "rep.opts", &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("prescale_factor", "finite");
  opts.prescale_factor = 1;
  const int64_t dims[2] = {-2, -4};
  opts.shape = dims;
  opts.ndim = 2;
  assert_hvd_status(hvd_allreduce_async(buf, buf, 8, HVD_FLOAT32, HVD_OP_SUM, "rep.opts", &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("shape", ">= 0");
  opts.ndim = 0;
  reduce_and_check("rep.opts", 8, HVD_FLOAT32, HVD_OP_SUM, &opts);
}

/* One step of n named tensors pushed in the order given, then waited for: 0 when
 * every result is exact, else -1 with why (callable from any thread). */
static int try_order_step(const char* prefix, const int* order, int n, int step, char* why,
                          size_t why_size) {
  enum { MAX = 16, COUNT = 5 };
  float data[MAX][COUNT];
  hvd_handle_t handles[MAX];
  char name[48];
  const int size = hvd_size(), rank = hvd_rank();
  for (int k = 0; k < n; ++k) {
    const int t = order[k];
    for (int i = 0; i < COUNT; ++i) data[t][i] = (float)(rank + t + step);
    snprintf(name, sizeof name, "%s.%d", prefix, t);
    if (hvd_allreduce_async(data[t], data[t], COUNT, HVD_FLOAT32, HVD_OP_SUM, name, NULL,
                            &handles[t]) != HVD_SUCCESS) {
      snprintf(why, why_size, "%s step %d: %s", name, step, hvd_last_error());
      return -1;
    }
  }
  int failed = 0;
  for (int k = 0; k < n; ++k)
    if (hvd_wait(handles[order[k]]) != HVD_SUCCESS && !failed) {
      snprintf(why, why_size, "%s step %d wait: %s", prefix, step, hvd_last_error());
      failed = 1;
    }
  if (failed) return -1;
  for (int k = 0; k < n; ++k) {
    const int t = order[k];
    const float want = (float)(size * (size - 1) / 2 + size * (t + step));
    for (int i = 0; i < COUNT; ++i)
      if (data[t][i] != want) {
        snprintf(why, why_size, "%s step %d tensor %d: %g, want %g", prefix, step, t,
                 data[t][i], want);
        return -1;
      }
  }
  return 0;
}

static void order_step(const char* prefix, const int* order, int n, int step) {
  char why[256];
  if (try_order_step(prefix, order, n, step, why, sizeof why) != 0) fail_msg("%s", why);
}

/* The order of a step changes (forward, backward, a subset, a shuffle, the first
 * again): each change misses the predicted next name, and every result is exact. */
static void steps_in_changing_orders(void** state) {
  (void)state;
  enum { N = 12 };
  int forward[N], backward[N], shuffled[N], evens[N / 2];
  for (int t = 0; t < N; ++t) {
    forward[t] = t;
    backward[t] = N - 1 - t;
    shuffled[t] = (t * 5) % N;
  }
  for (int t = 0; t < N / 2; ++t) evens[t] = 2 * t;
  for (int step = 0; step < 12; ++step) {
    switch (step % 6) {
      case 0: case 1: order_step("rep.order", forward, N, step); break;
      case 2: order_step("rep.order", backward, N, step); break;
      case 3: order_step("rep.order", evens, N / 2, step); break;
      case 4: order_step("rep.order", shuffled, N, step); break;
      default: order_step("rep.order", forward, N, step); break;
    }
  }
}

/* Two threads each repeat their own names, in turn within a step: each thread's
 * sequence is its own, and every result exact. Ranks pair the threads by name. */
struct pusher_args {
  const char* prefix;
  int reverse;
  char why[256];  /* empty: every step exact */
};

static void* pusher(void* arg) {
  struct pusher_args* a = arg;
  enum { N = 8 };
  int order[N];
  for (int t = 0; t < N; ++t) order[t] = a->reverse ? N - 1 - t : t;
  for (int step = 0; step < 20; ++step)
    if (try_order_step(a->prefix, order, N, step, a->why, sizeof a->why) != 0) break;
  return NULL;
}

static void threads_repeat_their_own_names(void** state) {
  (void)state;
  struct pusher_args args[2] = {{"rep.thread.a", 0, ""}, {"rep.thread.b", 1, ""}};
  pthread_t threads[2];
  for (int t = 0; t < 2; ++t)
    assert_int_equal(pthread_create(&threads[t], NULL, pusher, &args[t]), 0);
  for (int t = 0; t < 2; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < 2; ++t)
    if (args[t].why[0]) fail_msg("thread %d: %s", t, args[t].why);
}

/* A thread's place in its sequence belongs to the initialization it was made in: after
 * hvd_shutdown and hvd_init the same steps start over and are exact. */
static void repeats_across_a_second_initialization(void** state) {
  (void)state;
  enum { N = 6 };
  int forward[N];
  for (int t = 0; t < N; ++t) forward[t] = t;
  for (int step = 0; step < 3; ++step) order_step("rep.reinit", forward, N, step);
  assert_hvd_ok(hvd_shutdown());
  assert_hvd_ok(hvd_init());
  for (int step = 0; step < 3; ++step) order_step("rep.reinit", forward, N, step);
}

/* A repeat of a name whose last call is still in flight is a duplicate, as any call. */
static void repeat_while_in_flight_is_a_duplicate(void** state) {
  (void)state;
  if (hvd_size() == 1) skip(); /* alone, the first call completes at once */
  const int rank = hvd_rank();
  float a[4] = {1, 1, 1, 1}, b[4] = {1, 1, 1, 1};
  int32_t v = 1;
  reduce_and_check("rep.flight", 4, HVD_FLOAT32, HVD_OP_SUM, NULL);
  hvd_handle_t first, second;
  if (rank == 0) {
    /* The others submit "rep.flight" only after the blocking call below, so it is
     * still in flight here. */
    assert_hvd_ok(hvd_allreduce_async(a, a, 4, HVD_FLOAT32, HVD_OP_SUM, "rep.flight", NULL, &first));
    assert_hvd_status(hvd_allreduce_async(b, b, 4, HVD_FLOAT32, HVD_OP_SUM, "rep.flight", NULL, &second),
                      HVD_ERR_DUPLICATE_NAME);
    assert_last_error_mentions("rep.flight", "in flight");
  }
  assert_hvd_ok(hvd_allreduce(&v, &v, 1, HVD_INT32, HVD_OP_SUM, "rep.flight.barrier"));
  if (rank != 0)
    assert_hvd_ok(hvd_allreduce_async(a, a, 4, HVD_FLOAT32, HVD_OP_SUM, "rep.flight", NULL, &first));
  assert_hvd_ok(hvd_wait(first));
  assert_true(a[0] == (float)hvd_size());
  reduce_and_check("rep.flight", 4, HVD_FLOAT32, HVD_OP_SUM, NULL); /* free again */
}

/* Many names repeated many steps, some waited for in another order than enqueued:
 * every result exact (the path every training step takes). */
static void many_names_many_steps(void** state) {
  (void)state;
  enum { N = 64, COUNT = 33, STEPS = 30 };
  static float data[N][COUNT];
  static char names[N][32];
  hvd_handle_t handles[N];
  const int size = hvd_size(), rank = hvd_rank();
  for (int t = 0; t < N; ++t) snprintf(names[t], sizeof names[t], "rep.many.%d", t);
  for (int step = 0; step < STEPS; ++step) {
    for (int t = N - 1; t >= 0; --t) {
      for (int i = 0; i < COUNT; ++i) data[t][i] = (float)(rank + t + step % 3);
      assert_hvd_ok(hvd_allreduce_async(data[t], data[t], COUNT, HVD_FLOAT32, HVD_OP_SUM, names[t],
                                        NULL, &handles[t]));
    }
    for (int t = 0; t < N; ++t) assert_hvd_ok(hvd_wait(handles[(t * 7) % N]));
    for (int t = 0; t < N; ++t) {
      const float want = (float)(size * (size - 1) / 2 + size * (t + step % 3));
      for (int i = 0; i < COUNT; ++i)
        if (data[t][i] != want) fail_msg("step %d tensor %d: %g, want %g", step, t, data[t][i], want);
    }
  }
}

/* After hvd_shutdown a repeat is refused as not initialized; after hvd_init again the
 * name starts over. */
static void repeat_after_shutdown(void** state) {
  (void)state;
  float buf[4] = {1, 1, 1, 1};
  hvd_handle_t h;
  reduce_and_check("rep.life", 4, HVD_FLOAT32, HVD_OP_SUM, NULL);
  assert_hvd_ok(hvd_shutdown());
  assert_hvd_status(hvd_allreduce_async(buf, buf, 4, HVD_FLOAT32, HVD_OP_SUM, "rep.life", NULL, &h),
                    HVD_ERR_NOT_INITIALIZED);
  assert_hvd_ok(hvd_init());
  reduce_and_check("rep.life", 4, HVD_FLOAT32, HVD_OP_SUM, NULL);
  reduce_and_check("rep.life", 4, HVD_FLOAT32, HVD_OP_SUM, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(repeats_follow_every_change),
      cmocka_unit_test(bad_repeats_are_refused),
      cmocka_unit_test(repeats_with_bad_options_are_refused),
      cmocka_unit_test(steps_in_changing_orders),
      cmocka_unit_test(threads_repeat_their_own_names),
      cmocka_unit_test(repeats_across_a_second_initialization),
      cmocka_unit_test(repeat_while_in_flight_is_a_duplicate),
      cmocka_unit_test(many_names_many_steps),
      cmocka_unit_test(repeat_after_shutdown),
  };
  return cmocka_run_group_tests_name("repeat", tests, tu_group_init, tu_group_shutdown);
}
