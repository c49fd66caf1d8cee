// How a staged (fused) allreduce is cut into pieces (MpiBackend::staging_pieces): at
// most the staging size each; with equal pieces, cut evenly where that keeps the pieces
// near the staging size, else the short last piece padded to it; and alike for every
// count, so that all ranks make the same calls.
#include <cstdint>

#include "ops/mpi/mpi_backend.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

constexpr int64_t kPiece = 1024;  // elements of float32 in a 4 KiB staging piece

struct Cut {
  hvd::TrafficCounters counters;
  hvd::MpiBackend backend{1 << 20, &counters};
  Cut() { backend.set_piece_bytes(kPiece * 4); }
  hvd::Backend::Pieces of(int64_t count, bool equal) const {
    return backend.staging_pieces(count, HVD_FLOAT32, equal);
  }
};

void without_equal_pieces_the_last_is_short(void**) {
  Cut cut;
  const hvd::Backend::Pieces p = cut.of(33000, false);
  assert_int_equal(p.piece, kPiece);
  assert_false(p.pad_last);
  assert_int_equal(cut.of(100, false).piece, 100);  // one piece, the whole count
}

void a_count_that_fits_is_one_piece(void**) {
  Cut cut;
  for (int64_t count : {int64_t{1}, int64_t{700}, kPiece}) {
    const hvd::Backend::Pieces p = cut.of(count, true);
    assert_int_equal(p.piece, count);
    assert_false(p.pad_last);
  }
}

void many_pieces_are_cut_evenly(void**) {
  Cut cut;
  // 32 whole pieces and 232 over: 33 of 1000.
  hvd::Backend::Pieces p = cut.of(33000, true);
  assert_int_equal(p.piece, 1000);
  assert_false(p.pad_last);
  // Whole pieces stay whole.
  p = cut.of(36 * kPiece, true);
  assert_int_equal(p.piece, kPiece);
  assert_false(p.pad_last);
  // An uneven cut: the last piece is shorter by less than one element a piece.
  const int64_t count = 8 * kPiece + 5;  // 9 pieces
  p = cut.of(count, true);
  assert_false(p.pad_last);
  const int64_t last = count - 8 * p.piece;
  assert_true(last > 0 && last <= p.piece && p.piece - last < 9);
  assert_true(p.piece <= kPiece && p.piece * 8 >= kPiece * 7);
}

void few_pieces_with_a_small_tail_pad_it(void**) {
  Cut cut;
  // 1.1 pieces cut evenly would be two of 563: half the staging size.
  hvd::Backend::Pieces p = cut.of(kPiece + 100, true);
  assert_int_equal(p.piece, kPiece);
  assert_true(p.pad_last);
  // 3.9 pieces: four of 999 or 1000, near the staging size.
  p = cut.of(4 * kPiece - 100, true);
  assert_false(p.pad_last);
  assert_int_equal(p.piece, (4 * kPiece - 100 + 3) / 4);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(without_equal_pieces_the_last_is_short),
      cmocka_unit_test(a_count_that_fits_is_one_piece),
      cmocka_unit_test(many_pieces_are_cut_evenly),
      cmocka_unit_test(few_pieces_with_a_small_tail_pad_it),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
