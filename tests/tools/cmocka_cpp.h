// CMocka from C++, plus helpers for strings and word lists. Include after the
// code under test: cmocka.h defines a fail() macro.
#pragma once

#include <string>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

// Words joined by '|' so a mismatch shows every boundary.
inline std::string words_text(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : "|") + w;
  return out;
}

#define assert_words(actual, ...) \
  assert_string_equal(words_text(actual).c_str(), words_text({__VA_ARGS__}).c_str())

// An error message contains the text.
#define assert_contains(haystack, needle)                                               \
  do {                                                                                  \
    std::string h_ = (haystack);                                                        \
    if (h_.find(needle) == std::string::npos) {                                         \
      print_error("expected \"%s\" to contain \"%s\"\n", h_.c_str(), std::string(needle).c_str()); \
      fail();                                                                           \
    }                                                                                   \
  } while (0)
