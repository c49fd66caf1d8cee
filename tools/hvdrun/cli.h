// hvdrun's command line: Horovod's horovodrun flags (single-dash -np, -cb and
// -hostfile included) parsed with CLI11, and the user's command passed through
// untouched from its first word on.
#pragma once

#include <string>
#include <vector>

#include "options.h"

namespace hvdrun {

struct CliOutcome {
  enum class Kind {
    Run,    // options are filled in
    Help,   // text holds the help page; exit 0
    Error,  // text holds the message; exit 2
  };
  Kind kind = Kind::Error;
  LaunchOptions options;
  std::string text;
};

// args are argv[1..]. Never throws and never exits.
CliOutcome parse_command_line(const std::vector<std::string>& args);

// The full --help page.
std::string help_text();

}  // namespace hvdrun
