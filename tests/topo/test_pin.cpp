// The pinning entry point on XML topologies, HVD_CPU_BIND modes, binding of the
// process and of threads on this machine, and HOROVOD_THREAD_AFFINITY.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ops/device/device_runtime.h"
#include "topo/bind.h"
#include "topo/machine.h"
#include "topo/pin.h"

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace hvd;

namespace {

std::string data(const char* file) { return std::string(HVD_TEST_DATA_DIR) + "/" + file; }

CpuSet original;

int save_affinity(void**) { return current_affinity(&original).ok() ? 0 : -1; }
int restore_affinity(void**) { return bind_process(original).ok() ? 0 : -1; }

PinOptions xml_options(const char* file) {
  PinOptions p;
  p.topology_xml = data(file);
  return p;
}

bool have_cuda_device() { return cuda_device_count(nullptr) > 0; }

void binding_modes(void**) {
  RankPlacement p;
  p.domain_cpus = CpuSet({0, 1, 2, 3});
  p.core_cpus = CpuSet({2, 3});
  assert_true(binding_cpus(CpuBind::None, p).empty());
  assert_true(binding_cpus(CpuBind::Numa, p) == p.domain_cpus);
  assert_true(binding_cpus(CpuBind::Core, p) == p.core_cpus);
}

void thread_affinity_text(void**) {
  int cpu = 7;
  assert_true(parse_thread_affinity("", 0, 4, &cpu).ok());
  assert_int_equal(cpu, -1);
  assert_true(parse_thread_affinity("3,2,1,0", 1, 4, &cpu).ok());
  assert_int_equal(cpu, 2);
  assert_true(parse_thread_affinity("5", 0, 1, &cpu).ok());
  assert_int_equal(cpu, 5);
  Error err = parse_thread_affinity("0,1", 0, 4, &cpu);
  assert_int_equal(err.status, HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message.c_str(), "4 local ranks"));
  for (const char* bad : {"0,x,2", "0,,2", "-1", "1.5", "0,1,", "99999999"})
    assert_int_equal(parse_thread_affinity(bad, 0, 1, &cpu).status, HVD_ERR_INVALID_ARGUMENT);
}

// The form in which ranks unite their CPU sets (MPI_BOR) to count a machine's CPUs.
void cpu_words_and_machine(void**) {
  const CpuSet set({0, 3, 63, 64, 130});
  const std::vector<uint64_t> words = set.to_words(3);
  assert_int_equal(words.size(), 3);
  assert_true(words[0] == ((uint64_t{1} << 0) | (uint64_t{1} << 3) | (uint64_t{1} << 63)));
  assert_true(words[1] == 1);
  assert_true(words[2] == uint64_t{1} << 2);
  assert_true(CpuSet::from_words(words) == set);
  assert_true(CpuSet::from_words(set.to_words(1)) == CpuSet({0, 3, 63}));  // the rest left out
  // Two ranks' sets united through their words.
  std::vector<uint64_t> a = CpuSet({1}).to_words(1), b = CpuSet({0, 1}).to_words(1);
  assert_int_equal(CpuSet::from_words({a[0] | b[0]}).size(), 2);
  // The machine: the same identity every call, not empty; this process's CPUs.
  const std::string id = machine_identity();
  assert_false(id.empty());
  assert_true(id == machine_identity());
  PinResult unpinned;
  assert_true(process_cpus(unpinned) == original);
  PinResult bound;
  bound.process_cpus = CpuSet({original.cpus().front()});
  assert_true(process_cpus(bound) == bound.process_cpus);
}

void bind_threads_here(void**) {
  const int first = original.cpus().front();
  // A thread bound to one CPU sees exactly that CPU; the process keeps its mask.
  std::thread worker([&] {
    assert_true(bind_current_thread(CpuSet({first})).ok());
    CpuSet now;
    assert_true(current_affinity(&now).ok());
    assert_true(now == CpuSet({first}));
  });
  worker.join();
  CpuSet mine;
  assert_true(current_affinity(&mine).ok());
  assert_true(mine == original);

  // Another thread, bound from outside through its handle.
  CpuSet seen;
  std::atomic<int> stage{0};
  std::thread other([&] {
    while (stage.load() == 0) std::this_thread::yield();
    current_affinity(&seen);
    stage = 2;
  });
  assert_true(bind_thread(other.native_handle(), CpuSet({first})).ok());
  stage = 1;
  other.join();
  assert_true(seen == CpuSet({first}));

  // CPUs this process may not use are refused with both sets named.
  Error err = bind_current_thread(CpuSet({4000}));
  assert_int_equal(err.status, HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message.c_str(), "4000"));
}

void bind_whole_process(void**) {
  // Every thread, including one started before the binding.
  std::atomic<bool> go{false};
  CpuSet seen;
  std::thread before([&] {
    while (!go.load()) std::this_thread::yield();
    current_affinity(&seen);
  });
  const CpuSet one({original.cpus().back()});
  assert_true(bind_process(one).ok());
  go = true;
  before.join();
  assert_true(seen == one);
  CpuSet mine;
  current_affinity(&mine);
  assert_true(mine == one);
  assert_true(bind_process(original).ok());
}

void pin_on_dgx(void**) {
  PinOptions p = xml_options("dgx_2s_8gpu.xml");
  PinResult r;
  Error err = pin_this_rank(p, 1, 2, &r);
  assert_true(err.ok());
  if (!have_cuda_device()) {
    assert_int_equal(r.assigned_gpu, 4);
    assert_int_equal(r.device, -1);
    assert_int_equal(r.placement.numa, 1);
    assert_non_null(strstr(r.log.c_str(), "GPU 4 (0000:87:00.0, NUMA 1"));
    assert_false(r.notes.empty());  // says why no device was made current
  } else {  // a real GPU that is not in this file: at most the devices CUDA has
    assert_true(r.device >= 0 && r.device < cuda_device_count(nullptr));
  }
  assert_true(r.process_cpus.empty());  // auto: the file's CPUs are not this machine's
  assert_true(r.thread_cpus.empty());
  assert_non_null(strstr(r.log.c_str(), "dgx_2s_8gpu.xml"));

  // CUDA_VISIBLE_DEVICES through the options.
  p.cuda_visible_devices = "GPU-5a100006,GPU-5a100001";
  assert_true(pin_this_rank(p, 0, 2, &r).ok());
  if (!have_cuda_device()) {
    assert_int_equal(r.assigned_gpu, 0);
    assert_int_equal(r.placement.physical_gpu, 6);
    assert_int_equal(r.placement.numa, 1);
  }
}

void pin_without_gpus(void**) {
  PinOptions p = xml_options("cpu_2s_nogpu.xml");
  PinResult r;
  assert_true(pin_this_rank(p, 3, 4, &r).ok());
  assert_int_equal(r.assigned_gpu, -1);
  if (!have_cuda_device()) {
    assert_int_equal(r.device, -1);
    assert_non_null(strstr(r.log.c_str(), "no GPU"));
  }
  assert_string_equal(r.placement.core_cpus.to_string().c_str(), "12-15");
  assert_string_equal(r.placement.domain_cpus.to_string().c_str(), "8-15");
}

void pin_slices_the_machine_among_its_nodes(void**) {
  // Two MPI nodes of two ranks each on one machine without GPUs (network namespaces,
  // containers sharing its CPUs): each rank's slice is a quarter of the machine's
  // cores, where each node's two ranks alone would take half of them each.
  PinOptions p = xml_options("cpu_2s_nogpu.xml");
  p.cpu_bind = CpuBind::None;  // the XML's CPUs are not this machine's: place, do not bind
  p.machine_size = 4;
  p.machine_rank = 3;
  PinResult r;
  assert_true(pin_this_rank(p, 1, 2, &r).ok());
  if (!have_cuda_device()) {
    assert_string_equal(r.placement.core_cpus.to_string().c_str(), "12-15");
    assert_non_null(strstr(r.log.c_str(), "one of 4 ranks sharing this machine's cores"));
  }
  // The node holds every rank of the machine: its own slices, as before.
  p.machine_size = 2;
  p.machine_rank = 1;
  assert_true(pin_this_rank(p, 1, 2, &r).ok());
  assert_string_equal(r.placement.core_cpus.to_string().c_str(), "8-15");
  assert_null(strstr(r.log.c_str(), "sharing this machine"));
  // GPUs to place the ranks by: each node's ranks stay near their GPUs.
  PinOptions dgx = xml_options("dgx_2s_8gpu.xml");
  dgx.cpu_bind = CpuBind::None;
  PinResult node_only, machine;
  assert_true(pin_this_rank(dgx, 7, 8, &node_only).ok());
  dgx.machine_size = 16;
  dgx.machine_rank = 15;
  assert_true(pin_this_rank(dgx, 7, 8, &machine).ok());
  assert_true(machine.placement.core_cpus == node_only.placement.core_cpus);
  // A place that is none.
  p.machine_rank = 2;
  assert_int_equal(pin_this_rank(p, 1, 2, &r).status, HVD_ERR_INVALID_ARGUMENT);
  p.machine_size = 0;
  p.machine_rank = 0;
  assert_int_equal(pin_this_rank(p, 0, 1, &r).status, HVD_ERR_INVALID_ARGUMENT);
}

void pin_binds_on_this_machine(void**) {
  // The machine's own topology, so the CPUs exist: each mode binds the process to
  // what the assignment says, restricted to the CPUs it may use.
  for (CpuBind mode : {CpuBind::Numa, CpuBind::Core}) {
    PinOptions p;
    p.cpu_bind = mode;
    const int local_size = 2;
    for (int rank = 0; rank < local_size; ++rank) {
      PinResult r;
      Error err = pin_this_rank(p, rank, local_size, &r);
      if (!err.ok()) fprintf(stderr, "%s\n", err.message.c_str());
      assert_true(err.ok());
      const CpuSet want = binding_cpus(mode, r.placement);
      assert_false(want.empty());
      assert_true(r.process_cpus == want);
      assert_true(r.thread_cpus == want);
      CpuSet now;
      assert_true(current_affinity(&now).ok());
      assert_true(now == want.intersect(original));
      assert_true(pin_background_thread(r).ok());
      assert_true(bind_process(original).ok());
    }
  }
}

void pin_auto_binds_only_a_free_process(void**) {
  PinOptions p;  // HVD_CPU_BIND=auto, this machine's topology
  assert_true(p.cpu_bind == CpuBind::Auto);
  // Free to run anywhere, two ranks on the node: each gets its share, as `core`.
  for (int rank = 0; rank < 2; ++rank) {
    PinResult r;
    assert_true(pin_this_rank(p, rank, 2, &r).ok());
    assert_false(r.process_cpus.empty());
    assert_true(r.process_cpus == r.placement.core_cpus);
    assert_non_null(strstr(r.log.c_str(), "cpu bind core (auto)"));
    CpuSet now;
    assert_true(current_affinity(&now).ok());
    assert_true(now == r.process_cpus);
    assert_true(bind_process(original).ok());
  }
  // Alone on the node: nothing to share.
  PinResult alone;
  assert_true(pin_this_rank(p, 0, 1, &alone).ok());
  assert_true(alone.process_cpus.empty());
  // Alone on its node, but the machine holds another node's rank too (the network
  // lab's namespaces): each gets its share of the machine's cores, apart where it
  // has two.
  if (!have_cuda_device()) {
    PinOptions shared = p;
    shared.machine_size = 2;
    CpuSet first;
    for (int rank = 0; rank < 2; ++rank) {
      shared.machine_rank = rank;
      PinResult r;
      assert_true(pin_this_rank(shared, 0, 1, &r).ok());
      assert_false(r.process_cpus.empty());
      assert_true(r.process_cpus == r.placement.core_cpus);
      assert_non_null(strstr(r.log.c_str(), "cpu bind core (auto)"));
      if (rank == 0) first = r.process_cpus;
      else if (original.size() >= 2) assert_true(first.intersect(r.process_cpus).empty());
      assert_true(bind_process(original).ok());
    }
  }
  // Already bound by a launcher: left as it is, and said so.
  if (original.size() > 1) {
    const CpuSet one({original.cpus().front()});
    assert_true(bind_process(one).ok());
    PinResult bound;
    assert_true(pin_this_rank(p, 1, 2, &bound).ok());
    assert_true(bound.process_cpus.empty());
    assert_non_null(strstr(bound.notes.c_str(), "already bound"));
    CpuSet now;
    assert_true(current_affinity(&now).ok());
    assert_true(now == one);
    assert_true(bind_process(original).ok());
  }
  // HOROVOD_THREAD_AFFINITY places the background thread: auto stays out of it.
  p.thread_affinity = "0,0";
  PinResult placed;
  assert_true(pin_this_rank(p, 1, 2, &placed).ok());
  assert_true(placed.process_cpus.empty());
}

void pin_thread_affinity(void**) {
  PinOptions p;
  p.gpu_pinning = false;
  const int cpu = original.cpus().back();
  p.thread_affinity = "0," + std::to_string(cpu);
  PinResult r;
  assert_true(pin_this_rank(p, 1, 2, &r).ok());
  assert_true(r.process_cpus.empty());
  assert_true(r.thread_cpus == CpuSet({cpu}));
  std::thread background([&] {
    assert_true(pin_background_thread(r).ok());
    CpuSet now;
    current_affinity(&now);
    assert_true(now == CpuSet({cpu}));
  });
  background.join();
  p.thread_affinity = "0";
  assert_int_equal(pin_this_rank(p, 1, 2, &r).status, HVD_ERR_INVALID_ARGUMENT);
}

void pin_errors(void**) {
  PinResult r;
  PinOptions p = xml_options("missing.xml");
  Error err = pin_this_rank(p, 0, 1, &r);
  assert_int_equal(err.status, HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message.c_str(), "missing.xml"));
  p = xml_options("dgx_2s_8gpu.xml");
  assert_int_equal(pin_this_rank(p, 2, 2, &r).status, HVD_ERR_INVALID_ARGUMENT);
  assert_int_equal(pin_this_rank(p, 0, 0, &r).status, HVD_ERR_INVALID_ARGUMENT);
  // Binding to the DGX's last cores, which this machine does not have.
  if (original.cpus().back() < 28) {
    p.cpu_bind = CpuBind::Core;
    err = pin_this_rank(p, 7, 8, &r);
    assert_int_equal(err.status, HVD_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message.c_str(), "28-31,60-63"));
  }
  // Pinning off and no binding: the topology is not even read.
  p = xml_options("missing.xml");
  p.gpu_pinning = false;
  assert_true(pin_this_rank(p, 0, 1, &r).ok());
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(binding_modes),
      cmocka_unit_test(thread_affinity_text),
      cmocka_unit_test(cpu_words_and_machine),
      cmocka_unit_test(bind_threads_here),
      cmocka_unit_test(bind_whole_process),
      cmocka_unit_test(pin_on_dgx),
      cmocka_unit_test(pin_without_gpus),
      cmocka_unit_test(pin_slices_the_machine_among_its_nodes),
      cmocka_unit_test(pin_binds_on_this_machine),
      cmocka_unit_test(pin_auto_binds_only_a_free_process),
      cmocka_unit_test(pin_thread_affinity),
      cmocka_unit_test(pin_errors),
  };
  return cmocka_run_group_tests_name("topo-pin", tests, save_affinity, restore_affinity);
}
