// Which machine a process runs on, and the CPUs it may use there: what tells ranks
// that share CPUs apart from ranks that only share a hostname.
#pragma once

#include <string>

#include "topo/cpuset.h"
#include "topo/pin.h"

namespace hvd {

// The running kernel's boot id (/proc/sys/kernel/random/boot_id): the same in every
// network namespace and container on one machine, where MPI's nodes, told apart by
// hostname, may be several (Hydra's -launcher fork with -hosts, the network lab's
// namespaces, containers with hostnames of their own). The hostname where the boot
// id cannot be read.
std::string machine_identity();

// The CPUs this process may run on: those pinning bound it to, else its affinity;
// empty when neither can be read.
CpuSet process_cpus(const PinResult& pin);

}  // namespace hvd
