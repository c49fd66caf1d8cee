#include "topo/topology.h"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "hvd_build_config.h"

#if HVD_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace hvd {

namespace {

constexpr uint16_t kNvidiaVendor = 0x10de;

// The calling thread's allowed CPUs; the fallback topology without hwloc.
[[maybe_unused]] CpuSet allowed_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  }
  return CpuSet(std::move(cpus));
}

[[maybe_unused]] void sort_gpus(std::vector<GpuDevice>* gpus) {
  const bool all_indexed = std::all_of(gpus->begin(), gpus->end(),
                                       [](const GpuDevice& g) { return g.cuda_index >= 0; });
  std::stable_sort(gpus->begin(), gpus->end(), [&](const GpuDevice& a, const GpuDevice& b) {
    return all_indexed ? a.cuda_index < b.cuda_index : a.pci_bus_id < b.pci_bus_id;
  });
}

#if HVD_HAVE_HWLOC

CpuSet to_cpuset(hwloc_const_bitmap_t bitmap) {
  std::vector<int> cpus;
  if (bitmap && !hwloc_bitmap_isfull(bitmap)) {
    for (int c = hwloc_bitmap_first(bitmap); c >= 0; c = hwloc_bitmap_next(bitmap, c))
      cpus.push_back(c);
  }
  return CpuSet(std::move(cpus));
}

// 3D controller (0x0302) or VGA (0x0300) from NVIDIA: the GPUs CUDA can enumerate.
bool is_nvidia_gpu(hwloc_obj_t pci) {
  const unsigned cls = pci->attr->pcidev.class_id;
  return pci->attr->pcidev.vendor_id == kNvidiaVendor && (cls == 0x0302 || cls == 0x0300);
}

GpuDevice describe_gpu(hwloc_topology_t topo, hwloc_obj_t pci) {
  GpuDevice gpu;
  char busid[32];
  snprintf(busid, sizeof busid, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
           pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  gpu.pci_bus_id = busid;
  for (hwloc_obj_t child = pci->io_first_child; child; child = child->next_sibling) {
    if (child->type != HWLOC_OBJ_OS_DEVICE || !child->name) continue;
    if (std::strncmp(child->name, "cuda", 4) == 0 && std::isdigit(child->name[4]))
      gpu.cuda_index = std::atoi(child->name + 4);
    if (const char* uuid = hwloc_obj_get_info_by_name(child, "NVIDIAUUID")) gpu.uuid = uuid;
    if (const char* model = hwloc_obj_get_info_by_name(child, "GPUModel")) gpu.model = model;
  }
  hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topo, pci);
  if (anchor) {
    gpu.cpus = to_cpuset(anchor->cpuset);
    if (anchor->nodeset && hwloc_bitmap_weight(anchor->nodeset) == 1)
      gpu.numa = hwloc_bitmap_first(anchor->nodeset);
  }
  return gpu;
}

Error load_with_hwloc(const std::string& xml_path, Topology* out) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0)
    return make_error(HVD_ERR_INTERNAL, "hwloc_topology_init failed");
  // PCI devices are filtered out by default; GPUs are PCI devices.
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (!xml_path.empty() && hwloc_topology_set_xml(topo, xml_path.c_str()) != 0) {
    int saved = errno;
    hwloc_topology_destroy(topo);
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "HVD_TOPOLOGY_XML='%s' cannot be read as an hwloc XML topology (%s)",
                      xml_path.c_str(), std::strerror(saved));
  }
  if (hwloc_topology_load(topo) != 0) {
    int saved = errno;
    hwloc_topology_destroy(topo);
    return make_error(xml_path.empty() ? HVD_ERR_INTERNAL : HVD_ERR_INVALID_ARGUMENT,
                      "hwloc could not load the topology of %s (%s)",
                      xml_path.empty() ? "this machine" : xml_path.c_str(), std::strerror(saved));
  }

  Topology t;
  t.source = xml_path.empty() ? "this machine" : xml_path;
  t.cpus = to_cpuset(hwloc_topology_get_topology_cpuset(topo));
  const int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  // Some topologies (virtual machines, hand-made XML) have PUs but no cores.
  const hwloc_obj_type_t core_type = ncores > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t core = hwloc_get_next_obj_by_type(topo, core_type, nullptr); core;
       core = hwloc_get_next_obj_by_type(topo, core_type, core)) {
    CpuSet pus = to_cpuset(core->cpuset);
    if (!pus.empty()) t.cores.push_back(std::move(pus));
  }
  for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); node;
       node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) {
    NumaNode n;
    n.os_index = static_cast<int>(node->os_index);
    n.cpus = to_cpuset(node->cpuset);
    if (!n.cpus.empty()) t.numa_nodes.push_back(std::move(n));
  }
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci;
       pci = hwloc_get_next_pcidev(topo, pci)) {
    if (is_nvidia_gpu(pci)) t.gpus.push_back(describe_gpu(topo, pci));
  }
  hwloc_topology_destroy(topo);

  // A device whose locality hwloc does not know is local to the whole machine.
  for (GpuDevice& gpu : t.gpus)
    if (gpu.cpus.empty()) gpu.cpus = t.cpus;
  sort_gpus(&t.gpus);
  *out = std::move(t);
  return Error::success();
}

#endif  // HVD_HAVE_HWLOC

}  // namespace

Error load_topology(const std::string& xml_path, Topology* out) {
#if HVD_HAVE_HWLOC
  return load_with_hwloc(xml_path, out);
#else
  if (!xml_path.empty())
    return make_error(HVD_ERR_UNSUPPORTED,
                      "HVD_TOPOLOGY_XML is set, but this build of libhvd has no hwloc");
  Topology t;
  t.source = "this machine (no hwloc)";
  t.cpus = allowed_cpus();
  for (int c : t.cpus.cpus()) t.cores.push_back(CpuSet({c}));
  t.numa_nodes.push_back(NumaNode{0, t.cpus});
  *out = std::move(t);
  return Error::success();
#endif
}

}  // namespace hvd
