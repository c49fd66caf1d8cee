// GPU and CPU assignment on the shipped XML topologies, for local sizes 1, 2, 4, 8,
// and CUDA_VISIBLE_DEVICES remapping (indices, UUIDs, the cases CUDA stops at).
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "topo/assign.h"
#include "topo/topology.h"
#include "topo/visible_devices.h"

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace hvd;

namespace {

std::string data(const char* file) { return std::string(HVD_TEST_DATA_DIR) + "/" + file; }

Topology load(const char* file) {
  Topology t;
  Error err = load_topology(data(file), &t);
  if (!err.ok()) fprintf(stderr, "%s\n", err.message.c_str());
  assert_true(err.ok());
  return t;
}

struct Expect {
  int gpu;
  int numa;
  const char* domain;
  const char* cores;
};

void check(const Topology& t, const std::vector<int>& visible, const std::vector<Expect>& expect) {
  std::vector<RankPlacement> got;
  Error err = assign_gpus(t, visible, static_cast<int>(expect.size()), &got);
  assert_true(err.ok());
  assert_int_equal(got.size(), expect.size());
  for (size_t r = 0; r < expect.size(); ++r) {
    if (got[r].gpu != expect[r].gpu || got[r].numa != expect[r].numa ||
        got[r].domain_cpus.to_string() != expect[r].domain ||
        got[r].core_cpus.to_string() != expect[r].cores)
      fprintf(stderr, "%s, %zu ranks, rank %zu: gpu %d numa %d domain %s cores %s\n",
              t.source.c_str(), expect.size(), r, got[r].gpu, got[r].numa,
              got[r].domain_cpus.to_string().c_str(), got[r].core_cpus.to_string().c_str());
    assert_int_equal(got[r].gpu, expect[r].gpu);
    assert_int_equal(got[r].numa, expect[r].numa);
    assert_string_equal(got[r].domain_cpus.to_string().c_str(), expect[r].domain);
    assert_string_equal(got[r].core_cpus.to_string().c_str(), expect[r].cores);
    if (got[r].gpu >= 0) assert_int_equal(got[r].physical_gpu, visible[static_cast<size_t>(got[r].gpu)]);
  }
}

std::vector<int> all_of(const Topology& t) { return visible_gpus(t.gpus, nullptr).physical; }

const char* kS0 = "0-15,32-47";
const char* kS1 = "16-31,48-63";

void dgx_discovery(void**) {
  Topology t = load("dgx_2s_8gpu.xml");
  assert_string_equal(t.cpus.to_string().c_str(), "0-63");
  assert_int_equal(t.cores.size(), 32);
  assert_string_equal(t.cores[0].to_string().c_str(), "0,32");
  assert_int_equal(t.numa_nodes.size(), 2);
  assert_string_equal(t.numa_nodes[1].cpus.to_string().c_str(), kS1);
  assert_int_equal(t.gpus.size(), 8);  // the InfiniBand NICs are not GPUs
  const char* bus[] = {"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
                       "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"};
  for (int i = 0; i < 8; ++i) {
    assert_string_equal(t.gpus[i].pci_bus_id.c_str(), bus[i]);
    assert_int_equal(t.gpus[i].cuda_index, i);
    assert_int_equal(t.gpus[i].numa, i / 4);
    assert_string_equal(t.gpus[i].cpus.to_string().c_str(), i < 4 ? kS0 : kS1);
    assert_string_equal(t.gpus[i].model.c_str(), "NVIDIA A100-SXM4-80GB");
  }
  assert_string_equal(t.gpus[7].uuid.c_str(), "GPU-5a100007-1111-2222-3333-00d9c0000007");
}

void dgx_local_sizes(void**) {
  Topology t = load("dgx_2s_8gpu.xml");
  const std::vector<int> v = all_of(t);
  check(t, v, {{0, 0, kS0, kS0}});
  check(t, v, {{0, 0, kS0, kS0}, {4, 1, kS1, kS1}});
  // Two ranks per socket, on GPUs behind different PCIe switches.
  check(t, v, {{0, 0, kS0, "0-7,32-39"}, {2, 0, kS0, "8-15,40-47"},
               {4, 1, kS1, "16-23,48-55"}, {6, 1, kS1, "24-31,56-63"}});
  check(t, v, {{0, 0, kS0, "0-3,32-35"}, {1, 0, kS0, "4-7,36-39"},
               {2, 0, kS0, "8-11,40-43"}, {3, 0, kS0, "12-15,44-47"},
               {4, 1, kS1, "16-19,48-51"}, {5, 1, kS1, "20-23,52-55"},
               {6, 1, kS1, "24-27,56-59"}, {7, 1, kS1, "28-31,60-63"}});
  // Uneven: the first socket takes the extra rank.
  check(t, v, {{0, 0, kS0, "0-7,32-39"}, {2, 0, kS0, "8-15,40-47"}, {4, 1, kS1, kS1}});
}

const char* kWs = "0-47";

void workstation_local_sizes(void**) {
  Topology t = load("ws_1s_4gpu.xml");
  assert_int_equal(t.numa_nodes.size(), 1);
  assert_int_equal(t.gpus.size(), 4);
  // No cudaN devices in this file: PCI bus order, not the order the file lists them.
  const char* bus[] = {"0000:01:00.0", "0000:21:00.0", "0000:41:00.0", "0000:61:00.0"};
  for (int i = 0; i < 4; ++i) {
    assert_string_equal(t.gpus[i].pci_bus_id.c_str(), bus[i]);
    assert_int_equal(t.gpus[i].cuda_index, -1);
    assert_int_equal(t.gpus[i].numa, 0);
    assert_true(t.gpus[i].uuid.empty());
  }
  const std::vector<int> v = all_of(t);
  check(t, v, {{0, 0, kWs, kWs}});
  check(t, v, {{0, 0, kWs, "0-11,24-35"}, {2, 0, kWs, "12-23,36-47"}});
  check(t, v, {{0, 0, kWs, "0-5,24-29"}, {1, 0, kWs, "6-11,30-35"},
               {2, 0, kWs, "12-17,36-41"}, {3, 0, kWs, "18-23,42-47"}});
  // More ranks than GPUs: pairs share one.
  check(t, v, {{0, 0, kWs, "0-2,24-26"}, {0, 0, kWs, "3-5,27-29"},
               {1, 0, kWs, "6-8,30-32"}, {1, 0, kWs, "9-11,33-35"},
               {2, 0, kWs, "12-14,36-38"}, {2, 0, kWs, "15-17,39-41"},
               {3, 0, kWs, "18-20,42-44"}, {3, 0, kWs, "21-23,45-47"}});
}

void no_gpu_local_sizes(void**) {
  Topology t = load("cpu_2s_nogpu.xml");
  assert_int_equal(t.gpus.size(), 0);  // the BMC's VGA is not NVIDIA's
  assert_int_equal(t.numa_nodes.size(), 2);
  const std::vector<int> v = all_of(t);
  check(t, v, {{-1, 0, "0-7", "0-7"}});
  check(t, v, {{-1, 0, "0-7", "0-7"}, {-1, 1, "8-15", "8-15"}});
  check(t, v, {{-1, 0, "0-7", "0-3"}, {-1, 0, "0-7", "4-7"},
               {-1, 1, "8-15", "8-11"}, {-1, 1, "8-15", "12-15"}});
  check(t, v, {{-1, 0, "0-7", "0-1"}, {-1, 0, "0-7", "2-3"}, {-1, 0, "0-7", "4-5"},
               {-1, 0, "0-7", "6-7"}, {-1, 1, "8-15", "8-9"}, {-1, 1, "8-15", "10-11"},
               {-1, 1, "8-15", "12-13"}, {-1, 1, "8-15", "14-15"}});
  // More ranks than cores share them.
  std::vector<RankPlacement> got;
  assert_true(assign_gpus(t, v, 20, &got).ok());
  for (const RankPlacement& p : got) assert_int_equal(p.core_cpus.size(), 1);
}

std::vector<int> visible(const Topology& t, const char* list, std::string* note = nullptr) {
  std::string s(list);
  VisibleDevices v = visible_gpus(t.gpus, &s);
  if (note) *note = v.note;
  return v.physical;
}

void visible_devices_indices_and_uuids(void**) {
  Topology t = load("dgx_2s_8gpu.xml");
  std::string note;
  assert_true((visible(t, "4,5,6,7", &note) == std::vector<int>{4, 5, 6, 7}));
  assert_true(note.empty());
  assert_true((visible(t, " 3 , 1 ") == std::vector<int>{3, 1}));
  assert_true((visible(t, "GPU-5a100007,1") == std::vector<int>{7, 1}));
  assert_true((visible(t, "gpu-5A100002-1111-2222-3333-00d9c0000002") == std::vector<int>{2}));
  // CUDA keeps what precedes the first unusable entry.
  assert_true((visible(t, "0,9,1", &note) == std::vector<int>{0}));
  assert_non_null(strstr(note.c_str(), "device 9 does not exist"));
  assert_true((visible(t, "2,2,3", &note) == std::vector<int>{2}));
  assert_non_null(strstr(note.c_str(), "listed before"));
  assert_true(visible(t, "GPU-5a10000", &note).empty());  // prefix of all eight
  assert_non_null(strstr(note.c_str(), "more than one"));
  assert_true(visible(t, "MIG-0c9b1c2d-0000", &note).empty());
  assert_non_null(strstr(note.c_str(), "MIG"));
  assert_true(visible(t, "GPU-ffffffff", &note).empty());
  assert_true(visible(t, "-1", &note).empty());
  assert_true(visible(t, "").empty());  // set but empty hides every GPU
  Topology ws = load("ws_1s_4gpu.xml");
  assert_true(visible(ws, "GPU-5a100000").empty());  // no UUIDs known there
  assert_true((visible(ws, "3,0") == std::vector<int>{3, 0}));
}

void visible_devices_remap_assignment(void**) {
  Topology t = load("dgx_2s_8gpu.xml");
  // Only the second socket's GPUs: both ranks go there, ordinals 0 and 2.
  check(t, visible(t, "4,5,6,7"), {{0, 1, kS1, "16-23,48-55"}, {2, 1, kS1, "24-31,56-63"}});
  // Ordinal order decides which domain comes first.
  check(t, visible(t, "GPU-5a100007,1"), {{0, 1, kS1, kS1}, {1, 0, kS0, kS0}});
  // No visible GPU: ranks spread over the NUMA nodes without one.
  check(t, visible(t, ""), {{-1, 0, kS0, kS0}, {-1, 1, kS1, kS1}});
  Topology ws = load("ws_1s_4gpu.xml");
  std::vector<RankPlacement> got;
  assert_true(assign_gpus(ws, visible(ws, "3,0"), 2, &got).ok());
  assert_int_equal(got[0].physical_gpu, 3);
  assert_int_equal(got[1].gpu, 1);
  assert_int_equal(got[1].physical_gpu, 0);
}

void bad_input(void**) {
  Topology t;
  Error err = load_topology(data("no_such_file.xml"), &t);
  assert_int_equal(err.status, HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message.c_str(), "no_such_file.xml"));
  err = load_topology(data("make_topologies.py"), &t);  // not XML
  assert_int_equal(err.status, HVD_ERR_INVALID_ARGUMENT);
  t = load("dgx_2s_8gpu.xml");
  std::vector<RankPlacement> got;
  assert_int_equal(assign_gpus(t, {0}, 0, &got).status, HVD_ERR_INVALID_ARGUMENT);
  assert_int_equal(assign_gpus(t, {8}, 1, &got).status, HVD_ERR_INVALID_ARGUMENT);
}

void this_machine(void**) {
  Topology t;
  assert_true(load_topology("", &t).ok());
  assert_false(t.cpus.empty());
  assert_false(t.cores.empty());
  assert_false(t.numa_nodes.empty());
  std::vector<RankPlacement> got;
  assert_true(assign_gpus(t, all_of(t), 2, &got).ok());
  for (const RankPlacement& p : got) {
    assert_false(p.core_cpus.empty());
    assert_true(p.domain_cpus.includes(p.core_cpus));
  }
}

void cpuset_text(void**) {
  CpuSet s;
  assert_true(CpuSet::parse("0-3,8,10-11", &s));
  assert_int_equal(s.size(), 7);
  assert_string_equal(s.to_string().c_str(), "0-3,8,10-11");
  assert_true(CpuSet::parse("5,1,2,3", &s));
  assert_string_equal(s.to_string().c_str(), "1-3,5");
  assert_true(CpuSet::parse("", &s));
  assert_true(s.empty());
  for (const char* bad : {"1-", "a", "3-1", "1,,2", ",1", "1 2"}) assert_false(CpuSet::parse(bad, &s));
  CpuSet a({0, 1, 2, 3}), b({2, 3, 4});
  assert_string_equal(a.intersect(b).to_string().c_str(), "2-3");
  assert_string_equal(a.unite(b).to_string().c_str(), "0-4");
  assert_true(a.includes(CpuSet({1, 2})));
  assert_false(a.includes(b));
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cpuset_text),
      cmocka_unit_test(dgx_discovery),
      cmocka_unit_test(dgx_local_sizes),
      cmocka_unit_test(workstation_local_sizes),
      cmocka_unit_test(no_gpu_local_sizes),
      cmocka_unit_test(visible_devices_indices_and_uuids),
      cmocka_unit_test(visible_devices_remap_assignment),
      cmocka_unit_test(bad_input),
      cmocka_unit_test(this_machine),
  };
  return cmocka_run_group_tests_name("topo-assign", tests, nullptr, nullptr);
}
