// Ranks named in messages (base/rank_list.h): none, a few, and a large job's list cut
// after 16 with the count.
#include <string>
#include <vector>

#include "base/rank_list.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

void a_few_ranks_are_all_named(void**) {
  assert_string_equal(hvd::rank_list({}).c_str(), "");
  assert_string_equal(hvd::rank_list({3}).c_str(), "3");
  assert_string_equal(hvd::rank_list({0, 2, 5}).c_str(), "0, 2, 5");
}

void sixteen_are_named_then_the_count(void**) {
  std::vector<int> ranks;
  for (int r = 0; r < 16; ++r) ranks.push_back(r);
  const std::string sixteen = hvd::rank_list(ranks);
  assert_string_equal(sixteen.c_str(), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15");
  for (int r = 16; r < 40; ++r) ranks.push_back(r);
  assert_string_equal(hvd::rank_list(ranks).c_str(), (sixteen + ", ... (40 ranks)").c_str());
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_few_ranks_are_all_named),
      cmocka_unit_test(sixteen_are_named_then_the_count),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
