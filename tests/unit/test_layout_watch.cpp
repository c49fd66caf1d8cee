// The layout watch's verdicts (adapt/layout_watch.h), fed rounds by hand: tensors back
// to back in place, a gap, an out-of-place tensor, streams of two dtypes in turns, a
// joined rank's missing request, and rounds that say nothing (no large tensor, a large
// tensor alone, batches of small tensors only, host allreduces not noted) keeping the
// last verdict.
#include <cstdint>
#include <vector>

#include "adapt/layout_watch.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using hvd::LayoutWatch;
using hvd::Request;
using hvd::Response;

namespace {

constexpr int64_t kLarge = 1024;  // bytes: a tensor of 256 floats is large

// One round: tensors of `counts` elements of `dtype`, each a request whose memory
// starts `gaps[i]` bytes after the previous one's end in `arena`.
struct Round {
  std::vector<Response> responses;
  std::vector<Request> requests;

  void add(int64_t count, hvd_dtype_t dtype, unsigned char* at, bool in_place = true) {
    Response r;
    r.spec.dtype = dtype;
    r.spec.shape = hvd::Dims{count};
    responses.push_back(r);
    Request q;
    q.recv = at;
    q.send = in_place ? static_cast<const void*>(at) : static_cast<const void*>(at + 1);
    requests.push_back(q);
  }
  // Runs it through the watch, noting every tensor (nullptr where `missing`), in a
  // batch that may hold a large tensor unless `small_batches`.
  void run(LayoutWatch& watch, int missing = -1, bool small_batches = false) {
    watch.begin_round(responses.size());
    for (size_t i = 0; i < responses.size(); ++i)
      watch.note(i, static_cast<int>(i) == missing ? nullptr : &requests[i]);
    if (!small_batches) watch.may_hold_large();
    watch.end_round(responses);
  }
};

unsigned char arena[1 << 16];

// Floats back to back from `at`: small, large, small, large.
Round back_to_back(size_t at = 0) {
  Round round;
  const int64_t counts[] = {10, 300, 7, 500};
  for (int64_t n : counts) {
    round.add(n, HVD_FLOAT32, arena + at);
    at += static_cast<size_t>(n) * 4;
  }
  return round;
}

void back_to_back_in_place_is_seen(void**) {
  LayoutWatch watch(kLarge);
  assert_false(watch.back_to_back());
  back_to_back().run(watch);
  assert_true(watch.back_to_back());
}

void a_gap_breaks_it(void**) {
  LayoutWatch watch(kLarge);
  back_to_back().run(watch);
  Round round = back_to_back();
  round.requests[2].recv = static_cast<unsigned char*>(round.requests[2].recv) + 4;
  round.requests[2].send = round.requests[2].recv;
  round.run(watch);
  assert_false(watch.back_to_back());
}

void out_of_place_breaks_it(void**) {
  LayoutWatch watch(kLarge);
  Round round;
  round.add(300, HVD_FLOAT32, arena);
  round.add(300, HVD_FLOAT32, arena + 1200, false);
  back_to_back().run(watch);
  round.run(watch);
  assert_false(watch.back_to_back());
}

void a_missing_request_breaks_it(void**) {
  LayoutWatch watch(kLarge);
  back_to_back().run(watch);
  back_to_back().run(watch, 1);
  assert_false(watch.back_to_back());
}

void streams_of_two_dtypes_in_turns(void**) {
  LayoutWatch watch(kLarge);
  Round round;
  // float32 back to back from 0, float64 back to back from 32 KiB, pushed in turns.
  size_t a = 0, b = 32 << 10;
  for (int64_t n : {300, 400, 500}) {
    round.add(n, HVD_FLOAT32, arena + a);
    round.add(n, HVD_FLOAT64, arena + b);
    a += static_cast<size_t>(n) * 4;
    b += static_cast<size_t>(n) * 8;
  }
  round.run(watch);
  assert_true(watch.back_to_back());
  // The same tensors as one stream in turns lie apart.
  Round mixed;
  for (size_t i = 0; i < round.responses.size(); ++i)
    mixed.add(round.responses[i].spec.num_elements(), HVD_FLOAT32,
              static_cast<unsigned char*>(round.requests[i].recv));
  mixed.run(watch);
  assert_false(watch.back_to_back());
}

void rounds_without_evidence_keep_the_verdict(void**) {
  LayoutWatch watch(kLarge);
  back_to_back().run(watch);
  assert_true(watch.back_to_back());
  Round small;  // small tensors apart: nothing fusion would change
  small.add(10, HVD_FLOAT32, arena);
  small.add(10, HVD_FLOAT32, arena + 4096);
  small.run(watch);
  assert_true(watch.back_to_back());
  Round alone;  // one large tensor out of place: one piece either way
  alone.add(600, HVD_FLOAT32, arena, false);
  alone.run(watch);
  assert_true(watch.back_to_back());
  Round fused_small = back_to_back();  // batches of small tensors only, as executed
  fused_small.requests[3].recv = arena + 40000;
  fused_small.requests[3].send = arena + 40000;
  fused_small.run(watch, -1, true);
  assert_true(watch.back_to_back());
  Round unnoted = back_to_back();  // not host allreduces: the executor notes nothing
  unnoted.requests[3].recv = arena + 40000;
  watch.begin_round(unnoted.responses.size());
  watch.end_round(unnoted.responses);
  assert_true(watch.back_to_back());
  // And the other way: a verdict of "apart" stays until a round shows otherwise.
  Round gap = back_to_back();
  gap.requests[3].recv = arena + 40000;
  gap.requests[3].send = arena + 40000;
  gap.run(watch);
  assert_false(watch.back_to_back());
  small.run(watch);
  assert_false(watch.back_to_back());
  back_to_back(64).run(watch);
  assert_true(watch.back_to_back());
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(back_to_back_in_place_is_seen),
      cmocka_unit_test(a_gap_breaks_it),
      cmocka_unit_test(out_of_place_breaks_it),
      cmocka_unit_test(a_missing_request_breaks_it),
      cmocka_unit_test(streams_of_two_dtypes_in_turns),
      cmocka_unit_test(rounds_without_evidence_keep_the_verdict),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
