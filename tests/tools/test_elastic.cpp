// The elastic job's parts that need no MPI job: the discovery script's output and runs
// (a real /bin/sh), the blacklist with its cooldown, the placement of ranks, which
// host changes reach the workers, the notification listener over real TCP, what a
// generation's end means, and which discovered hosts do not resolve.
#include <arpa/inet.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "elastic_discovery.h"
#include "elastic_hosts.h"
#include "elastic_listener.h"
#include "elastic_outcome.h"
#include "host_check.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

std::string hosts_text(const Result<HostList>& r) {
  if (!r) return "error: " + r.error();
  return format_host_list(r.value());
}

void discovery_output(void**) {
  assert_string_equal(hosts_text(parse_discovery_output("a:2\nb\n\n c:4 \n", 1)).c_str(), "a:2,b:1,c:4");
  // --slots-per-host for a host without slots; a host printed twice takes the last.
  assert_string_equal(hosts_text(parse_discovery_output("a\nb:3\na:5\n", 2)).c_str(), "a:5,b:3");
  // Nothing available now is a valid answer.
  assert_string_equal(hosts_text(parse_discovery_output("", 1)).c_str(), "");
  assert_contains(parse_discovery_output("a:two\n", 1).error(), "line 1 'a:two': the slots");
  assert_contains(parse_discovery_output("a:1\nb/c\n", 1).error(), "line 2 'b/c'");
  assert_contains(parse_discovery_output("a:0\n", 1).error(), "whole number from 1");
}

void discovery_runs(void**) {
  assert_string_equal(hosts_text(run_discovery_script("printf 'x:2\\ny\\n'", 3)).c_str(), "x:2,y:3");
  assert_contains(run_discovery_script("exit 3", 1).error(), "exited with status 3");
  assert_contains(run_discovery_script("/nonexistent/discover", 1).error(), "could not run it");
  assert_contains(run_discovery_script("echo 'bad host'", 1).error(), "printed a bad line");
  // One that hangs is killed, with what it started, when its time is up.
  assert_contains(run_discovery_script("sleep 30 & sleep 30", 1, 0.3).error(), "did not finish within");
}

void placement_and_blacklist(void**) {
  ElasticHosts hosts;
  hosts.discovered({{"a", 2}, {"b", 2}});
  assert_string_equal(format_host_list(hosts.available(0)).c_str(), "a:2,b:2");
  // A new host goes last; a host gone and back keeps its place.
  hosts.discovered({{"c", 1}, {"b", 2}});
  assert_string_equal(format_host_list(hosts.available(0)).c_str(), "b:2,c:1");
  hosts.discovered({{"c", 1}, {"b", 2}, {"a", 2}});
  assert_string_equal(format_host_list(hosts.available(0)).c_str(), "a:2,b:2,c:1");
  // Without a cooldown a failing host stays out.
  assert_true(hosts.blacklist("b", 0, 0.5) < 0);
  assert_string_equal(format_host_list(hosts.available(1e9)).c_str(), "a:2,c:1");
  assert_true(hosts.is_blacklisted("b", 1e9));
  // --max-np caps the ranks, filling hosts in order.
  assert_string_equal(format_host_list(assign_ranks({{"a", 2}, {"b", 2}, {"c", 1}}, 3)).c_str(), "a:2,b:1");
  assert_string_equal(format_host_list(assign_ranks({{"a", 2}, {"b", 2}}, std::nullopt)).c_str(), "a:2,b:2");
  assert_string_equal(host_of_rank({{"a", 2}, {"b", 1}}, 2)->c_str(), "b");
  assert_false(host_of_rank({{"a", 2}, {"b", 1}}, 3).has_value());
}

void cooldown(void**) {
  ElasticHosts hosts(std::make_pair(int64_t{10}, int64_t{100}));
  hosts.discovered({{"a", 1}, {"b", 1}});
  // First failure: MIN plus a random part of MIN; then doubling, within MAX.
  assert_true(hosts.blacklist("a", 0, 0) == 10);
  assert_string_equal(format_host_list(hosts.available(5)).c_str(), "b:1");
  // Failing again while out does not extend it.
  assert_true(hosts.blacklist("a", 5, 0) == 5);
  assert_string_equal(format_host_list(hosts.available(10)).c_str(), "a:1,b:1");
  assert_true(hosts.blacklist("a", 20, 0.5) == 25);
  assert_true(hosts.blacklist("a", 100, 0) == 40);
  assert_true(hosts.blacklist("a", 200, 0) == 80);
  assert_true(hosts.blacklist("a", 300, 0) == 100);
}

void host_updates(void**) {
  const HostList running = {{"a", 2}, {"b", 2}};
  assert_int_equal(host_update_result(running, {{"a", 2}, {"b", 2}}, std::nullopt), kNoUpdate);
  assert_int_equal(host_update_result(running, {{"a", 2}}, std::nullopt), kHostsRemoved);
  assert_int_equal(host_update_result(running, {{"a", 2}, {"b", 1}}, std::nullopt), kHostsRemoved);
  assert_int_equal(host_update_result(running, {{"a", 3}, {"b", 2}}, std::nullopt), kHostsAdded);
  assert_int_equal(host_update_result(running, {{"a", 2}, {"c", 2}}, std::nullopt),
                   kHostsRemoved | kHostsAdded);
  // Slots added beyond --max-np change nothing.
  assert_int_equal(host_update_result(running, {{"a", 2}, {"b", 2}, {"c", 4}}, 4), kNoUpdate);
  assert_int_equal(host_update_result({{"a", 2}}, {{"a", 3}}, 3), kHostsAdded);
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

std::string read_line(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

void listener(void**) {
  const std::string token(32, 'a');
  auto started = ElasticListener::start(token);
  assert_true(started.ok());
  ElasticListener& l = **started;
  l.new_generation(1);
  // A HELLO with another token, or of another generation, is closed without a word.
  for (const std::string& hello : {std::string("HELLO ") + std::string(32, 'b') + " 1\n",
                                   "HELLO " + token + " 0\n"}) {
    const int fd = connect_to(l.port());
    assert_true(::write(fd, hello.data(), hello.size()) > 0);
    assert_string_equal(read_line(fd).c_str(), "");
    ::close(fd);
  }
  const int fd = connect_to(l.port());
  const std::string hello = "HELLO " + token + " 1\n";
  assert_true(::write(fd, hello.data(), hello.size()) > 0);
  l.hosts_updated(kHostsAdded);
  const std::string line = read_line(fd);
  assert_contains(line, "HOSTS_UPDATED ");
  assert_true(line.size() > 16 && line.substr(line.size() - 2) == " 2");
  // One arriving after the change is told too.
  const int late = connect_to(l.port());
  assert_true(::write(late, hello.data(), hello.size()) > 0);
  assert_string_equal(read_line(late).c_str(), line.c_str());
  ::close(late);
  // A new generation closes the last one's connections.
  l.new_generation(2);
  assert_string_equal(read_line(fd).c_str(), "");
  ::close(fd);
}

void address(void**) {
  assert_string_equal(advertised_address({{"localhost", 2}}, {}, std::nullopt)->c_str(), "127.0.0.1");
  assert_string_equal(advertised_address({{"far", 2}}, {}, std::string("10.1.2.3"))->c_str(), "10.1.2.3");
  assert_contains(advertised_address({{"no-such-host.invalid", 1}}, {}, std::nullopt).error(),
                  "HVDRUN_ELASTIC_ADDRESS");
}

RankExit exited(int rank, int code, int signal = 0) {
  RankExit r;
  r.rank = rank;
  r.exit_code = code;
  r.signal = signal;
  r.pid = 100 + rank;
  return r;
}

void generation_ends(void**) {
  const HostList ranks = {{"a", 2}, {"b", 2}};
  JobReport done;
  done.ranks_ended = 4;
  assert_true(judge_generation(done, ranks, 4).end == GenerationEnd::kDone);

  JobReport moved;
  moved.status = kElasticRestartStatus;
  moved.failures = {exited(0, kElasticRestartStatus), exited(2, 0, SIGTERM)};
  assert_true(judge_generation(moved, ranks, 4).end == GenerationEnd::kLeftForNewHosts);

  // Rank 3 failed on its own; the 76s and the cleanup's kills are not blamed.
  JobReport failed;
  failed.status = 1;
  failed.failures = {exited(0, kElasticPeerFailedStatus), exited(3, 1), exited(1, 0, SIGKILL)};
  GenerationVerdict v = judge_generation(failed, ranks, 4);
  assert_true(v.end == GenerationEnd::kFailed);
  assert_true(v.blamed == std::vector<std::string>{"b"});
  assert_string_equal(v.after.c_str(), ", after host b failed (rank 3 exited with status 1)");

  // Only 76s: no host is blamed.
  JobReport followers;
  followers.status = kElasticPeerFailedStatus;
  followers.failures = {exited(0, kElasticPeerFailedStatus), exited(1, kElasticPeerFailedStatus)};
  assert_true(judge_generation(followers, ranks, 4).blamed.empty());
}

void silent_hosts_are_blamed(void**) {
  const HostList ranks = {{"a", 2}, {"b", 2}};
  // Host b went silent while the ranks of a failed in their collectives (76): b is
  // left out as a lost host would be.
  JobReport cut;
  cut.status = 1;
  cut.failures = {exited(0, kElasticPeerFailedStatus), exited(1, kElasticPeerFailedStatus)};
  cut.ranks_ended = 2;
  cut.silent_ranks = {2, 3};
  cut.silent_hosts = {"b"};
  GenerationVerdict v = judge_generation(cut, ranks, 4);
  assert_true(v.end == GenerationEnd::kFailed);
  assert_true(v.blamed == std::vector<std::string>{"b"});
  assert_string_equal(v.cause.c_str(), "rank(s) 2,3 on host b stopped reaching the launcher");
  assert_string_equal(v.after.c_str(), ", after rank(s) 2,3 on host b stopped reaching the launcher");

  // Ranks that left for new hosts do not hide a host that went silent.
  JobReport moving = cut;
  moving.failures = {exited(0, kElasticRestartStatus), exited(1, kElasticRestartStatus)};
  assert_true(judge_generation(moving, ranks, 4).end == GenerationEnd::kFailed);

  // A rank of a that failed on its own is blamed beside b.
  JobReport both = cut;
  both.failures = {exited(1, 3)};
  v = judge_generation(both, ranks, 4);
  assert_true((v.blamed == std::vector<std::string>{"b", "a"}));
  assert_contains(v.cause, "rank 1 (pid 101) exited with status 3, and rank(s) 2,3 on host b");
  assert_string_equal(v.after.c_str(),
                      ", after rank 1 exited with status 3, and rank(s) 2,3 on host b stopped reaching the launcher");

  // Every other rank returned 0 first: the function returned on every rank, done.
  JobReport after_work = cut;
  after_work.failures.clear();
  v = judge_generation(after_work, ranks, 4);
  assert_true(v.end == GenerationEnd::kDone);
  assert_string_equal(v.done_note.c_str(), "rank(s) 2,3 on host b stopped reaching the launcher");
}

void unresolvable(void**) {
  const HostList hosts = {{"localhost", 2}, {"no-such-host.invalid", 1}};
  const auto bad = unresolvable_hosts(hosts, {});
  assert_int_equal(bad.size(), 1);
  assert_string_equal(bad[0].first.c_str(), "no-such-host.invalid");
  assert_false(bad[0].second.empty());
  // Names that only label nodes for the fork launcher are not looked up.
  assert_true(unresolvable_hosts(hosts, {"-launcher", "fork"}).empty());
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(discovery_output), cmocka_unit_test(discovery_runs),
      cmocka_unit_test(placement_and_blacklist), cmocka_unit_test(cooldown),
      cmocka_unit_test(host_updates), cmocka_unit_test(listener), cmocka_unit_test(address),
      cmocka_unit_test(generation_ends), cmocka_unit_test(silent_hosts_are_blamed),
      cmocka_unit_test(unresolvable),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
