// horovodrun's command line where it differs from hvdrun's own: its single-dash long
// options, the flags that would change the job asked for (refused, with what to do
// instead), and the flags that mean nothing for libhvd on MPI (accepted with a note, so
// that a Horovod command line runs unchanged).
#pragma once

#include <optional>
#include <string>

#include "options.h"

namespace CLI {
class App;
}

namespace hvdrun {

// "-np 4" is "--num-proc 4" (also -cb, -hostfile, -prefix-timestamp), "=value" kept.
std::string normalize_alias(const std::string& tok);

// The message for a horovodrun flag hvdrun refuses (Gloo, jsrun), given the flag's name; nothing for any other name.
std::optional<std::string> refused_flag(const std::string& name);

// The manual's section listing every refused flag, from the same list as refused_flag.
std::string refused_flags_help();

// Why a horovodrun flag without effect here has none (its note, shared with the
// config file's keys); nothing for any other flag.
std::optional<std::string> ineffective_flag_reason(const std::string& flag);

// Declares the flags without effect here; giving one adds its note to o.notices.
void add_ineffective_horovodrun_flags(CLI::App& app, LaunchOptions& o);

}  // namespace hvdrun
