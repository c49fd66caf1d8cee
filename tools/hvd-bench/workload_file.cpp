#include "workload_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>

namespace hvdbench {

namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The installed folder first, then the source tree, so a build runs without install.
const char* const kWorkloadDirs[] = {HVD_BENCH_WORKLOAD_INSTALL_DIR,
                                     HVD_BENCH_WORKLOAD_SOURCE_DIR};

}  // namespace

std::string resolve_workload(const std::string& name_or_path) {
  if (is_file(name_or_path)) return name_or_path;
  if (name_or_path.empty() || name_or_path.find('/') != std::string::npos) return "";
  for (const char* dir : kWorkloadDirs) {
    for (const std::string& candidate :
         {std::string(dir) + "/" + name_or_path, std::string(dir) + "/" + name_or_path + "_sizes.txt"}) {
      if (is_file(candidate)) return candidate;
    }
  }
  return "";
}

bool load_workload(const std::string& path, std::vector<int64_t>* counts, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot open workload file '" + path + "'";
    return false;
  }
  counts->clear();
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    size_t last = line.find_last_not_of(" \t\r");
    std::string text = line.substr(first, last - first + 1);
    char* end = nullptr;
    errno = 0;
    long long value = std::strtoll(text.c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || value <= 0) {
      *error = path + ":" + std::to_string(number) + ": expected a positive element count, got '" +
               text + "'";
      return false;
    }
    counts->push_back(value);
  }
  if (counts->empty()) {
    *error = "workload file '" + path + "' lists no tensors";
    return false;
  }
  return true;
}

}  // namespace hvdbench
