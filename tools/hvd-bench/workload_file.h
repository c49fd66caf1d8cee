// Workload files: one tensor size in elements per line (float32), in the order the
// model declares its parameters. Blank lines and lines starting with '#' are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvdbench {

// Finds the file for a workload given as a path or as a short name ("resnet50" or
// "resnet50_sizes.txt"), looked up in the installed and source workload folders.
// Returns "" when nothing matches.
std::string resolve_workload(const std::string& name_or_path);

// Reads the sizes. On a malformed file returns false and says which line is wrong.
bool load_workload(const std::string& path, std::vector<int64_t>* counts, std::string* error);

}  // namespace hvdbench
