#include "workload_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace hvdbench {

namespace {

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The folder beside this program's install (wherever the prefix was moved), the
// configured install folder, then the source tree, so a build runs without install.
std::vector<std::string> workload_dirs() {
  std::vector<std::string> dirs;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string exe(self, static_cast<size_t>(n));
    dirs.push_back(exe.substr(0, exe.rfind('/') + 1) + HVD_BENCH_WORKLOAD_RELATIVE_DIR);
  }
  dirs.emplace_back(HVD_BENCH_WORKLOAD_INSTALL_DIR);
  dirs.emplace_back(HVD_BENCH_WORKLOAD_SOURCE_DIR);
  return dirs;
}

}  // namespace

std::string resolve_workload(const std::string& name_or_path) {
  if (is_file(name_or_path)) return name_or_path;
  if (name_or_path.empty() || name_or_path.find('/') != std::string::npos) return "";
  for (const std::string& dir : workload_dirs()) {
    for (const std::string& candidate :
         {dir + "/" + name_or_path, dir + "/" + name_or_path + "_sizes.txt"}) {
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
