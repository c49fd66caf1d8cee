#include "topo/pin.h"

#include <unistd.h>

#include <algorithm>

#include "ops/device/device_runtime.h"
#include "topo/bind.h"
#include "topo/topology.h"
#include "topo/visible_devices.h"

namespace hvd {

namespace {

const char* bind_name(CpuBind mode) {
  switch (mode) {
    case CpuBind::None: return "none";
    case CpuBind::Numa: return "numa";
    case CpuBind::Core: return "core";
    case CpuBind::Auto: return "auto";
  }
  return "?";
}

void add_note(PinResult* out, const std::string& note) {
  if (note.empty()) return;
  if (!out->notes.empty()) out->notes += "; ";
  out->notes += note;
}

// HVD_CPU_BIND=auto. Ranks sharing a node (or a machine: sharing_ranks) and free to
// run anywhere get their share of its cores (as `core`): the scheduler otherwise moves
// a rank's threads onto its neighbours' cores, and with as many ranks as cores a
// background thread then waits behind another rank's threads (measured: 2x slower
// small-tensor steps on 2 cores; on the network lab's two nodes of one 2-CPU machine,
// a lone allreduce took 81-119 us instead of 30 in 10-80% of runs, never when each
// rank had a core). Anything that already placed the process wins: a launcher's
// binding (the process may not use every CPU) or HOROVOD_THREAD_AFFINITY.
CpuBind resolve_auto_bind(const PinOptions& options, bool have_topology, const Topology& topology,
                          int sharing_ranks, PinResult* out) {
  if (!have_topology || sharing_ranks < 2 || !options.thread_affinity.empty())
    return CpuBind::None;
  CpuSet allowed;
  if (!current_affinity(&allowed).ok()) return CpuBind::None;
  if (!allowed.includes(topology.cpus)) {
    add_note(out, "HVD_CPU_BIND=auto: the process is already bound (CPUs " +
                      allowed.to_string() + "); left as it is");
    return CpuBind::None;
  }
  return CpuBind::Core;
}

// Ordinal -> topology GPU. With CUDA devices present, by PCI bus id (CUDA has applied
// CUDA_VISIBLE_DEVICES and its device order already); otherwise by reading
// CUDA_VISIBLE_DEVICES against the topology.
std::vector<int> map_visible(const PinOptions& options, const Topology& topology, int cuda_count,
                             PinResult* out) {
  if (cuda_count > 0) {
    std::vector<int> physical;
    for (int d = 0; d < cuda_count; ++d) {
      std::string bus;
      if (!cuda_pci_bus_id(d, &bus).ok()) break;
      auto it = std::find_if(topology.gpus.begin(), topology.gpus.end(),
                             [&](const GpuDevice& g) { return g.pci_bus_id == bus; });
      if (it == topology.gpus.end()) {
        add_note(out, "CUDA device " + std::to_string(d) + " (" + bus + ") is not in the topology of " +
                          topology.source + "; reading CUDA_VISIBLE_DEVICES against it instead");
        physical.clear();
        break;
      }
      physical.push_back(static_cast<int>(it - topology.gpus.begin()));
    }
    if (static_cast<int>(physical.size()) == cuda_count) return physical;
  }
  VisibleDevices visible = visible_gpus(
      topology.gpus, options.cuda_visible_devices ? &*options.cuda_visible_devices : nullptr);
  add_note(out, visible.note);
  if (cuda_count > 0 && static_cast<int>(visible.physical.size()) > cuda_count)
    visible.physical.resize(static_cast<size_t>(cuda_count));
  return visible.physical;
}

}  // namespace

Error pin_this_rank(const PinOptions& options, int local_rank, int local_size, PinResult* out) {
  *out = PinResult{};
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "local rank %d of %d is not a valid placement",
                      local_rank, local_size);
  if (options.machine_size < 1 || options.machine_rank < 0 ||
      options.machine_rank >= options.machine_size)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "rank %d of %d on this machine is not a valid placement",
                      options.machine_rank, options.machine_size);

  int affinity_cpu = -1;
  Error err = parse_thread_affinity(options.thread_affinity, local_rank, local_size, &affinity_cpu);
  if (!err.ok()) return err;

  std::string cuda_why;
  const int cuda_count = cuda_device_count(&cuda_why);
  add_note(out, cuda_why);

  bool need_topology =
      options.gpu_pinning || options.cpu_bind == CpuBind::Numa || options.cpu_bind == CpuBind::Core;
  Topology topology;
  if (need_topology) {
    err = load_topology(options.topology_xml, &topology);
    if (!err.ok() && !options.topology_xml.empty()) return err;
    if (!err.ok()) {  // this machine's topology is a nicety, not a requirement
      add_note(out, err.message);
      need_topology = false;
    }
  }

  if (need_topology) {
    std::vector<int> visible = map_visible(options, topology, cuda_count, out);
    std::vector<RankPlacement> placements;
    err = assign_gpus(topology, visible, local_size, &placements);
    if (!err.ok()) return err;
    out->placement = placements[static_cast<size_t>(local_rank)];
    out->assigned_gpu = out->placement.gpu;
  }
  // Several MPI nodes on this machine and no GPU to place the ranks by: each rank's
  // slice of cores is its share of the machine's, as if all were one node's ranks.
  int sharing_ranks = local_size;
  if (need_topology && options.machine_size > local_size && out->assigned_gpu < 0 &&
      cuda_count == 0) {
    std::vector<RankPlacement> machine;
    err = assign_gpus(topology, {}, options.machine_size, &machine);
    if (!err.ok()) return err;
    out->placement.core_cpus = machine[static_cast<size_t>(options.machine_rank)].core_cpus;
    sharing_ranks = options.machine_size;
  }

  if (options.gpu_pinning && out->assigned_gpu >= 0 && cuda_count > 0) {
    err = cuda_set_device(out->assigned_gpu);
    if (!err.ok()) return err;
    out->device = out->assigned_gpu;
  } else if (!options.gpu_pinning && cuda_count > 0) {
    int current = -1;
    if (cuda_get_device(&current).ok()) out->device = current;
    add_note(out, "HVD_GPU_PINNING=0: the current CUDA device is left as it is");
  } else if (cuda_count > 0 && out->assigned_gpu < 0) {
    // CUDA has devices the topology does not show (no hwloc, or a foreign XML):
    // fall back to Horovod's rule, local rank modulo device count.
    out->device = local_rank % cuda_count;
    err = cuda_set_device(out->device);
    if (!err.ok()) return err;
  }

  const CpuBind mode = options.cpu_bind == CpuBind::Auto
                           ? resolve_auto_bind(options, need_topology, topology, sharing_ranks, out)
                           : options.cpu_bind;
  const CpuSet bind = binding_cpus(mode, out->placement);
  if (mode != CpuBind::None) {
    if (bind.empty()) {
      add_note(out, std::string("HVD_CPU_BIND=") + bind_name(options.cpu_bind) +
                        ": the topology gave no CPUs for this rank; not binding");
    } else {
      err = bind_process(bind);
      if (err.ok()) {
        out->process_cpus = bind;
      } else if (options.cpu_bind == CpuBind::Auto) {
        add_note(out, "HVD_CPU_BIND=auto: " + err.message + "; not binding");  // a nicety only
      } else {
        return err;
      }
    }
  }
  out->thread_cpus = affinity_cpu >= 0 ? CpuSet({affinity_cpu}) : out->process_cpus;

  std::string line = "local rank " + std::to_string(local_rank) + "/" + std::to_string(local_size) + ": ";
  if (out->placement.physical_gpu >= 0) {
    const GpuDevice& g = topology.gpus[static_cast<size_t>(out->placement.physical_gpu)];
    line += "GPU " + std::to_string(out->assigned_gpu) + " (" + g.pci_bus_id;
    if (out->placement.numa >= 0) line += ", NUMA " + std::to_string(out->placement.numa);
    line += out->device >= 0 ? ", current)" : ", no CUDA device to make current)";
  } else if (out->device >= 0) {
    line += "GPU " + std::to_string(out->device) + " (local rank modulo device count)";
  } else {
    line += "no GPU";
  }
  if (!out->placement.domain_cpus.empty())
    line += ", near CPUs " + out->placement.domain_cpus.to_string();
  if (sharing_ranks > local_size)
    line += ", one of " + std::to_string(sharing_ranks) + " ranks sharing this machine's cores";
  line += std::string(", cpu bind ") + bind_name(mode);
  if (options.cpu_bind == CpuBind::Auto) line += " (auto)";
  if (!out->process_cpus.empty()) line += " to " + out->process_cpus.to_string();
  if (!out->thread_cpus.empty()) line += ", background thread on " + out->thread_cpus.to_string();
  if (need_topology) line += " [" + topology.source + "]";
  out->log = line;
  return Error::success();
}

double cpus_per_rank(const PinResult& pin, int local_size) {
  if (!pin.process_cpus.empty()) return static_cast<double>(pin.process_cpus.size());
  CpuSet mine;
  if (!current_affinity(&mine).ok()) return 1.0;
  const double allowed = static_cast<double>(mine.size());
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (allowed >= static_cast<double>(online) && local_size > 1) return allowed / local_size;
  return allowed;
}

Error pin_background_thread(const PinResult& pin) {
  if (pin.device >= 0) {
    Error err = cuda_set_device(pin.device);
    if (!err.ok()) return err;
  }
  if (!pin.thread_cpus.empty()) return bind_current_thread(pin.thread_cpus);
  return Error::success();
}

}  // namespace hvd
