// --config-file: horovodrun's YAML parameter file (Horovod's sections and keys: params,
// autotune, timeline, stall_check, library_options, logging, controller). Each key sets
// what its flag would; a flag given on the command line wins over the file, as in
// Horovod. An unknown key or a bad value is an error naming the file, the line and the
// key. Read with libyaml.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "options.h"
#include "result.h"

namespace hvdrun {

// One "section: {key: value}" entry of the file; value is the scalar's text, null is
// true for an empty value, ~ or null (Horovod then leaves the default).
struct ConfigEntry {
  std::string section, key, value;
  bool null = false;
  int line = 0;  // 1-based
};

// Whether this hvdrun can read YAML (built with libyaml).
bool config_files_supported();

// The entries of the file, in order; an error names the file and line.
Result<std::vector<ConfigEntry>> read_config_file(const std::string& path);

// Applies the entries to o, skipping those whose flag was given on the command line
// (given_flag("--fusion-threshold-mb")); keys without effect for libhvd add the same
// note their flag does. file is the name used in messages.
Status apply_config(const std::vector<ConfigEntry>& entries, const std::string& file,
                    const std::function<bool(const std::string& flag)>& given_flag,
                    LaunchOptions& o);

}  // namespace hvdrun
