#include "python_path.h"

#include <filesystem>
#include <vector>

namespace hvdrun {
namespace {

namespace fs = std::filesystem;

// The same folder: compared on disk, so that a link or "a/../b" in PYTHONPATH matches.
bool same_folder(const std::string& a, const fs::path& b) {
  std::error_code ec;
  return !a.empty() && fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

std::optional<std::string> pythonpath_with_horovod_compat(const std::string& pythonpath,
                                                          const std::string& compat_dir) {
  if (compat_dir.empty() || pythonpath.empty()) return std::nullopt;
  const fs::path compat(compat_dir);
  const fs::path site = compat.parent_path();
  bool names_site = false;
  size_t start = 0;
  while (start <= pythonpath.size()) {
    size_t end = pythonpath.find(':', start);
    if (end == std::string::npos) end = pythonpath.size();
    const std::string entry = pythonpath.substr(start, end - start);
    if (same_folder(entry, compat)) return std::nullopt;
    names_site = names_site || same_folder(entry, site);
    start = end + 1;
  }
  if (!names_site) return std::nullopt;
  // After every entry of the user's, as the .pth file puts it behind the site folder:
  // a real Horovod earlier on the path still wins.
  return pythonpath + ":" + compat_dir;
}

}  // namespace hvdrun
