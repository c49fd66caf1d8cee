// Splitting `--mpi-args "..."` into words the way a POSIX shell would, without
// running one, and quoting words back for display.
//
// Quotes ('...' and "...") and backslashes are honoured; nothing is expanded
// ($VAR, globs, `...` stay literal), because no shell ever sees the text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace hvdrun {

Result<std::vector<std::string>> split_shell_words(std::string_view text);

// word as a shell would need it written to read it back as one word: unchanged
// when it holds only safe characters, otherwise in single quotes.
std::string shell_quote(std::string_view word);

// The words quoted and joined by spaces.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace hvdrun
