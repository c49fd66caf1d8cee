// CPU binding of the process and of single threads (Linux affinity masks).
#pragma once

#include <pthread.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "topo/assign.h"
#include "topo/cpuset.h"
#include "topo/pin_options.h"

namespace hvd {

// The CPUs HVD_CPU_BIND asks for: empty for none, the rank's domain for numa, its
// own cores for core.
CpuSet binding_cpus(CpuBind mode, const RankPlacement& placement);

// HOROVOD_THREAD_AFFINITY, as Horovod reads it: comma-separated CPU ids, one per
// local rank; local rank i's background thread runs on the i-th. Empty text: no
// affinity (*cpu = -1). Fewer ids than local ranks, or text that is not a list of
// non-negative integers, is HVD_ERR_INVALID_ARGUMENT.
Error parse_thread_affinity(const std::string& text, int local_rank, int local_size, int* cpu);

// The calling thread's allowed CPUs.
Error current_affinity(CpuSet* out);

// Binds every thread the process has now (threads started later inherit their
// creator's mask). Only CPUs the process may use count: a set without any of them
// is HVD_ERR_INVALID_ARGUMENT naming both sets.
Error bind_process(const CpuSet& cpus);
Error bind_thread(pthread_t thread, const CpuSet& cpus);
Error bind_current_thread(const CpuSet& cpus);

}  // namespace hvd
