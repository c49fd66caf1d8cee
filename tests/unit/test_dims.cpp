// Dims, a tensor's dimensions kept inline up to four and on the heap beyond: copies,
// moves and resizes between the two keep every value, and a moved-from Dims is empty
// and usable again.
#include <cstdint>
#include <utility>
#include <vector>

#include "base/dims.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

hvd::Dims of_size(size_t n, int64_t first) {
  hvd::Dims d;
  for (size_t i = 0; i < n; ++i) d.push_back(first + static_cast<int64_t>(i));
  return d;
}

void assert_dims(const hvd::Dims& d, size_t n, int64_t first) {
  assert_int_equal(d.size(), n);
  for (size_t i = 0; i < n; ++i) assert_int_equal(d[i], first + static_cast<int64_t>(i));
}

// Every pair of sizes on either side of the inline capacity, moved and copied both ways.
void moves_and_copies_keep_every_value(void**) {
  const std::vector<size_t> sizes = {0, 1, 3, hvd::Dims::kInline, hvd::Dims::kInline + 1, 9};
  for (size_t from : sizes)
    for (size_t to : sizes) {
      hvd::Dims source = of_size(from, 100), target = of_size(to, 500);
      target = std::move(source);
      assert_dims(target, from, 100);
      assert_int_equal(source.size(), 0);
      source.push_back(7);  // usable again
      assert_dims(source, 1, 7);

      hvd::Dims copied = of_size(to, 500);
      const hvd::Dims original = of_size(from, 300);
      copied = original;
      assert_dims(copied, from, 300);
      assert_dims(original, from, 300);

      hvd::Dims moved_into(of_size(from, 40));
      assert_dims(moved_into, from, 40);
      assert_true(moved_into == of_size(from, 40));
    }
}

// Growing past the inline capacity and shrinking back keeps the values that remain.
void resizes_across_the_inline_capacity(void**) {
  hvd::Dims d = of_size(3, 1);
  d.resize(7);
  for (size_t i = 3; i < 7; ++i) assert_int_equal(d[i], 0);
  assert_int_equal(d[2], 3);
  d.resize(2);
  assert_dims(d, 2, 1);
  d.resize(4);
  assert_int_equal(d[3], 0);
  hvd::Dims big = of_size(6, 10), small = of_size(2, 20);
  std::swap(big, small);
  assert_dims(big, 2, 20);
  assert_dims(small, 6, 10);
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(moves_and_copies_keep_every_value),
      cmocka_unit_test(resizes_across_the_inline_capacity),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
