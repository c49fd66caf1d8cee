// The chunk size chosen by measurement (tune/chunk_chooser.h), fed call times by hand
// as the background loop feeds them: each call made with the arm the chooser proposed.
// A faster alternative is taken after a few trials; a slower one is tried less and
// less often; one fast outlier does not switch; a change of phase is followed; small
// buffers and a fixed size are never measured.
#include <cstdint>

#include "tune/chunk_chooser.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using hvd::ChunkChooser;

namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kBuffer = 100 * kMiB;

struct Run {
  int calls_on[2] = {0, 0};
};

// `calls` calls, each with the arm proposed, taking seconds[arm] (times `outlier` for
// the call numbered `outlier_at`, if any).
Run drive(ChunkChooser& c, int calls, const double seconds[2], int outlier_at = -1,
          double outlier = 1.0) {
  Run run;
  for (int i = 0; i < calls; ++i) {
    const int arm = c.proposal();
    ++run.calls_on[arm];
    c.record(arm, kBuffer, seconds[arm] * (i == outlier_at ? outlier : 1.0));
  }
  return run;
}

void the_arms_are_the_configured_size_and_one_16_times_away(void**) {
  assert_int_equal(ChunkChooser::alternative(1 * kMiB), 16 * kMiB);
  assert_int_equal(ChunkChooser::alternative(16 * kMiB), 1 * kMiB);
  assert_int_equal(ChunkChooser::alternative(64 * kMiB), 4 * kMiB);
  assert_int_equal(ChunkChooser::alternative(4 << 10), 64 << 10);
  assert_int_equal(ChunkChooser::alternative(512 * kMiB), 32 * kMiB);
  ChunkChooser c(1 * kMiB, true);
  assert_int_equal(c.bytes(0), 1 * kMiB);
  assert_int_equal(c.bytes(1), 16 * kMiB);
  assert_int_equal(c.arm_of(16 * kMiB), 1);
  assert_int_equal(c.arm_of(4 * kMiB), -1);
  assert_int_equal(c.proposal(), 0);  // the configured size until measured otherwise
}

void a_faster_alternative_is_taken(void**) {
  ChunkChooser c(1 * kMiB, true);
  const double seconds[2] = {0.042, 0.034};
  drive(c, 40, seconds);
  assert_int_equal(c.best(), 1);
  assert_int_equal(c.proposal(), 1);
  // Within a few trials of it: the first after kFirstInterval calls, then at once
  // until kMinSamples.
  ChunkChooser d(1 * kMiB, true);
  Run run = drive(d, ChunkChooser::kFirstInterval + ChunkChooser::kMinSamples, seconds);
  assert_int_equal(d.best(), 1);
  assert_int_equal(run.calls_on[1], ChunkChooser::kMinSamples);
}

void a_slower_alternative_is_tried_less_and_less(void**) {
  ChunkChooser c(1 * kMiB, true);
  const double seconds[2] = {0.022, 0.027};
  Run first = drive(c, 100, seconds);
  assert_int_equal(c.best(), 0);
  Run later = drive(c, 1000, seconds);
  assert_int_equal(c.best(), 0);
  // Intervals 4, 8, ... up to kMaxInterval: a handful of trials in the first hundred
  // calls, then one in kMaxInterval.
  assert_in_range(first.calls_on[1], 3, 6);
  assert_in_range(later.calls_on[1], 1000 / ChunkChooser::kMaxInterval - 1,
                  1000 / ChunkChooser::kMaxInterval + 2);
}

void one_fast_outlier_does_not_switch(void**) {
  ChunkChooser c(1 * kMiB, true);
  // The alternative's first trial (call kFirstInterval) is 20% faster than the
  // configured size by chance; its next trials show it 20% slower.
  const double seconds[2] = {0.022, 0.0264};
  drive(c, 200, seconds, ChunkChooser::kFirstInterval, 0.022 * 0.8 / 0.0264);
  assert_int_equal(c.best(), 0);
  // Nor does one slow call of the incumbent among its window.
  drive(c, 200, seconds, 3, 3.0);
  assert_int_equal(c.best(), 0);
}

void a_change_of_phase_is_followed(void**) {
  ChunkChooser c(1 * kMiB, true);
  const double fast_small[2] = {0.022, 0.027};
  const double fast_large[2] = {0.042, 0.034};
  drive(c, 300, fast_small);
  assert_int_equal(c.best(), 0);
  // The alternative is now tried once in kMaxInterval calls; its window needs a few
  // trials to turn.
  drive(c, ChunkChooser::kMaxInterval * (ChunkChooser::kMinSamples + 1), fast_large);
  assert_int_equal(c.best(), 1);
  // Back: the configured size's window is full of the other phase's times, and turns
  // after half a window of trials.
  drive(c, ChunkChooser::kMaxInterval * (ChunkChooser::kWindow / 2 + 2), fast_small);
  assert_int_equal(c.best(), 0);
}

void small_buffers_and_fixed_sizes_are_not_measured(void**) {
  ChunkChooser c(1 * kMiB, true);
  assert_false(c.measures(16 * kMiB - 1));
  assert_true(c.measures(16 * kMiB));
  for (int i = 0; i < 100; ++i) c.record(c.proposal(), 8 * kMiB, i % 2 ? 1.0 : 0.001);
  assert_int_equal(c.samples(0) + c.samples(1), 0);
  assert_int_equal(c.proposal(), 0);
  ChunkChooser fixed(1 * kMiB, false);
  const double seconds[2] = {0.042, 0.001};
  for (int i = 0; i < 100; ++i) fixed.record(i % 2, kBuffer, seconds[i % 2]);
  assert_int_equal(fixed.proposal(), 0);
  assert_int_equal(fixed.best(), 0);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_arms_are_the_configured_size_and_one_16_times_away),
      cmocka_unit_test(a_faster_alternative_is_taken),
      cmocka_unit_test(a_slower_alternative_is_tried_less_and_less),
      cmocka_unit_test(one_fast_outlier_does_not_switch),
      cmocka_unit_test(a_change_of_phase_is_followed),
      cmocka_unit_test(small_buffers_and_fixed_sizes_are_not_measured),
  };
  return cmocka_run_group_tests_name("chunk_chooser", tests, nullptr, nullptr);
}
