// The rank monitor's markers, the relay that takes them out of the job's stderr and
// picks the earliest failure, and the host check before launch.
#include <string>
#include <vector>

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
  assert_string_equal(out.c_str(), "\nafter\n");  // the partial line is ended
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

void relay_takes_markers_with_rank_prefixes(void**) {
  // Hydra's -prepend-rank and Open MPI's --tag-output put the rank before every line,
  // markers included: the whole line goes, and ordinary prefixed lines stay.
  const std::string m1 = format_rank_exit(exit_of(1, 3, 0, 10));
  StderrRelay hydra;
  std::string out = hydra.feed("[0] hello\n[1");
  assert_string_equal(out.c_str(), "[0] hello\n");  // "[1" may be a prefix: held
  out = hydra.feed("] " + m1.substr(0, 5));
  assert_string_equal(out.c_str(), "");
  out = hydra.feed(m1.substr(5) + "[0] [x] not a prefix\n");
  assert_string_equal(out.c_str(), "[0] [x] not a prefix\n");
  assert_int_equal(hydra.first_failure()->rank, 1);
  StderrRelay ompi;
  out = ompi.feed("[1,0]<stderr>:warn\n[1,1]<stderr>:" + m1 + "[1,0]<stdout>:x\n");
  assert_string_equal(out.c_str(), "[1,0]<stderr>:warn\n[1,0]<stdout>:x\n");
  assert_int_equal(ompi.first_failure()->rank, 1);
  // After a partial line, Open MPI tags the next chunk.
  StderrRelay partial;
  out = partial.feed("[1,1]<stderr>:50%[1,1]<stderr>:" + m1);
  assert_string_equal(out.c_str(), "[1,1]<stderr>:50%\n");
  assert_true(partial.first_failure().has_value());
  assert_string_equal(partial.finish().c_str(), "");
  size_t n = 0;
  bool incomplete = false;
  n = rank_prefix_length("[12] x", &incomplete);
  assert_int_equal(n, 5);
  n = rank_prefix_length("[1,12]<stdout>:x", &incomplete);
  assert_int_equal(n, 15);
  assert_int_equal(rank_prefix_length("[1,1]<std", &incomplete), 0);
  assert_true(incomplete);
  assert_int_equal(rank_prefix_length("[a]", &incomplete), 0);
  assert_false(incomplete);
}

RankExit clean_exit(int rank, RankMpi mpi, double time) {
  RankExit e = exit_of(rank, 0, 0, time);
  e.mpi = mpi;
  return e;
}

void early_clean_exit_ends_the_job(void**) {
  // Rank 1 returns 0 before hvd_init while rank 0 started MPI: rank 0 waits in
  // MPI_Init for ever, so rank 1's exit is the failure (status 1).
  JobWatch w;
  w.rank_exited(clean_exit(1, RankMpi::None, 10));
  assert_false(w.first_failure().has_value());  // rank 0 may not use MPI at all
  w.rank_began_init(0);
  assert_true(w.take_new_failure());
  assert_int_equal(w.first_failure()->rank, 1);
  assert_int_equal(w.first_failure()->shell_status(), 1);
  assert_contains(describe_rank_exit(*w.first_failure()), "without calling hvd_init");
  // The other order, through the markers as the relay passes them.
  JobWatch m;
  std::string mpi_marker = std::string(kRankMpiMarker) + "rank=0 pid=5 host=h";
  m.take_marker(mpi_marker);
  std::string exit_marker = format_rank_exit(clean_exit(1, RankMpi::None, 10));
  exit_marker.pop_back();
  m.take_marker(exit_marker);
  assert_true(m.take_new_failure());

  // A rank that finishes after libhvd was initialized never ends the job: its peers
  // may still be finishing. Nor one that may have finished MPI without libhvd, nor an
  // early exit when the others loaded no MPI (hostname), or have all exited.
  JobWatch done;
  done.rank_began_init(0);
  done.rank_began_init(1);
  done.rank_exited(clean_exit(1, RankMpi::Hvd, 10));
  done.rank_exited(clean_exit(0, RankMpi::Unknown, 11));
  assert_false(done.first_failure().has_value());
  JobWatch plain;
  plain.rank_exited(clean_exit(0, RankMpi::None, 1));
  plain.rank_exited(clean_exit(1, RankMpi::None, 2));
  assert_false(plain.first_failure().has_value());
  JobWatch all_gone;
  all_gone.rank_began_init(0);
  all_gone.rank_exited(exit_of(0, 0, 0, 5));
  all_gone.rank_exited(clean_exit(1, RankMpi::None, 6));
  assert_false(all_gone.first_failure().has_value());
  // A real failure before the early exit is the one reported.
  JobWatch both;
  both.rank_exited(exit_of(2, 4, 0, 1));
  both.rank_exited(clean_exit(1, RankMpi::None, 3));
  both.rank_began_init(0);
  assert_int_equal(both.first_failure()->rank, 2);
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

double g_clock = 0;
double test_clock() { return g_clock; }

void silent_ranks_after_others_exited(void**) {
  // Ranks 0-2 say they are alive; rank 0 exits; rank 1 goes on speaking, rank 2 falls
  // silent: only rank 2 is silent, and only once it has been silent long enough.
  JobWatch w;
  w.now_seconds = test_clock;
  auto alive = [&](int rank) { w.take_marker(std::string(kRankAliveMarker) + "rank=" + std::to_string(rank)); };
  g_clock = 100;
  for (int r = 0; r < 3; ++r) alive(r);
  assert_true(w.silent_since(150, 3).empty());  // nobody has exited yet
  g_clock = 105;
  std::string exit_marker = format_rank_exit(clean_exit(0, RankMpi::Hvd, 105));
  exit_marker.pop_back();
  w.take_marker(exit_marker);
  alive(1);
  assert_true(w.silent_since(100, 3).empty());  // nobody silent since before 100
  const std::vector<int> silent = w.silent_since(104, 3);
  assert_int_equal(silent.size(), 1);
  assert_int_equal(silent[0], 2);
  // A rank never heard from counts from the first word of any (100).
  assert_int_equal(w.silent_since(100, 4).size(), 0);
  const std::vector<int> with_unheard = w.silent_since(101, 4);
  assert_int_equal(with_unheard.size(), 2);
  assert_int_equal(with_unheard[1], 3);
  // Without alive markers (monitors writing to files), nobody is taken for silent.
  JobWatch files;
  files.now_seconds = test_clock;
  files.take_marker(exit_marker);
  assert_true(files.silent_since(1e9, 3).empty());
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(marker_round_trip),
      cmocka_unit_test(relay_passes_output_and_takes_markers),
      cmocka_unit_test(relay_takes_markers_with_rank_prefixes),
      cmocka_unit_test(early_clean_exit_ends_the_job),
      cmocka_unit_test(silent_ranks_after_others_exited),
      cmocka_unit_test(unresolvable_hosts_are_refused),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
