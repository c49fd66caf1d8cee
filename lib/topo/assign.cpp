#include "topo/assign.h"

#include <algorithm>
#include <cmath>

namespace hvd {

namespace {

struct Domain {
  CpuSet cpus;
  int numa = -1;
  std::vector<int> ordinals;  // visible GPUs of the domain, ascending
  double weight = 0;
  int ranks = 0;
};

// Largest-remainder apportionment of n ranks by weight; ties go to earlier domains.
void apportion(std::vector<Domain>* domains, int n) {
  double total = 0;
  for (const Domain& d : *domains) total += d.weight;
  int given = 0;
  std::vector<std::pair<double, size_t>> remainders;
  for (size_t i = 0; i < domains->size(); ++i) {
    Domain& d = (*domains)[i];
    const double exact = total > 0 ? n * d.weight / total : static_cast<double>(n) / domains->size();
    d.ranks = static_cast<int>(std::floor(exact));
    given += d.ranks;
    remainders.push_back({exact - d.ranks, i});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < n; ++k, ++given) (*domains)[remainders[k % remainders.size()].second].ranks++;
}

std::vector<Domain> gpu_domains(const Topology& topology, const std::vector<int>& visible) {
  std::vector<Domain> domains;
  for (size_t ordinal = 0; ordinal < visible.size(); ++ordinal) {
    const GpuDevice& gpu = topology.gpus[static_cast<size_t>(visible[ordinal])];
    auto it = std::find_if(domains.begin(), domains.end(),
                           [&](const Domain& d) { return d.cpus == gpu.cpus; });
    if (it == domains.end()) {
      domains.push_back(Domain{gpu.cpus, gpu.numa, {}, 0, 0});
      it = domains.end() - 1;
    }
    it->ordinals.push_back(static_cast<int>(ordinal));
    it->weight += 1;
  }
  return domains;
}

std::vector<Domain> numa_domains(const Topology& topology) {
  std::vector<Domain> domains;
  for (const NumaNode& node : topology.numa_nodes) {
    Domain d{node.cpus, node.os_index, {}, 0, 0};
    for (const CpuSet& core : topology.cores)
      if (node.cpus.includes(core)) d.weight += 1;
    domains.push_back(std::move(d));
  }
  if (domains.empty()) domains.push_back(Domain{topology.cpus, -1, {}, 1, 0});
  return domains;
}

// The PUs of cores [first, last) of the domain's cores.
CpuSet core_slice(const std::vector<CpuSet>& cores, size_t first, size_t last) {
  CpuSet out;
  for (size_t c = first; c < last && c < cores.size(); ++c) out = out.unite(cores[c]);
  return out;
}

}  // namespace

Error assign_gpus(const Topology& topology, const std::vector<int>& visible, int local_size,
                  std::vector<RankPlacement>* out) {
  if (local_size < 1)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "local size %d is not positive", local_size);
  for (int physical : visible)
    if (physical < 0 || physical >= static_cast<int>(topology.gpus.size()))
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "visible GPU %d is not one of the %zu GPUs of %s", physical,
                        topology.gpus.size(), topology.source.c_str());

  std::vector<Domain> domains =
      visible.empty() ? numa_domains(topology) : gpu_domains(topology, visible);
  apportion(&domains, local_size);

  out->assign(static_cast<size_t>(local_size), RankPlacement{});
  int rank = 0;
  for (const Domain& d : domains) {
    std::vector<CpuSet> cores;
    for (const CpuSet& core : topology.cores)
      if (d.cpus.includes(core)) cores.push_back(core);
    if (cores.empty())  // a topology without cores inside the domain: one core per CPU
      for (int c : d.cpus.cpus()) cores.push_back(CpuSet({c}));
    const size_t ncores = cores.size();
    for (int j = 0; j < d.ranks; ++j, ++rank) {
      RankPlacement& p = (*out)[static_cast<size_t>(rank)];
      p.numa = d.numa;
      p.domain_cpus = d.cpus;
      if (!d.ordinals.empty()) {
        const size_t g = d.ordinals.size();
        p.gpu = d.ordinals[static_cast<size_t>(j) * g / static_cast<size_t>(d.ranks)];
        p.physical_gpu = visible[static_cast<size_t>(p.gpu)];
      }
      const size_t n = static_cast<size_t>(d.ranks);
      size_t first = static_cast<size_t>(j) * ncores / n;
      size_t last = static_cast<size_t>(j + 1) * ncores / n;
      if (last <= first) last = first + 1;  // more ranks than cores: cores are shared
      p.core_cpus = core_slice(cores, first, last);
    }
  }
  return Error::success();
}

}  // namespace hvd
