// Host lists (-H) and hostfiles: every accepted form and every error message; the
// check of --network-interface against this machine's interfaces.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unistd.h>

#include "host_check.h"
#include "hosts.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

std::string hosts_text(const Result<HostList>& r) {
  if (!r) return "error: " + r.error();
  return format_host_list(r.value());
}

void host_list_forms(void**) {
  assert_string_equal(hosts_text(parse_host_list("localhost:2")).c_str(), "localhost:2");
  assert_string_equal(hosts_text(parse_host_list("a:2,b:4")).c_str(), "a:2,b:4");
  // A host without :N has one slot; uneven slots are fine.
  assert_string_equal(hosts_text(parse_host_list("a,b:3,c")).c_str(), "a:1,b:3,c:1");
  // Spaces around entries are ignored.
  assert_string_equal(hosts_text(parse_host_list(" a:1 , b:2 ")).c_str(), "a:1,b:2");
  // A repeated host adds its slots, keeping its first position.
  assert_string_equal(hosts_text(parse_host_list("a:1,b:2,a:3")).c_str(), "a:4,b:2");
  assert_string_equal(hosts_text(parse_host_list("10.0.0.1:8,node-1.example.com.:2,gpu_07"))
                          .c_str(),
                      "10.0.0.1:8,node-1.example.com.:2,gpu_07:1");
  auto r = parse_host_list("x:3,y:5");
  assert_true(r.ok());
  assert_int_equal(total_slots(r.value()), 8);
}

void host_list_errors(void**) {
  assert_contains(parse_host_list("").error(), "host list is empty");
  assert_contains(parse_host_list("a,,b").error(), "empty entry");
  assert_contains(parse_host_list("a,").error(), "empty entry");
  assert_contains(parse_host_list(":2").error(), "empty host name");
  assert_contains(parse_host_list("a:0").error(), "slots must be at least 1");
  assert_contains(parse_host_list("a:-1").error(), "slots must be at least 1");
  assert_contains(parse_host_list("a:x").error(), "slots must be a positive whole number");
  assert_contains(parse_host_list("a:2:3").error(), "slots must be a positive whole number");
  assert_contains(parse_host_list("a:1.5").error(), "slots must be a positive whole number");
  assert_contains(parse_host_list("a:").error(), "slots must be a positive whole number");
  assert_contains(parse_host_list("a:99999999999999999999").error(), "more than the limit");
  assert_contains(parse_host_list("a:2000000").error(), "more than the limit");
  assert_contains(parse_host_list("a;rm -rf:2").error(), "contains ';'");
  assert_contains(parse_host_list("host name:2").error(), "contains ' '");
  assert_contains(parse_host_list("a..b").error(), "empty label");
  assert_contains(parse_host_list("-a").error(), "starts or ends with '-'");
  assert_contains(parse_host_list(std::string("a\x01", 2)).error(), "byte 0x01");
  assert_contains(parse_host_list(std::string(64, 'a')).error(), "longer than 63");
  // Sums of repeated hosts are bounded too.
  assert_contains(parse_host_list("a:1000000,a:1000000").error(), "slots in all");
}

void host_name_rules(void**) {
  assert_string_equal(host_name_problem("node1").c_str(), "");
  assert_string_equal(host_name_problem("a.b.c").c_str(), "");
  assert_contains(host_name_problem("a/b"), "contains '/'");
  assert_contains(host_name_problem("[::1]"), "contains '['");
  std::string long_name;
  for (int i = 0; i < 5; ++i) long_name += std::string(60, 'x') + ".";
  assert_contains(host_name_problem(long_name), "longer than 253");
}

void hostfile_forms(void**) {
  const char* text =
      "# cluster\n"
      "node1 slots=4\n"
      "  node2:2   # trailing comment\n"
      "\n"
      "node3\n"
      "node4 slots=2 max_slots=8\r\n"
      "node1 slots=1\n";
  std::vector<std::string> warnings;
  auto r = parse_hostfile(text, "hosts.txt", &warnings);
  assert_string_equal(hosts_text(r).c_str(), "node1:5,node2:2,node3:1,node4:2");
  // node1 twice: merged, and said, with both line numbers.
  assert_words(warnings, "hosts.txt: host 'node1' is on lines 2 and 7; its slots are added up "
                         "(node1:5). Give each host one line if that is not what you meant");
  warnings.clear();
  assert_string_equal(hosts_text(parse_hostfile("a\nb:2\na:2\na slots=1\n", "f", &warnings)).c_str(),
                      "a:4,b:2");
  assert_words(warnings, "f: host 'a' is on lines 1, 3 and 4; its slots are added up (a:4). "
                         "Give each host one line if that is not what you meant");
  warnings.clear();
  parse_hostfile("a\nb\n", "f", &warnings);
  assert_true(warnings.empty());
  // No final newline.
  assert_string_equal(hosts_text(parse_hostfile("a slots=2", "f")).c_str(), "a:2");
}

void hostfile_errors(void**) {
  assert_contains(parse_hostfile("# nothing\n\n", "f").error(), "f: no hosts in the file");
  assert_contains(parse_hostfile("", "f").error(), "no hosts");
  assert_contains(parse_hostfile("a slots=2\nb slots=x\n", "f").error(),
                  "f line 2, host 'b': slots must be a positive whole number");
  assert_contains(parse_hostfile("a\nb cpus=4\n", "f").error(),
                  "f line 2: expected 'slots=N' after the host name, found 'cpus=4'");
  assert_contains(parse_hostfile("a:2 slots=2\n", "f").error(), "not both");
  assert_contains(parse_hostfile("a slots=1 slots=2\n", "f").error(), "given twice");
  assert_contains(parse_hostfile("\n\nb@d slots=1\n", "f").error(), "f line 3: host name 'b@d'");
  assert_contains(parse_hostfile("a:0\n", "f").error(), "f line 1, host 'a': slots must be at least 1");
}

void hostfile_reading(void**) {
  char path[] = "/tmp/hvdrun_hostfile_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char text[] = "alpha slots=2\nbeta:3\n";
  assert_int_equal(write(fd, text, sizeof text - 1), sizeof text - 1);
  close(fd);
  assert_string_equal(hosts_text(read_hostfile(path)).c_str(), "alpha:2,beta:3");
  unlink(path);
  assert_contains(read_hostfile(path).error(),
                  std::string("--hostfile ") + path + ": cannot read it (No such file");
  assert_contains(read_hostfile("/tmp").error(), "it is a directory");
}

void first_slots_in_order(void**) {
  HostList hosts = *parse_host_list("a:2,b:4,c:1");
  assert_string_equal(format_host_list(first_slots(hosts, 1)).c_str(), "a:1");
  assert_string_equal(format_host_list(first_slots(hosts, 2)).c_str(), "a:2");
  assert_string_equal(format_host_list(first_slots(hosts, 3)).c_str(), "a:2,b:1");
  assert_string_equal(format_host_list(first_slots(hosts, 7)).c_str(), "a:2,b:4,c:1");
  assert_string_equal(format_host_list(first_slots(hosts, 9)).c_str(), "a:2,b:4,c:1");
  assert_true(first_slots(hosts, 0).empty());
}

void network_interfaces_checked(void**) {
  const std::vector<std::string> here = {"eth0", "ib0", "lo"};
  assert_true(bool(check_network_interfaces({"eth0"}, here)));
  assert_true(bool(check_network_interfaces({"ib0", "eth0"}, here)));
  assert_string_equal(check_network_interfaces({"bogus0"}, here).error().c_str(),
                      "--network-interface: this machine has no network interface 'bogus0'; "
                      "its interfaces are eth0, ib0, lo (ip link lists them); nothing was "
                      "launched");
  assert_contains(check_network_interfaces({"eth0", "x1", "x2", "x1"}, here).error(),
                  "no network interface named x1, x2;");
  // This machine has a loopback interface; ranks run here without hosts, on this
  // machine's names, and on any names with Hydra's fork launcher.
  const auto mine = local_interfaces();
  assert_true(std::find(mine.begin(), mine.end(), "lo") != mine.end());
  assert_true(ranks_run_here({}, {}));
  assert_true(ranks_run_here(*parse_host_list("elsewhere:1,localhost:1"), {}));
  assert_false(ranks_run_here(*parse_host_list("elsewhere:2"), {}));
  assert_true(ranks_run_here(*parse_host_list("nodeA:2"), {"-launcher", "fork"}));
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(host_list_forms),   cmocka_unit_test(host_list_errors),
      cmocka_unit_test(host_name_rules),   cmocka_unit_test(hostfile_forms),
      cmocka_unit_test(hostfile_errors),   cmocka_unit_test(hostfile_reading),
      cmocka_unit_test(first_slots_in_order), cmocka_unit_test(network_interfaces_checked),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
