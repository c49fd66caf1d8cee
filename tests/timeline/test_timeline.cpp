// The timeline: files that Python's JSON parser reads, with the events in the order
// they were recorded, balanced phases, escaped names, restarts, concurrent recording,
// and a file cut short by a dying process that lacks only the closing bracket.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "timeline/timeline.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace hvd;

namespace {

std::string g_dir;

std::string temp_path(const char* name) { return g_dir + "/" + name; }

// Runs the checker on path; returns its summary lines and asserts it succeeded.
std::vector<std::string> check(const std::string& path, bool unterminated = false) {
  std::string cmd = std::string("'") + std::getenv("HVD_TEST_PYTHON") + "' '" +
                    std::getenv("HVD_TIMELINE_CHECKER") + "' " +
                    (unterminated ? "--unterminated " : "") + "'" + path + "'";
  FILE* p = popen(cmd.c_str(), "r");
  assert_non_null(p);
  std::vector<std::string> lines;
  std::string line;
  int c;
  while ((c = std::fgetc(p)) != EOF) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line.push_back(static_cast<char>(c));
    }
  }
  int status = pclose(p);
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    fail_msg("check_timeline.py rejected %s (status %d)", path.c_str(), status);
  return lines;
}

void assert_lines(const std::vector<std::string>& got, const std::vector<std::string>& want) {
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (got[i] != want[i])
      fail_msg("event %zu: got '%s', expected '%s'", i, got[i].c_str(), want[i].c_str());
  assert_int_equal(got.size(), want.size());
}

size_t count_prefix(const std::vector<std::string>& lines, const std::string& prefix) {
  return static_cast<size_t>(std::count_if(lines.begin(), lines.end(), [&](const std::string& l) {
    return l.compare(0, prefix.size(), prefix) == 0;
  }));
}

void one_tensor_life(void**) {
  std::string path = temp_path("life.json");
  Timeline tl;
  std::string error;
  assert_true(tl.start(path, true, &error));
  assert_true(tl.enabled());
  tl.mark_cycle();
  tl.negotiate_start("grad/w", "ALLREDUCE");
  tl.negotiate_rank_ready("grad/w", 1);
  tl.negotiate_rank_ready("grad/w", 0);
  tl.negotiate_end("grad/w");
  tl.op_start("grad/w", "ALLREDUCE", 4096);
  tl.activity_start("grad/w", "QUEUE");
  tl.activity_end("grad/w");
  tl.activity_start("grad/w", "MEMCPY_IN_FUSION_BUFFER");
  tl.activity_end("grad/w");
  tl.activity_start("grad/w", "MPI_ALLREDUCE");
  tl.activity_end("grad/w");
  tl.activity_start("grad/w", "MEMCPY_OUT_FUSION_BUFFER");
  tl.activity_end("grad/w");
  tl.op_end("grad/w", "OK");
  tl.counters("traffic_bytes", 10, 20, 30);
  tl.step_counter(5'000'000, 2'000'000);  // a 5 ms step with 2 ms of exposed wait
  tl.stop();
  assert_false(tl.enabled());
  assert_lines(check(path), {
      "i libhvd CYCLE_START",
      "B grad/w NEGOTIATE_ALLREDUCE",
      "i grad/w 1 {\"rank\":1}",
      "i grad/w 0 {\"rank\":0}",
      "E grad/w -",
      "B grad/w ALLREDUCE {\"bytes\":4096}",
      "B grad/w QUEUE",
      "E grad/w -",
      "B grad/w MEMCPY_IN_FUSION_BUFFER",
      "E grad/w -",
      "B grad/w MPI_ALLREDUCE",
      "E grad/w -",
      "B grad/w MEMCPY_OUT_FUSION_BUFFER",
      "E grad/w -",
      "E grad/w - {\"status\":\"OK\"}",
      "C libhvd traffic_bytes {\"cross\":20,\"global\":30,\"local\":10}",
      "C libhvd step_time_us {\"exposed_wait_us\":2000,\"rest_of_step_us\":3000}",
  });
}

void phases_stay_balanced(void**) {
  std::string path = temp_path("balanced.json");
  Timeline tl;
  assert_true(tl.start(path, false, nullptr));
  tl.mark_cycle();                    // cycles not marked: nothing
  tl.activity_end("never-started");   // ignored
  tl.op_end("never-started", "OK");   // ignored
  tl.negotiate_start("a", "BROADCAST");
  tl.op_start("a", "BROADCAST");      // closes negotiation first
  tl.activity_start("a", "WAIT_FOR_DATA");
  tl.activity_start("a", "MPI_BCAST");
  tl.activity_end("a");
  tl.activity_end("a");
  tl.activity_end("a");               // one too many: ignored
  tl.op_end("a");
  tl.negotiate_start("b", "ALLGATHER");
  tl.negotiate_start("b", "ALLGATHER");  // reused before it finished: restarts
  tl.op_start("b", "ALLGATHER");
  tl.activity_start("b", "MPI_ALLGATHER");
  tl.op_end("b", "failed: mismatch", "HOROVOD_INT8", "[7, 2]");  // closes the open activity too
  tl.negotiate_start("c", "ALLREDUCE");  // still open at stop: closed there
  tl.stop();
  std::vector<std::string> lines = check(path);
  assert_lines(lines, {
      "B a NEGOTIATE_BROADCAST",
      "E a -",
      "B a BROADCAST",
      "B a WAIT_FOR_DATA",
      "B a MPI_BCAST",
      "E a -",
      "E a -",
      "E a -",
      "B b NEGOTIATE_ALLGATHER",
      "E b -",
      "B b NEGOTIATE_ALLGATHER",
      "E b -",
      "B b ALLGATHER",
      "B b MPI_ALLGATHER",
      "E b -",
      "E b - {\"dtype\":\"HOROVOD_INT8\",\"shape\":\"[7, 2]\",\"status\":\"failed: mismatch\"}",
      "B c NEGOTIATE_ALLREDUCE",
      "E c -",
  });
}

void names_are_escaped(void**) {
  std::string path = temp_path("escaped.json");
  Timeline tl;
  assert_true(tl.start(path, false, nullptr));
  const std::string odd = std::string("q\"b\\s\nt\x01 \xc3\xa9 bad\xff\xc3 end");
  tl.op_start(odd, "ALLREDUCE");
  tl.op_end(odd, "line1\nline2");
  tl.stop();
  // Python prints the decoded text: escapes undone, invalid bytes as U+FFFD.
  std::string shown = "q\"b\\s\nt\x01 \xc3\xa9 bad\xef\xbf\xbd\xef\xbf\xbd end";
  std::vector<std::string> lines = check(path);
  // The decoded name holds a newline, so the checker's lines split there.
  assert_true(lines.size() >= 2);
  std::string all;
  for (const std::string& l : lines) all += l + "\n";
  assert_non_null(std::strstr(all.c_str(), ("B " + shown + " ALLREDUCE").c_str()));
  assert_non_null(std::strstr(all.c_str(), "{\"status\":\"line1\\nline2\"}"));
}

void restarts_write_separate_files(void**) {
  std::string first = temp_path("first.json"), second = temp_path("second.json");
  Timeline tl;
  tl.stop();  // stopping a timeline never started is harmless
  assert_true(tl.start(first, false, nullptr));
  tl.op_start("x", "ALLREDUCE");
  tl.op_end("x");
  // Starting again completes the first file.
  assert_true(tl.start(second, true, nullptr));
  tl.op_start("y", "ALLREDUCE");
  tl.op_end("y");
  tl.mark_cycle();
  tl.stop();
  tl.stop();
  tl.op_start("z", "ALLREDUCE");  // stopped: not recorded anywhere
  assert_lines(check(first), {"B x ALLREDUCE", "E x -"});
  assert_lines(check(second), {"B y ALLREDUCE", "E y -", "i libhvd CYCLE_START"});
}

void bad_paths_are_errors(void**) {
  Timeline tl;
  std::string error;
  assert_false(tl.start("/nonexistent-dir/timeline.json", false, &error));
  assert_non_null(std::strstr(error.c_str(), "/nonexistent-dir/timeline.json"));
  assert_false(tl.enabled());
  error.clear();
  assert_false(tl.start("", false, &error));
  assert_false(error.empty());
  tl.op_start("x", "ALLREDUCE");  // not running: ignored
  tl.flush();
  tl.stop();
}

// Several threads record while the file is written in batches; every event lands.
void concurrent_recording(void**) {
  std::string path = temp_path("threads.json");
  Timeline tl;
  assert_true(tl.start(path, true, nullptr));
  constexpr int kThreads = 4, kOps = 3000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&tl, t] {
      std::vector<std::string> fused = {"fused." + std::to_string(t) + ".a",
                                        "fused." + std::to_string(t) + ".b"};
      for (int i = 0; i < kOps; ++i) {
        std::string name = "t" + std::to_string(t) + ".n" + std::to_string(i % 50);
        tl.negotiate_start(name, "ALLREDUCE");
        tl.negotiate_rank_ready(name, t);
        tl.op_start(name, "ALLREDUCE", i);
        tl.activity_start(name, "MPI_ALLREDUCE");
        tl.activity_end(name);
        tl.op_end(name, "OK");
        tl.activity_start(fused, "MEMCPY_IN_FUSION_BUFFER");
        tl.activity_end(fused);
        tl.mark_cycle();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  tl.stop();
  assert_int_equal(tl.dropped_events(), 0);
  std::vector<std::string> lines = check(path);
  // Per op: B negotiate, ready, E, B op, B activity, E, E op, 2 B + 2 E fused, cycle.
  assert_int_equal(lines.size(), static_cast<size_t>(kThreads) * kOps * 12);
  assert_int_equal(count_prefix(lines, "i libhvd CYCLE_START"), kThreads * kOps);
  assert_int_equal(count_prefix(lines, "B t2.n7 NEGOTIATE_ALLREDUCE"), kOps / 50);
}

// A process that dies without stop() leaves every flushed event and no closing
// bracket.
void dying_process_leaves_a_readable_file(void**) {
  std::string path = temp_path("died.json");
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    Timeline tl;
    if (!tl.start(path, false, nullptr)) _exit(2);
    tl.negotiate_start("w", "ALLREDUCE");
    tl.negotiate_end("w");
    tl.op_start("w", "ALLREDUCE");
    tl.flush();
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_lines(check(path, true),
               {"B w NEGOTIATE_ALLREDUCE", "E w -", "B w ALLREDUCE"});
}

// A process-wide timeline completes its file when the process exits without stop():
// its destructor runs at exit.
void exit_completes_a_static_timeline(void**) {
  std::string path = temp_path("exit.json");
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    static Timeline tl;
    if (!tl.start(path, false, nullptr)) _exit(2);
    tl.op_start("v", "ALLGATHER");
    std::exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(child, &status, 0), child);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_lines(check(path), {"B v ALLGATHER", "E v -"});
}

}  // namespace

int main() {
  if (!std::getenv("HVD_TEST_PYTHON") || !std::getenv("HVD_TIMELINE_CHECKER")) {
    std::fprintf(stderr, "no Python to parse the timeline with: skipped\n");
    return 77;
  }
  char dir[] = "/tmp/hvd-timeline-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  g_dir = dir;
  const CMUnitTest tests[] = {
      cmocka_unit_test(one_tensor_life),
      cmocka_unit_test(phases_stay_balanced),
      cmocka_unit_test(names_are_escaped),
      cmocka_unit_test(restarts_write_separate_files),
      cmocka_unit_test(bad_paths_are_errors),
      cmocka_unit_test(concurrent_recording),
      cmocka_unit_test(dying_process_leaves_a_readable_file),
      cmocka_unit_test(exit_completes_a_static_timeline),
  };
  int failed = cmocka_run_group_tests_name("timeline", tests, nullptr, nullptr);
  if (failed == 0) std::system(("rm -rf '" + g_dir + "'").c_str());
  return failed;
}
