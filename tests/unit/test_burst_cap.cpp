// The burst cap's judgement (adapt/burst_cap.h), fed measured early rounds by hand:
// the placement's prior, busy and free shares of run delay over the judged window,
// the band between them, probes under the long cap, the agreement across ranks, and
// no judgement at all where it is not measured.
#include <cstdint>

#include "adapt/burst_cap.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using hvd::BurstCap;

namespace {

constexpr double kCycleMs = 1.0;
constexpr double kLongMs = kCycleMs * BurstCap::kSharedCpuFactor;

// Early rounds of 2 ms whose threads waited `share` of that time, enough of them to
// fill one judged window.
void feed_window(BurstCap& cap, double share) {
  const double wall = 0.002;
  for (double total = 0; total < BurstCap::kJudgedSeconds; total += wall)
    cap.early_round(wall, static_cast<int64_t>(share * wall * 1e9));
}

void the_placement_is_the_first_judgement(void**) {
  BurstCap free_cpus(true, true);
  assert_true(free_cpus.free_here());
  assert_true(free_cpus.cap_ms(kCycleMs) == kCycleMs);
  BurstCap shared(false, true);
  assert_false(shared.free_here());
  assert_true(shared.cap_ms(kCycleMs) == kLongMs);
}

void busy_rounds_make_the_cap_long_once_agreed(void**) {
  BurstCap cap(true, true);
  // Half a window of busy rounds is not yet a judgement.
  cap.early_round(BurstCap::kJudgedSeconds / 2, static_cast<int64_t>(BurstCap::kJudgedSeconds * 0.5e9));
  assert_true(cap.free_here());
  feed_window(cap, 0.5);
  assert_false(cap.free_here());
  // This rank's judgement travels in the next round; the cap follows the agreement.
  assert_true(cap.cap_ms(kCycleMs) == kCycleMs);
  assert_true(cap.agree(cap.free_here()));
  assert_true(cap.cap_ms(kCycleMs) == kLongMs);
  assert_false(cap.agree(false));  // unchanged
}

void a_window_adds_its_rounds_up(void**) {
  // One long wait among short rounds of none: a fifth of the window in all.
  BurstCap cap(true, true);
  const double wall = BurstCap::kJudgedSeconds / 5;
  cap.early_round(wall, static_cast<int64_t>(wall * 1e9));  // waited all of it
  for (int i = 0; i < 4; ++i) cap.early_round(wall, 0);
  assert_false(cap.free_here());
}

void the_band_between_keeps_the_judgement(void**) {
  BurstCap cap(true, true);
  feed_window(cap, 0.1);
  assert_true(cap.free_here());
  cap = BurstCap(false, true);
  feed_window(cap, 0.1);
  assert_false(cap.free_here());
  feed_window(cap, 0.01);
  assert_true(cap.free_here());
}

void another_ranks_busy_cpus_make_it_long_here(void**) {
  BurstCap cap(true, true);
  assert_true(cap.agree(false));
  assert_true(cap.free_here());
  assert_true(cap.cap_ms(kCycleMs) == kLongMs);
  assert_true(cap.agree(true));
  assert_true(cap.cap_ms(kCycleMs) == kCycleMs);
}

void the_long_cap_probes_every_so_often(void**) {
  BurstCap cap(false, true);
  for (int i = 1; i < BurstCap::kProbeEvery; ++i) {
    cap.outlasted_cycle();
    assert_true(cap.cap_ms(kCycleMs) == kLongMs);
  }
  cap.outlasted_cycle();
  assert_true(cap.cap_ms(kCycleMs) == kCycleMs);  // this burst ends at the cycle time
  cap.early_round(0.002, 0);                      // and its round is measured
  assert_true(cap.cap_ms(kCycleMs) == kLongMs);   // one probe, then long again
  // Free probes, a window's worth, make this rank free; the agreement the cap short.
  for (double total = 0; total < BurstCap::kJudgedSeconds; total += 0.002) {
    for (int i = 0; i < BurstCap::kProbeEvery; ++i) cap.outlasted_cycle();
    cap.early_round(0.002, 0);
  }
  assert_true(cap.free_here());
  cap.agree(true);
  assert_true(cap.cap_ms(kCycleMs) == kCycleMs);
}

void unmeasured_keeps_the_placement(void**) {
  BurstCap cap(true, false);  // a GPU, or no run delay from the kernel
  feed_window(cap, 0.9);
  assert_true(cap.free_here());
  BurstCap shared(false, false);
  for (int i = 0; i < 4 * BurstCap::kProbeEvery; ++i) shared.outlasted_cycle();
  assert_true(shared.cap_ms(kCycleMs) == kLongMs);  // no probes: nothing would judge them
  feed_window(shared, 0.0);
  assert_false(shared.free_here());
}

void unknown_delays_are_not_judged(void**) {
  BurstCap cap(true, true);
  for (int i = 0; i < 100; ++i) cap.early_round(0.002, -1);
  assert_true(cap.free_here());
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_placement_is_the_first_judgement),
      cmocka_unit_test(busy_rounds_make_the_cap_long_once_agreed),
      cmocka_unit_test(a_window_adds_its_rounds_up),
      cmocka_unit_test(the_band_between_keeps_the_judgement),
      cmocka_unit_test(another_ranks_busy_cpus_make_it_long_here),
      cmocka_unit_test(the_long_cap_probes_every_so_often),
      cmocka_unit_test(unmeasured_keeps_the_placement),
      cmocka_unit_test(unknown_delays_are_not_judged),
  };
  return cmocka_run_group_tests_name("burst_cap", tests, nullptr, nullptr);
}
