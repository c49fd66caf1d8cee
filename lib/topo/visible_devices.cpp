#include "topo/visible_devices.h"

#include <algorithm>
#include <cctype>

namespace hvd {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool lower_equal_prefix(const std::string& prefix, const std::string& full) {
  if (prefix.size() > full.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(prefix[i])) !=
        std::tolower(static_cast<unsigned char>(full[i])))
      return false;
  return true;
}

// The physical index an entry names, or -1 with *why set.
int resolve(const std::vector<GpuDevice>& gpus, const std::string& entry, std::string* why) {
  if (entry.empty()) {
    *why = "an empty entry";
    return -1;
  }
  if (std::all_of(entry.begin(), entry.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (entry.size() > 6 || std::stoi(entry) >= static_cast<int>(gpus.size())) {
      *why = "device " + entry + " does not exist (" + std::to_string(gpus.size()) + " GPUs)";
      return -1;
    }
    return std::stoi(entry);
  }
  if (lower_equal_prefix("GPU-", entry)) {
    int found = -1;
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (gpus[i].uuid.empty() || !lower_equal_prefix(entry, gpus[i].uuid)) continue;
      if (found >= 0) {
        *why = "'" + entry + "' matches more than one GPU";
        return -1;
      }
      found = static_cast<int>(i);
    }
    if (found < 0) *why = "no GPU has the UUID '" + entry + "'";
    return found;
  }
  if (lower_equal_prefix("MIG-", entry)) {
    *why = "MIG device '" + entry + "' cannot be located in the topology";
    return -1;
  }
  *why = "'" + entry + "' is neither an index nor a GPU UUID";
  return -1;
}

}  // namespace

VisibleDevices visible_gpus(const std::vector<GpuDevice>& gpus, const std::string* visible_list) {
  VisibleDevices out;
  if (!visible_list) {
    for (size_t i = 0; i < gpus.size(); ++i) out.physical.push_back(static_cast<int>(i));
    return out;
  }
  const std::string& list = *visible_list;
  if (trim(list).empty()) return out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string entry = trim(list.substr(start, comma - start));
    std::string why;
    int index = resolve(gpus, entry, &why);
    if (index >= 0 &&
        std::find(out.physical.begin(), out.physical.end(), index) != out.physical.end()) {
      why = "'" + entry + "' names a device listed before";
      index = -1;
    }
    if (index < 0) {
      out.note = "CUDA_VISIBLE_DEVICES='" + list + "': " + why + "; the devices after it are hidden";
      break;
    }
    out.physical.push_back(index);
    start = comma + 1;
  }
  return out;
}

}  // namespace hvd
