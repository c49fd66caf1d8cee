// Naming a lost node: the rank placement hvdrun asked for, the launchers' lines that
// say a connection was lost, Hydra's proxy ids, and the decision from them.
#include <string>

#include "lost_node.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

HostList hosts_of(std::initializer_list<HostSlots> list) { return HostList(list); }

void placement_fills_slots_in_order(void**) {
  const HostList hosts = hosts_of({{"a", 2}, {"b", 1}, {"c", 1}});
  auto r = planned_ranks_by_host(hosts, 4, MpiFlavor::Mpich, false);
  assert_int_equal(r.size(), 3);
  assert_true((r[0] == std::vector<int>{0, 1}) && (r[1] == std::vector<int>{2}) &&
              (r[2] == std::vector<int>{3}));
  // Fewer ranks than slots: the last host holds none (Hydra starts no proxy there).
  r = planned_ranks_by_host(hosts, 2, MpiFlavor::OpenMpi, false);
  assert_true(r[0] == (std::vector<int>{0, 1}) && r[1].empty() && r[2].empty());
  // Hydra goes round the list again for more ranks than slots.
  r = planned_ranks_by_host(hosts_of({{"a", 1}, {"b", 1}}), 4, MpiFlavor::Mpich, false);
  assert_true(r[0] == (std::vector<int>{0, 2}) && r[1] == (std::vector<int>{1, 3}));
  // Not known: Open MPI beyond its slots, a mapping of the user's own, no hosts.
  assert_true(planned_ranks_by_host(hosts_of({{"a", 1}}), 2, MpiFlavor::OpenMpi, false).empty());
  assert_true(planned_ranks_by_host(hosts, 2, MpiFlavor::Mpich, true).empty());
  assert_true(planned_ranks_by_host({}, 2, MpiFlavor::Mpich, false).empty());
}

void launcher_lines_say_a_connection_was_lost(void**) {
  LauncherLossLines hydra;
  hydra.feed("[0] training\n[mpiexec@vm] control_cb (pm/pmiserv/pmiserv_cb.c:206): ass");
  assert_false(hydra.lost_connection());
  hydra.feed("ert (!closed) failed\n");
  assert_true(hydra.lost_connection());
  assert_false(hydra.named_node().has_value());

  LauncherLossLines ompi;
  ompi.feed("-----\nORTE has lost communication with a remote daemon.\n\n"
            "  HNP daemon   : [[4242,0],0] on node head\n"
            "  Remote daemon: [[4242,0],1] on node node-7\n\nThis is usually ...\n");
  assert_true(ompi.lost_connection());
  assert_string_equal(ompi.named_node()->c_str(), "node-7");
  assert_int_equal(*ompi.job_family(), 4242);

  LauncherLossLines quiet;
  quiet.feed("Remote daemon: [[1,0],1] on node x\nassert (!closed) failed elsewhere\n");
  assert_false(quiet.lost_connection());
}

void proxy_id_from_command_lines(void**) {
  using namespace std::string_literals;
  assert_int_equal(hydra_proxy_id("ssh\0-x\0node1\0\"/usr/bin/hydra_pmi_proxy\"\0--control-port\0"
                                  "h:1\0--proxy-id\0003\0"s),
                   3);
  // A remote shell's one word.
  assert_int_equal(hydra_proxy_id("rsh\0node1\0hydra_pmi_proxy --rmk user --proxy-id 12\0"s), 12);
  assert_int_equal(hydra_proxy_id("mpiexec\0-n\0002\0prog\0"s), -1);
  assert_int_equal(hydra_proxy_id("x\0--proxy-id\0abc\0"s), -1);
  // Open MPI's daemon k serves host k-1 (vpid 0 is mpirun); its job id names the family.
  const std::string orted = "rsh\0n1\0orted -mca ess \"env\" -mca ess_base_jobid \"113049600\" "
                            "-mca ess_base_vpid 2 -mca ess_base_num_procs \"3\"\0"s;
  assert_int_equal(hydra_proxy_id(orted), 1);
  assert_int_equal(openmpi_job_family(orted), 113049600 >> 16);
}

void lost_node_named_from_observations(void**) {
  const HostList hosts = hosts_of({{"n0", 2}, {"n1", 2}});
  const auto ranks = planned_ranks_by_host(hosts, 4, MpiFlavor::Mpich, false);
  LauncherLossLines hydra;
  hydra.feed("[mpiexec@vm] control_cb (pm/pmiserv/pmiserv_cb.c:206): assert (!closed) failed\n");
  auto lost = find_lost_nodes(hydra, {1}, hosts, ranks, {});
  assert_int_equal(lost.size(), 1);
  assert_string_equal(describe_lost_nodes(lost).c_str(), "host n1 was lost (ranks 2,3)");
  // Every proxy ended before the launcher, or none seen, and no rank said a word: no
  // node is named.
  assert_true(find_lost_nodes(hydra, {0, 1}, hosts, ranks, {}).empty());
  assert_true(find_lost_nodes(hydra, {}, hosts, ranks, {}).empty());
  // ... but the one host whose ranks said nothing while another's did is named.
  lost = find_lost_nodes(hydra, {0, 1}, hosts, ranks, {0});
  assert_string_equal(describe_lost_nodes(lost).c_str(), "host n1 was lost (ranks 2,3)");
  lost = find_lost_nodes(hydra, {}, hosts, ranks, {1});
  assert_string_equal(describe_lost_nodes(lost).c_str(), "host n1 was lost (ranks 2,3)");
  // Two silent hosts of three: no telling which.
  const HostList three = hosts_of({{"n0", 1}, {"n1", 1}, {"n2", 1}});
  const auto ranks3 = planned_ranks_by_host(three, 3, MpiFlavor::Mpich, false);
  assert_true(find_lost_nodes(hydra, {}, three, ranks3, {0}).empty());
  // A rank of that host reported its exit: it did not vanish.
  assert_true(find_lost_nodes(hydra, {1}, hosts, ranks, {3}).empty());
  // Nothing from the launcher: no loss, whatever ended.
  assert_true(find_lost_nodes(LauncherLossLines{}, {1}, hosts, ranks, {}).empty());

  LauncherLossLines ompi;
  ompi.feed("ORTE has lost communication with a remote daemon.\n"
            "  Remote daemon: [[4242,0],1] on node n0\n");
  lost = find_lost_nodes(ompi, {}, hosts, ranks, {2, 3});
  assert_string_equal(describe_lost_nodes(lost).c_str(), "host n0 was lost (ranks 0,1)");
  // A node by a name not in the host list: named, ranks unknown.
  ompi = LauncherLossLines{};
  ompi.feed("ORTE has lost communication with a remote daemon.\n"
            "  Remote daemon: [[4242,0],1] on node n1.cluster\n");
  assert_string_equal(describe_lost_nodes(find_lost_nodes(ompi, {}, hosts, ranks, {})).c_str(),
                      "host n1.cluster was lost");
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(placement_fills_slots_in_order),
      cmocka_unit_test(launcher_lines_say_a_connection_was_lost),
      cmocka_unit_test(proxy_id_from_command_lines),
      cmocka_unit_test(lost_node_named_from_observations),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
