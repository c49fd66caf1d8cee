#include "topo/machine.h"

#include <unistd.h>

#include <fstream>

#include "topo/bind.h"

namespace hvd {

std::string machine_identity() {
  std::ifstream boot_id("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (boot_id && std::getline(boot_id, id) && !id.empty()) return "boot:" + id;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) return std::string("host:") + host;
  return "unknown";
}

CpuSet process_cpus(const PinResult& pin) {
  if (!pin.process_cpus.empty()) return pin.process_cpus;
  CpuSet mine;
  if (!current_affinity(&mine).ok()) return CpuSet();
  return mine;
}

}  // namespace hvd
