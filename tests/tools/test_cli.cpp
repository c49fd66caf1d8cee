// The command line: horovodrun's spellings, the command passed through from its
// first word, every usage error with its message, and Horovod's YAML config file.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.h"
#include "config_file.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

LaunchOptions parse_ok(std::vector<std::string> args) {
  CliOutcome r = parse_command_line(args);
  if (r.kind != CliOutcome::Kind::Run) {
    print_error("unexpected failure: %s\n", r.text.c_str());
    fail();
  }
  return r.options;
}

std::string parse_error(std::vector<std::string> args) {
  CliOutcome r = parse_command_line(args);
  assert_int_equal(static_cast<int>(r.kind), static_cast<int>(CliOutcome::Kind::Error));
  return r.text;
}

void command_passes_through(void**) {
  // The program's own options are not hvdrun's, even where the names clash.
  auto o = parse_ok({"-np", "2", "python", "train.py", "--lr", "0.1", "-x", "-H", "--verbose"});
  assert_int_equal(*o.num_proc, 2);
  assert_false(o.verbose);
  assert_true(o.env.empty());
  assert_words(o.command, "python", "train.py", "--lr", "0.1", "-x", "-H", "--verbose");

  // `--` ends hvdrun's options, so a command may start with '-'.
  o = parse_ok({"-np", "1", "--", "-weird-program", "a"});
  assert_words(o.command, "-weird-program", "a");

  // Arguments with spaces, quotes and ';' are words, never shell text.
  o = parse_ok({"-np", "1", "./prog", "a b", "it's \"q\"", ";", "$HOME"});
  assert_words(o.command, "./prog", "a b", "it's \"q\"", ";", "$HOME");
}

void horovodrun_spellings(void**) {
  auto o = parse_ok({"-np", "4", "-H", "a:2,b:2", "prog"});
  assert_int_equal(*o.num_proc, 4);
  assert_string_equal(o.hosts->c_str(), "a:2,b:2");
  o = parse_ok({"-np=3", "--hosts=a:3", "prog"});
  assert_int_equal(*o.num_proc, 3);
  assert_string_equal(o.hosts->c_str(), "a:3");
  o = parse_ok({"--num-proc", "5", "-hostfile", "hosts.txt", "prog"});
  assert_int_equal(*o.num_proc, 5);
  assert_string_equal(o.hostfile->c_str(), "hosts.txt");
  o = parse_ok({"-cb"});
  assert_true(o.check_build);
  o = parse_ok({"--version"});
  assert_true(o.version);
  o = parse_ok({"-p", "2222", "-i", "/k/id", "-np", "1", "prog"});
  assert_int_equal(*o.ssh_port, 2222);
  assert_string_equal(o.ssh_identity_file->c_str(), "/k/id");
  // -np may be left out when the hosts say how many slots there are.
  o = parse_ok({"-H", "a:2", "prog"});
  assert_false(o.num_proc.has_value());
}

void values_that_look_like_options(void**) {
  auto o = parse_ok({"-np", "2", "--mpi-args", "-launcher fork", "--binding-args",
                     "-bind-to core", "prog"});
  assert_string_equal(o.mpi_args->c_str(), "-launcher fork");
  assert_string_equal(o.binding_args->c_str(), "-bind-to core");
  o = parse_ok({"-np", "2", "--mpi-args=-launcher fork", "prog"});
  assert_string_equal(o.mpi_args->c_str(), "-launcher fork");
}

void env_forwarding(void**) {
  auto o = parse_ok({"-np", "1", "-x", "A", "-x", "B=1=2", "-x", "C=", "-xD=d", "prog"});
  assert_int_equal(o.env.size(), 4);
  assert_string_equal(o.env[0].name.c_str(), "A");
  assert_false(o.env[0].value.has_value());
  assert_string_equal(o.env[1].name.c_str(), "B");
  assert_string_equal(o.env[1].value->c_str(), "1=2");
  assert_string_equal(o.env[2].value->c_str(), "");
  assert_string_equal(o.env[3].name.c_str(), "D");
  assert_string_equal(o.env[3].value->c_str(), "d");
  assert_contains(parse_error({"-np", "1", "-x", "1A=2", "prog"}),
                  "'1A' is not a valid environment variable name");
  assert_contains(parse_error({"-np", "1", "-x", "A-B", "prog"}), "not a valid environment");
}

void tuning_flags(void**) {
  auto o = parse_ok({"-np", "1", "--fusion-threshold-mb", "32", "--cycle-time-ms", "2.5",
                     "--cache-capacity", "0", "--hierarchical-allreduce",
                     "--no-hierarchical-allgather", "--autotune", "--autotune-log-file", "a.csv",
                     "--timeline-filename", "t.json", "--timeline-mark-cycles",
                     "--stall-check-warning-time-seconds", "30",
                     "--stall-check-shutdown-time-seconds", "90", "--no-stall-check",
                     "--log-level", "DEBUG", "--thread-affinity", "0,4", "prog"});
  const TuningOptions& t = o.tuning;
  assert_true(*t.fusion_threshold_mb == 32.0);
  assert_true(*t.cycle_time_ms == 2.5);
  assert_int_equal(*t.cache_capacity, 0);
  assert_true(*t.hierarchical_allreduce);
  assert_false(*t.hierarchical_allgather);
  assert_true(t.autotune);
  assert_string_equal(t.autotune_log_file->c_str(), "a.csv");
  assert_string_equal(t.timeline_filename->c_str(), "t.json");
  assert_true(t.timeline_mark_cycles);
  assert_true(*t.stall_check_warning_time_seconds == 30.0);
  assert_true(*t.stall_check_shutdown_time_seconds == 90.0);
  assert_true(t.no_stall_check);
  assert_string_equal(t.log_level->c_str(), "DEBUG");
  assert_string_equal(t.thread_affinity->c_str(), "0,4");
  o = parse_ok({"-np", "1", "--verbose", "--dry-run", "--output-filename", "logs", "prog"});
  assert_true(o.verbose);
  assert_true(o.dry_run);
  assert_string_equal(o.output_filename->c_str(), "logs");
}

void usage_errors(void**) {
  assert_contains(parse_error({"-np", "0", "prog"}),
                  "-np 0: the number of processes must be at least 1");
  assert_contains(parse_error({"-np", "-3", "prog"}), "at least 1");
  assert_contains(parse_error({"-np", "two", "prog"}), "two");
  assert_contains(parse_error({"-np", "2"}), "no command to run");
  assert_contains(parse_error({"-np", "2", "--"}), "no command to run");
  assert_contains(parse_error({"prog"}), "-np is missing");
  assert_contains(parse_error({"-np", "2", "--no-such-flag", "prog"}), "--no-such-flag");
  assert_contains(parse_error({"-np", "2", "-H", "a", "--hostfile", "f", "prog"}), "excludes");
  assert_contains(parse_error({"-np", "1", "--hierarchical-allreduce",
                               "--no-hierarchical-allreduce", "prog"}),
                  "excludes");
  assert_contains(parse_error({"-np", "1", "-p", "70000", "prog"}), "not a TCP port");
  assert_contains(parse_error({"-np", "1", "--output-filename", "", "prog"}), "--output-filename");
  // An option that wants a value and is last: CLI11 says the value is missing.
  assert_contains(parse_error({"-np"}), "num-proc");
}

void scaling_options(void**) {
  auto o = parse_ok({"--scaling", "4,1,2", "--steps", "20", "--samples-per-step", "32",
                     "--price-per-hour", "2.5", "--hours", "24", "--time-value", "10",
                     "--json", "s.json", "--plot", "s.png", "-H", "a:2,b:2", "prog", "--steps"});
  assert_true(o.scaling.has_value());
  assert_int_equal(o.scaling->sizes.size(), 3);  // ascending
  assert_int_equal(o.scaling->sizes[0], 1);
  assert_int_equal(o.scaling->sizes[2], 4);
  assert_int_equal(*o.scaling->steps, 20);
  assert_true(*o.scaling->samples_per_step == 32);
  assert_true(*o.scaling->price_per_hour == 2.5);
  assert_true(*o.scaling->hours == 24);
  assert_true(*o.scaling->time_value == 10);
  assert_string_equal(o.scaling->json_file->c_str(), "s.json");
  assert_string_equal(o.scaling->plot_file->c_str(), "s.png");
  assert_false(o.num_proc.has_value());
  assert_words(o.command, "prog", "--steps");
  // No hosts and no -np: every size on this machine.
  o = parse_ok({"--scaling=2", "prog"});
  assert_int_equal(o.scaling->sizes.size(), 1);
  assert_false(o.scaling->price_per_hour.has_value());
  assert_false(parse_ok({"-np", "2", "prog"}).scaling.has_value());
}

void scaling_errors(void**) {
  assert_contains(parse_error({"--scaling", "", "prog"}), "--scaling");
  for (const char* bad : {",", "1,", ",2", "1,,2"})
    assert_contains(parse_error({"--scaling", bad, "prog"}),
                    "give the numbers of ranks separated by commas");
  assert_contains(parse_error({"--scaling", "0,2", "prog"}), "at least 1 rank");
  assert_contains(parse_error({"--scaling", "1,-2", "prog"}), "'-2' is not a number of ranks");
  assert_contains(parse_error({"--scaling", "1,two", "prog"}), "'two' is not a number of ranks");
  assert_contains(parse_error({"--scaling", "1.5", "prog"}), "'1.5' is not a number of ranks");
  assert_contains(parse_error({"--scaling", "99999999999999999999", "prog"}),
                  "is not a number of ranks");
  assert_contains(parse_error({"--scaling", "2,1,2", "prog"}), "2 is given twice");
  assert_contains(parse_error({"--scaling", "1,2", "-np", "2", "prog"}),
                  "--scaling runs each size");
  assert_contains(parse_error({"--scaling", "1,2", "--price-per-hour", "3", "prog"}),
                  "--price-per-hour needs --hours");
  assert_contains(parse_error({"--scaling", "1,2", "--hours", "3", "prog"}),
                  "--hours needs --price-per-hour");
  assert_contains(parse_error({"--scaling", "1,2", "--time-value", "3", "prog"}),
                  "--time-value needs --price-per-hour");
  assert_contains(parse_error({"--steps", "3", "-np", "2", "prog"}), "--steps needs --scaling");
  assert_contains(parse_error({"--json", "f", "-np", "2", "prog"}), "--json needs --scaling");
  assert_contains(parse_error({"--scaling", "1,2", "--steps", "0", "prog"}),
                  "--steps 0: measure at least 1 step");
  assert_contains(parse_error({"--scaling", "1", "--price-per-hour", "-1", "--hours", "2", "prog"}),
                  "--price-per-hour -1");
  assert_contains(parse_error({"--scaling", "1", "--price-per-hour", "1", "--hours", "0", "prog"}),
                  "--hours 0: must be more than 0");
  assert_contains(parse_error({"--scaling", "1", "--samples-per-step", "nan", "prog"}),
                  "--samples-per-step");
  assert_contains(parse_error({"--scaling", "1", "--samples-per-step", "many", "prog"}),
                  "--samples-per-step");
  assert_contains(parse_error({"--scaling", "1", "--price-per-hour", "1", "--hours", "1",
                               "--time-value", "-1", "prog"}),
                  "--time-value -1: must be 0 or more");
  assert_contains(parse_error({"--scaling", "1,2"}), "no command to run");
}

void horovodrun_flags_without_effect(void**) {
  // Every horovodrun flag is accepted; those that mean nothing here say why, once each,
  // and take their values (which must not start the command).
  auto o = parse_ok({"-np", "2", "--start-timeout", "60", "--mpi", "--disable-cache",
                     "--log-without-timestamp", "--mpi-threads-disable", "--num-nccl-streams",
                     "2", "--gloo-timeout-seconds", "30", "--torus-allreduce",
                     "--no-torus-allreduce", "--no-autotune", "--stall-check", "prog", "a"});
  assert_words(o.command, "prog", "a");
  assert_int_equal(o.notices.size(), 6);
  std::string all;
  for (const auto& n : o.notices) all += n + "\n";
  for (const char* part :
       {"--start-timeout has no effect", "--disable-cache has no effect", "--cache-capacity 0",
        "--mpi-threads-disable has no effect", "--num-nccl-streams has no effect",
        "--gloo-timeout-seconds has no effect: libhvd has no Gloo",
        "--torus-allreduce has no effect"})
    assert_contains(all, part);
  assert_false(o.tuning.autotune);
  assert_false(o.tuning.cache_capacity.has_value());  // --disable-cache is not the response cache

  // Those with an effect here.
  o = parse_ok({"-np", "2", "--tcp", "--network-interfaces", "eth0,ib0", "--network-interface",
                "eth1", "-prefix-timestamp", "prog"});
  assert_true(o.tcp_only);
  assert_string_equal(o.network_interface->c_str(), "eth0,ib0,eth1");
  assert_true(o.timestamp_output);
  assert_true(o.notices.empty());
  assert_true(parse_ok({"-np", "2", "--prefix-output-with-timestamp", "prog"}).timestamp_output);
  assert_true(parse_ok({"-np", "2", "prog"}).rank_prefix);
  assert_false(parse_ok({"-np", "2", "--no-rank-prefix", "prog"}).rank_prefix);
}

void elastic_options(void**) {
  LaunchOptions o = parse_ok({"-np", "4", "--min-np", "2", "--max-np", "8", "--slots-per-host", "2",
                              "--host-discovery-script", "./discover.sh", "--elastic-timeout", "30",
                              "--reset-limit", "3", "--blacklist-cooldown-range", "10", "100", "prog"});
  assert_true(o.elastic.has_value());
  assert_string_equal(o.elastic->discovery_script.c_str(), "./discover.sh");
  assert_int_equal(*o.num_proc, 4);
  assert_int_equal(*o.elastic->min_np, 2);
  assert_int_equal(*o.elastic->max_np, 8);
  assert_int_equal(*o.elastic->slots_per_host, 2);
  assert_int_equal(*o.elastic->reset_limit, 3);
  assert_true(o.elastic->elastic_timeout_s == 30);
  assert_int_equal(o.elastic->cooldown_range->first, 10);
  assert_int_equal(o.elastic->cooldown_range->second, 100);
  assert_string_equal(o.command[0].c_str(), "prog");
  // Horovod's defaults: --min-np is -np, -np is --min-np, no --max-np, 600 s.
  o = parse_ok({"-np", "3", "--host-discovery-script", "d.sh", "prog"});
  assert_int_equal(*o.elastic->min_np, 3);
  assert_false(o.elastic->max_np.has_value());
  assert_true(o.elastic->elastic_timeout_s == 600);
  assert_false(o.elastic->cooldown_range.has_value());
  o = parse_ok({"--min-np", "2", "--host-discovery-script", "d.sh", "prog"});
  assert_int_equal(*o.num_proc, 2);
  assert_contains(parse_error({"--host-discovery-script", "d.sh", "prog"}), "-np is missing");
  assert_contains(parse_error({"-np", "2", "-H", "a:2", "--host-discovery-script", "d.sh", "prog"}),
                  "-H and --host-discovery-script");
  assert_contains(parse_error({"-np", "2", "--min-np", "3", "--host-discovery-script", "d.sh", "prog"}),
                  "--min-np 3 is more than -np 2");
  assert_contains(parse_error({"-np", "4", "--max-np", "3", "--host-discovery-script", "d.sh", "prog"}),
                  "--max-np 3 is less than -np 4");
  assert_contains(parse_error({"-np", "2", "--blacklist-cooldown-range", "0", "5",
                               "--host-discovery-script", "d.sh", "prog"}),
                  "1 <= MIN <= MAX <= 3600");
  assert_contains(parse_error({"-np", "2", "--reset-limit", "-1", "--host-discovery-script", "d.sh", "prog"}),
                  "--reset-limit -1: must be at least 0");
}

void horovodrun_flags_refused(void**) {
  // The elastic options need a discovery script, and say so.
  for (const char* elastic : {"--min-np", "--max-np", "--min-num-proc", "--max-num-proc",
                              "--slots-per-host", "--slots", "--elastic-timeout", "--reset-limit"}) {
    std::string e = parse_error({"-np", "2", elastic, "4", "prog"});
    assert_contains(e, std::string(elastic).substr(0, 6));
    assert_contains(e, "is an elastic training option: add --host-discovery-script SCRIPT");
  }
  assert_contains(parse_error({"-np", "2", "--blacklist-cooldown-range", "10", "100", "prog"}),
                  "--blacklist-cooldown-range is an elastic training option");
  assert_contains(parse_error({"-np", "2", "--min-np=1", "prog"}), "--min-np is an elastic");
  assert_contains(parse_error({"-np", "2", "--gloo", "prog"}), "--gloo: libhvd has no Gloo");
  // Unknown options say so, instead of CLI11's "argument was not expected".
  std::string e = parse_error({"-np", "2", "--no-such-flag", "prog"});
  assert_contains(e, "unknown option '--no-such-flag': hvdrun does not know it");
  assert_contains(parse_error({"-np", "2", "-q", "prog"}), "unknown option '-q'");
  assert_contains(parse_error({"-np", "abc", "prog"}),
                  "-np/--num-proc expects a whole number of ranks, got 'abc'");
  assert_contains(parse_error({"-np", "1.5", "prog"}), "got '1.5'");
  assert_contains(parse_error({"-np", "2", "--cycle-time-ms", "fast", "prog"}),
                  "--cycle-time-ms expects a number, got 'fast'");
}

// A config file with the given text, in a folder removed at exit.
std::string config_with(const std::string& text) {
  static std::string dir;
  static int n = 0;
  if (dir.empty()) {
    char pattern[] = "/tmp/hvdrun_cli_test.XXXXXX";
    dir = mkdtemp(pattern);
    std::atexit([] { std::system(("rm -rf '" + dir + "'").c_str()); });
  }
  std::string path = dir + "/cfg" + std::to_string(++n) + ".yaml";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

const char kHorovodConfig[] =
    "# Horovod's example, every section\n"
    "params:\n"
    "  fusion_threshold_mb: 32\n"
    "  cycle_time_ms: 0.5\n"
    "  cache_capacity: 2048\n"
    "  hierarchical_allreduce: true\n"
    "  hierarchical_allgather: false\n"
    "autotune:\n"
    "  enabled: true\n"
    "  log_file: /tmp/autotune.csv\n"
    "  warmup_samples: 5\n"
    "  steps_per_sample: 20\n"
    "  bayes_opt_max_samples: 30\n"
    "  gaussian_process_noise: 0.5\n"
    "timeline:\n"
    "  filename: /tmp/timeline.json\n"
    "  mark_cycles: yes\n"
    "stall_check:\n"
    "  enabled: false\n"
    "  warning_time_seconds: 120\n"
    "  shutdown_time_seconds: 600\n"
    "library_options:\n"
    "  mpi_threads_disable: false\n"
    "  num_nccl_streams: 2\n"
    "  thread_affinity: 0,8\n"
    "logging:\n"
    "  level: warning\n"
    "  with_timestamp: true\n"
    "controller: mpi\n";

void config_file_keys(void**) {
  if (!config_files_supported()) {
    assert_contains(parse_error({"-np", "2", "--config-file", config_with("params: {}\n"), "prog"}),
                    "this hvdrun was built without libyaml");
    return;
  }
  const std::string path = config_with(kHorovodConfig);
  auto o = parse_ok({"-np", "2", "--config-file", path, "prog"});
  const TuningOptions& t = o.tuning;
  assert_true(*t.fusion_threshold_mb == 32);
  assert_true(*t.cycle_time_ms == 0.5);
  assert_int_equal(*t.cache_capacity, 2048);
  assert_true(*t.hierarchical_allreduce);
  assert_false(*t.hierarchical_allgather);
  assert_true(t.autotune);
  assert_string_equal(t.autotune_log_file->c_str(), "/tmp/autotune.csv");
  assert_int_equal(*t.autotune_warmup_samples, 5);
  assert_int_equal(*t.autotune_steps_per_sample, 20);
  assert_int_equal(*t.autotune_bayes_opt_max_samples, 30);
  assert_true(*t.autotune_gaussian_process_noise == 0.5);
  assert_string_equal(t.timeline_filename->c_str(), "/tmp/timeline.json");
  assert_true(t.timeline_mark_cycles);
  assert_true(t.no_stall_check);
  assert_true(*t.stall_check_warning_time_seconds == 120);
  assert_true(*t.stall_check_shutdown_time_seconds == 600);
  assert_string_equal(t.thread_affinity->c_str(), "0,8");
  assert_string_equal(t.log_level->c_str(), "warning");
  // Keys libhvd has no use for get their flag's note, naming the file and line;
  // mpi_threads_disable: false is the default and says nothing.
  assert_int_equal(o.notices.size(), 2);
  assert_contains(o.notices[0], "library_options.num_nccl_streams (--config-file " + path +
                                    ", line 24) has no effect: libhvd runs its NCCL operations");
  assert_contains(o.notices[1], "logging.with_timestamp (--config-file " + path +
                                    ", line 28) has no effect: libhvd's log lines carry no timestamp");

  // The command line wins over the file, both ways for switches.
  o = parse_ok({"-np", "2", "--fusion-threshold-mb", "64", "--no-hierarchical-allreduce",
                "--stall-check", "--no-autotune", "--config-file", path, "--cycle-time-ms", "3",
                "prog"});
  assert_true(*o.tuning.fusion_threshold_mb == 64);
  assert_true(*o.tuning.cycle_time_ms == 3);
  assert_false(*o.tuning.hierarchical_allreduce);
  assert_false(o.tuning.no_stall_check);
  assert_false(o.tuning.autotune);
  assert_int_equal(*o.tuning.cache_capacity, 2048);  // not given: the file's
  o = parse_ok({"-np", "2", "--num-nccl-streams", "4", "--config-file", path, "prog"});
  assert_int_equal(o.notices.size(), 2);  // the flag's note, not the key's too
  assert_contains(o.notices[0], "--num-nccl-streams has no effect");

  // Empty sections and values leave the defaults, as in Horovod.
  o = parse_ok({"-np", "2", "--config-file", config_with("params:\n  cycle_time_ms:\nautotune:\n"), "prog"});
  assert_false(o.tuning.cycle_time_ms.has_value());
  assert_false(o.tuning.autotune);
  assert_true(parse_ok({"-np", "2", "--config-file", config_with(""), "prog"}).notices.empty());
}

void config_file_errors(void**) {
  if (!config_files_supported()) return;
  auto error_for = [](const std::string& text) {
    const std::string path = config_with(text);
    std::string e = parse_error({"-np", "2", "--config-file", path, "prog"});
    const std::string prefix = "--config-file " + path + ", line ";
    assert_contains(e, prefix);
    return e.substr(e.find(prefix) + prefix.size());
  };
  assert_string_equal(error_for("params:\n  fusion_threshold_mb: 32\n  fusion_treshold_mb: 8\n").c_str(),
                      "3: unknown key 'fusion_treshold_mb' in params (its keys are "
                      "fusion_threshold_mb, cycle_time_ms, cache_capacity, hierarchical_allreduce, "
                      "hierarchical_allgather)");
  assert_contains(error_for("parameters:\n  x: 1\n"),
                  "2: unknown section 'parameters' (Horovod's are params, autotune, timeline");
  assert_contains(error_for("\nparams:\n  cycle_time_ms: fast\n"),
                  "3: params.cycle_time_ms: expects a number, got 'fast'");
  assert_contains(error_for("params:\n  cycle_time_ms: -1\n"),
                  "2: params.cycle_time_ms: must be a number from 0 to");
  assert_contains(error_for("params:\n  cache_capacity: 1.5\n"),
                  "2: params.cache_capacity: expects a whole number, got '1.5'");
  assert_contains(error_for("autotune:\n  enabled: maybe\n"),
                  "2: autotune.enabled: expects true or false, got 'maybe'");
  assert_contains(error_for("logging:\n  level: loud\n"),
                  "2: logging.level: must be one of trace, debug");
  assert_contains(error_for("params: [1, 2]\n"), "1: params must hold keys, not a list");
  assert_contains(error_for("params:\n  cycle_time_ms: [1\n"), "not valid YAML");
  assert_contains(error_for("controller: gloo\n"), "1: controller: gloo: --gloo: libhvd has no Gloo");
  assert_contains(parse_error({"-np", "2", "--config-file", "/no/such.yaml", "prog"}),
                  "--config-file /no/such.yaml: cannot read it");
}

void help_is_a_manual(void**) {
  CliOutcome r = parse_command_line({"--help"});
  assert_int_equal(static_cast<int>(r.kind), static_cast<int>(CliOutcome::Kind::Help));
  for (const char* part : {"SYNOPSIS", "DESCRIPTION", "-np, --num-proc N", "-H, --hosts",
                           "--fusion-threshold-mb MB", "HOROVOD_FUSION_THRESHOLD", "-x VAR",
                           "--mpi-args", "--scaling N,N,...", "--price-per-hour P", "ENVIRONMENT", "HVDRUN_MPIEXEC", "EXIT STATUS",
                           "EXAMPLES"})
    assert_contains(r.text, part);
  assert_string_equal(help_text().c_str(), r.text.c_str());
  r = parse_command_line({"-h"});
  assert_int_equal(static_cast<int>(r.kind), static_cast<int>(CliOutcome::Kind::Help));
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(command_passes_through),
      cmocka_unit_test(horovodrun_spellings),
      cmocka_unit_test(values_that_look_like_options),
      cmocka_unit_test(env_forwarding),
      cmocka_unit_test(tuning_flags),
      cmocka_unit_test(usage_errors),
      cmocka_unit_test(scaling_options),
      cmocka_unit_test(scaling_errors),
      cmocka_unit_test(horovodrun_flags_without_effect),
      cmocka_unit_test(elastic_options),
      cmocka_unit_test(horovodrun_flags_refused),
      cmocka_unit_test(help_is_a_manual),
      cmocka_unit_test(config_file_keys),
      cmocka_unit_test(config_file_errors),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
