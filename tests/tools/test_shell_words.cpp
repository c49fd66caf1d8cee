// --mpi-args splitting (as a shell would, without one) and quoting for display.
#include <string>
#include <vector>

#include "shell_words.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

std::vector<std::string> split(const char* text) {
  auto r = split_shell_words(text);
  if (!r) return {"error: " + r.error()};
  return r.value();
}

void splits_like_a_shell(void**) {
  assert_words(split("-launcher fork"), "-launcher", "fork");
  assert_words(split("  -a   b\t c\n"), "-a", "b", "c");
  assert_words(split(""));
  assert_words(split("   "));
  assert_words(split("-genv A 'x y'"), "-genv", "A", "x y");
  assert_words(split("\"a b\" c"), "a b", "c");
  assert_words(split("a'b c'd"), "ab cd");
  assert_words(split("''"), "");
  assert_words(split("a '' b"), "a", "", "b");
  assert_words(split("x\\ y"), "x y");
  assert_words(split("\"say \\\"hi\\\" \\$HOME \\n\""), "say \"hi\" $HOME \\n");
  assert_words(split("'it'\\''s'"), "it's");
  // Nothing is expanded: no shell runs.
  assert_words(split("$HOME *.txt `id` ;"), "$HOME", "*.txt", "`id`", ";");
}

void split_errors(void**) {
  assert_contains(split_shell_words("-a 'b").error(), "unterminated single quote");
  assert_contains(split_shell_words("-a \"b").error(), "unterminated double quote");
  assert_contains(split_shell_words("-a b\\").error(), "trailing backslash");
}

void quotes_for_display(void**) {
  assert_string_equal(shell_quote("mpiexec").c_str(), "mpiexec");
  assert_string_equal(shell_quote("a/b-c_d.e:1,f=g").c_str(), "a/b-c_d.e:1,f=g");
  assert_string_equal(shell_quote("").c_str(), "''");
  assert_string_equal(shell_quote("x y").c_str(), "'x y'");
  assert_string_equal(shell_quote("it's").c_str(), "'it'\\''s'");
  assert_string_equal(shell_join({"a", "b c", ";"}).c_str(), "a 'b c' ';'");
}

void quoting_round_trips(void**) {
  std::vector<std::vector<std::string>> cases = {
      {"plain", "with space", "it's", "\"dq\"", "back\\slash", "$VAR", "", ";&|<>", "tab\tnl\n"},
      {"-launcher", "fork"},
  };
  for (const auto& words : cases) {
    auto back = split_shell_words(shell_join(words));
    assert_true(back.ok());
    assert_string_equal(words_text(back.value()).c_str(), words_text(words).c_str());
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(splits_like_a_shell),
      cmocka_unit_test(split_errors),
      cmocka_unit_test(quotes_for_display),
      cmocka_unit_test(quoting_round_trips),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
