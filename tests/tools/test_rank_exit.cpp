// The rank monitor's markers, the relay that takes them out of the job's stderr and
// picks the earliest failure, and the host check before launch.
#include <string>

#include "host_check.h"
#include "rank_exit.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

RankExit exit_of(int rank, int code, int signal, double time) {
  RankExit e;
  e.rank = rank;
  e.exit_code = code;
  e.signal = signal;
  e.time = time;
  e.pid = 1000 + rank;
  e.host = "node" + std::to_string(rank);
  return e;
}

void marker_round_trip(void**) {
  const std::string line = format_rank_exit(exit_of(1, 3, 0, 1700000000.25));
  assert_true(line.rfind(std::string(kRankExitMarker), 0) == 0);
  assert_true(line.back() == '\n');
  auto e = parse_rank_exit(line.substr(kRankExitMarker.size(), line.size() - kRankExitMarker.size() - 1));
  assert_true(e.has_value());
  assert_int_equal(e->rank, 1);
  assert_int_equal(e->exit_code, 3);
  assert_int_equal(e->shell_status(), 3);
  assert_string_equal(e->host.c_str(), "node1");
  assert_string_equal(describe_rank_exit(*e).c_str(), "rank 1 (pid 1001 on node1) exited with status 3");
  RankExit killed = exit_of(0, 0, 9, 1);
  assert_int_equal(killed.shell_status(), 137);
  assert_contains(describe_rank_exit(killed), "was killed by signal 9 (SIGKILL)");
  // Garbage is not a marker.
  assert_false(parse_rank_exit("rank=1 nonsense").has_value());
  assert_false(parse_rank_exit("rank=x code=1 signal=0 time=1 pid=2").has_value());
}

void relay_passes_output_and_takes_markers(void**) {
  StderrRelay relay;
  std::string out = relay.feed("hello\nprogress 10%\r");
  assert_string_equal(out.c_str(), "hello\nprogress 10%\r");  // nothing held back
  assert_false(relay.first_failure().has_value());
  // A marker split over reads, after a partial user line.
  const std::string marker = format_rank_exit(exit_of(2, 5, 0, 20));
  out = relay.feed("no newline" + marker.substr(0, 7));
  assert_string_equal(out.c_str(), "no newline");
  out = relay.feed(marker.substr(7) + "after\n");
  assert_string_equal(out.c_str(), "after\n");
  assert_true(relay.take_new_failure());
  assert_false(relay.take_new_failure());
  assert_int_equal(relay.first_failure()->rank, 2);
  // An earlier exit that arrives later wins (rank 1 failed, rank 2 was killed after).
  relay.feed(format_rank_exit(exit_of(1, 3, 0, 10)));
  assert_int_equal(relay.first_failure()->rank, 1);
  assert_false(relay.take_new_failure());  // still one job-ending event
  // A later one does not, nor does a success.
  relay.feed(format_rank_exit(exit_of(0, 0, 9, 30)) + format_rank_exit(exit_of(3, 0, 0, 1)));
  assert_int_equal(relay.first_failure()->rank, 1);
  // The record separator alone is passed on.
  out = relay.feed("a\x1e" "b\n");
  assert_string_equal(out.c_str(), "a\x1e" "b\n");
  assert_string_equal(relay.finish().c_str(), "");
}

void unresolvable_hosts_are_refused(void**) {
  Resolver fake = [](const std::string& h) {
    return h == "good" || h == "localhost" ? std::string() : std::string("Name or service not known");
  };
  HostList hosts = {{"good", 2}, {"nodeX", 2}, {"nodeY", 1}};
  Status s = check_hosts_resolve(hosts, {}, fake);
  assert_false(s.ok());
  assert_contains(s.error(), "cannot resolve host 'nodeX' (Name or service not known), 'nodeY'");
  assert_contains(s.error(), "nothing was launched");
  assert_true(check_hosts_resolve({{"good", 1}, {"localhost", 1}}, {}, fake).ok());
  // Hydra's fork launcher: names only label simulated nodes.
  assert_true(check_hosts_resolve(hosts, {"-launcher", "fork"}, fake).ok());
  assert_true(check_hosts_resolve(hosts, {"-bootstrap=fork"}, fake).ok());
  // A remote command of the user's maps the names itself (the network lab's does).
  assert_true(check_hosts_resolve(hosts, {"-launcher", "rsh", "-launcher-exec", "/lab/rsh"}, fake)
                  .ok());
  assert_true(check_hosts_resolve(hosts, {"--mca", "plm_rsh_agent", "/lab/rsh"}, fake).ok());
  assert_false(check_hosts_resolve(hosts, {"-launcher", "rsh"}, fake).ok());
  assert_true(check_hosts_resolve({{"localhost", 2}}, {}).ok());  // the real resolver
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(marker_round_trip),
      cmocka_unit_test(relay_passes_output_and_takes_markers),
      cmocka_unit_test(unresolvable_hosts_are_refused),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
