#include "topo/bind.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace hvd {

namespace {

// The process's allowed CPUs, read once before anything is bound, so that a later
// narrowing of one thread does not shrink what the next binding may use.
const CpuSet& process_allowed() {
  static const CpuSet allowed = [] {
    CpuSet s;
    current_affinity(&s);
    return s;
  }();
  return allowed;
}

Error to_mask(const CpuSet& cpus, cpu_set_t* mask) {
  const CpuSet usable = cpus.intersect(process_allowed());
  if (usable.empty())
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "cannot bind to CPUs %s: this process may only use CPUs %s",
                      cpus.to_string().c_str(), process_allowed().to_string().c_str());
  CPU_ZERO(mask);
  for (int c : usable.cpus())
    if (c < CPU_SETSIZE) CPU_SET(c, mask);
  return Error::success();
}

}  // namespace

CpuSet binding_cpus(CpuBind mode, const RankPlacement& placement) {
  switch (mode) {
    case CpuBind::None: return {};
    case CpuBind::Numa: return placement.domain_cpus;
    case CpuBind::Core: return placement.core_cpus;
    case CpuBind::Auto: return {};  // resolved to one of the others before binding (pin.cpp)
  }
  return {};
}

Error parse_thread_affinity(const std::string& text, int local_rank, int local_size, int* cpu) {
  *cpu = -1;
  if (text.empty()) return Error::success();
  std::vector<int> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    errno = 0;
    long v = item.empty() ? -1 : std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || errno != 0 || v < 0 || v >= CPU_SETSIZE)
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "HOROVOD_THREAD_AFFINITY='%s': '%s' is not a CPU id (a comma-separated "
                        "list of CPU ids, one per local rank, is expected)",
                        text.c_str(), item.c_str());
    ids.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  if (static_cast<int>(ids.size()) < local_size)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "HOROVOD_THREAD_AFFINITY='%s' lists %zu CPU ids for %d local ranks",
                      text.c_str(), ids.size(), local_size);
  *cpu = ids[static_cast<size_t>(local_rank)];
  return Error::success();
}

Error current_affinity(CpuSet* out) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0)
    return make_error(HVD_ERR_INTERNAL, "sched_getaffinity failed: %s", std::strerror(errno));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  *out = CpuSet(std::move(cpus));
  return Error::success();
}

Error bind_process(const CpuSet& cpus) {
  cpu_set_t mask;
  Error err = to_mask(cpus, &mask);
  if (!err.ok()) return err;
  // sched_setaffinity applies to one thread: walk them all.
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return bind_current_thread(cpus);
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    // A thread may exit meanwhile (ESRCH): nothing to bind then.
    if (sched_setaffinity(tid, sizeof mask, &mask) != 0 && errno != ESRCH) {
      int saved = errno;
      closedir(dir);
      return make_error(HVD_ERR_INTERNAL, "binding thread %d to CPUs %s failed: %s",
                        static_cast<int>(tid), cpus.to_string().c_str(), std::strerror(saved));
    }
  }
  closedir(dir);
  return Error::success();
}

Error bind_thread(pthread_t thread, const CpuSet& cpus) {
  cpu_set_t mask;
  Error err = to_mask(cpus, &mask);
  if (!err.ok()) return err;
  int rc = pthread_setaffinity_np(thread, sizeof mask, &mask);
  if (rc != 0)
    return make_error(HVD_ERR_INTERNAL, "binding a thread to CPUs %s failed: %s",
                      cpus.to_string().c_str(), std::strerror(rc));
  return Error::success();
}

Error bind_current_thread(const CpuSet& cpus) { return bind_thread(pthread_self(), cpus); }

}  // namespace hvd
