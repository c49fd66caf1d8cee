#define _DEFAULT_SOURCE /* usleep, setenv */
/* Doorbells: a rank that a peer's doorbell finds with nothing to bring, just after a
 * round that completed some of its work, waits for its own next request (at most the
 * burst gap and the cycle time) instead of joining the round empty. Joining empty costs
 * a second round per call, and in a loop of one allreduce the ranks then stay out of
 * phase (runtime/background.cpp, doorbell_rang). Rank 0 calls at once and the others a
 * moment later, every call: the moment (milliseconds) is far longer than the time a
 * background thread takes to see a doorbell and far shorter than the wait allowed
 * (hundreds of milliseconds), so what is counted does not depend on the machine's speed. */
#include <mpi.h>
#include <unistd.h>

#include "test_util.h"

enum { kCalls = 6, kCount = 4 };

static void reinit(const char* gap_us, const char* cycle_ms) {
  assert_hvd_ok(hvd_shutdown());
  setenv("HVD_BURST_GAP_US", gap_us, 1);
  setenv("HOROVOD_CYCLE_TIME", cycle_ms, 1);
  assert_hvd_ok(hvd_init());
  unsetenv("HVD_BURST_GAP_US");
  unsetenv("HOROVOD_CYCLE_TIME");
}

static hvd_counters_t counters(void) {
  hvd_counters_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  assert_hvd_ok(hvd_get_counters(&c));
  return c;
}

/* One blocking allreduce of `name`, the ranks but 0 entering it lag_us late; checked. */
static void lagging_call(const char* name, int call, unsigned lag_us) {
  const int rank = hvd_rank(), size = hvd_size();
  float x[kCount];
  if (rank != 0) usleep(lag_us);
  for (int i = 0; i < kCount; ++i) x[i] = (float)(rank + i + call);
  assert_hvd_ok(hvd_allreduce(x, x, kCount, HVD_FLOAT32, HVD_OP_SUM, name));
  for (int i = 0; i < kCount; ++i) {
    const float want = (float)(size * (i + call) + size * (size - 1) / 2);
    if (x[i] != want) fail_msg("%s call %d [%d] = %g, expected %g", name, call, i, x[i], want);
  }
}

/* Lagging 20 ms with a 400 ms wait allowed: each call is one round, which carries the
 * tensor's data (speculation). Joining rank 0's doorbell at once would take two rounds
 * per call: an empty one, then the laggards' own. */
static void a_rank_a_moment_behind_brings_its_request(void** state) {
  (void)state;
  reinit("400000", "10000");
  for (int k = 0; k < 2; ++k) lagging_call("doorbell.lag", k, 20000); /* names, cache */
  const hvd_counters_t before = counters();
  for (int k = 0; k < kCalls; ++k) lagging_call("doorbell.lag", 2 + k, 20000);
  const hvd_counters_t after = counters();
  if (hvd_size() == 1) return; /* alone: no doorbells */
  const uint64_t rounds = after.negotiation_rounds - before.negotiation_rounds;
  const uint64_t speculative = after.speculative - before.speculative;
  if (rounds != kCalls || speculative != kCalls)
    fail_msg("rank %d: %d calls took %llu rounds (%llu completed in their round), expected "
             "one each", hvd_rank(), kCalls, (unsigned long long)rounds,
             (unsigned long long)speculative);
}

/* The wait ends at the cycle time (10 ms here) even when the burst gap is longer:
 * lagging 200 ms, the others join rank 0's round empty and start their own later, so
 * the calls take two rounds or more each, and still complete. (A laggard may count the
 * first call's empty round before it reads the counters, hence one less.) */
static void the_wait_is_bounded_by_the_cycle_time(void** state) {
  (void)state;
  reinit("400000", "10");
  for (int k = 0; k < 2; ++k) lagging_call("doorbell.bounded", k, 200000);
  const hvd_counters_t before = counters();
  for (int k = 0; k < kCalls / 2; ++k) lagging_call("doorbell.bounded", 2 + k, 200000);
  const hvd_counters_t after = counters();
  if (hvd_size() == 1) return;
  const uint64_t rounds = after.negotiation_rounds - before.negotiation_rounds;
  if (rounds < 2 * (kCalls / 2) - 1)
    fail_msg("rank %d: %d calls took %llu rounds: a rank waited past the cycle time for its "
             "own request", hvd_rank(), kCalls / 2, (unsigned long long)rounds);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_rank_a_moment_behind_brings_its_request),
      cmocka_unit_test(the_wait_is_bounded_by_the_cycle_time),
  };
  return cmocka_run_group_tests_name("doorbell", tests, tu_group_init, tu_group_shutdown);
}
