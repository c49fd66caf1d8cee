// From options to the launcher's argument vector, for MPICH Hydra, Open MPI and
// Intel MPI; the tuning flags' HOROVOD_* variables; plan errors.
#include <map>
#include <string>
#include <vector>

#include "cli.h"
#include "command_builder.h"
#include "env_mapping.h"
#include "plan.h"

#include <algorithm>

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

const std::map<std::string, std::string> kHere = {
    {"PATH", "/usr/bin"}, {"SECRET", "s3cr3t"}, {"NCCL_DEBUG", "INFO"}};

PlanContext context(MpiFlavor flavor, bool root = false) {
  PlanContext c;
  c.flavor = flavor;
  c.launcher = flavor == MpiFlavor::OpenMpi ? "mpirun" : "mpiexec";
  c.running_as_root = root;
  c.getenv = [](const std::string& name) -> std::optional<std::string> {
    auto it = kHere.find(name);
    return it == kHere.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  return c;
}

// The commands below leave the rank prefix out (--no-rank-prefix); rank_prefix checks it.
Result<LaunchPlan> plan_for(std::vector<std::string> args, const PlanContext& ctx,
                            bool rank_prefix = false) {
  if (!rank_prefix) args.insert(args.begin(), "--no-rank-prefix");
  CliOutcome cli = parse_command_line(args);
  if (cli.kind != CliOutcome::Kind::Run) {
    print_error("command line rejected: %s\n", cli.text.c_str());
    fail();
  }
  return make_plan(cli.options, ctx);
}

std::vector<std::string> argv_for(std::vector<std::string> args, const PlanContext& ctx) {
  auto plan = plan_for(std::move(args), ctx);
  if (!plan) return {"plan error: " + plan.error()};
  auto cmd = build_command(plan.value());
  if (!cmd) return {"build error: " + cmd.error()};
  return cmd->argv;
}

std::string plan_error(std::vector<std::string> args, const PlanContext& ctx) {
  auto plan = plan_for(std::move(args), ctx);
  if (!plan) return plan.error();
  auto cmd = build_command(plan.value());
  assert_false(cmd.ok());
  return cmd.error();
}

void mpich_commands(void**) {
  auto ctx = context(MpiFlavor::Mpich);
  assert_words(argv_for({"-np", "2", "-H", "localhost:2", "python", "train.py", "--lr", "0.1"}, ctx),
               "mpiexec", "-n", "2", "-hosts", "localhost:2", "python", "train.py", "--lr", "0.1");
  // No hosts: Hydra runs every rank here; nothing about binding is added.
  assert_words(argv_for({"-np", "3", "prog"}, ctx), "mpiexec", "-n", "3", "prog");
  // Uneven slots, tuning variables, -x (values looked up here), mpi args after them.
  assert_words(argv_for({"-np", "3", "-H", "a:1,b:2", "--fusion-threshold-mb", "32",
                         "--hierarchical-allreduce", "-x", "NCCL_DEBUG", "-x", "A=1",
                         "--mpi-args", "-launcher fork", "prog", "x y"},
                        ctx),
               "mpiexec", "-n", "3", "-hosts", "a:1,b:2", "-genv", "HOROVOD_FUSION_THRESHOLD",
               "33554432", "-genv", "HOROVOD_HIERARCHICAL_ALLREDUCE", "1", "-genv",
               "NCCL_DEBUG", "INFO", "-genv", "A", "1", "-launcher", "fork", "prog", "x y");
  // User binding arguments go in as given, and never with -map-by slot.
  assert_words(argv_for({"-np", "2", "--binding-args", "-bind-to core", "prog"}, ctx),
               "mpiexec", "-n", "2", "-bind-to", "core", "prog");
  assert_words(argv_for({"-np", "2", "--output-filename", "logs", "--network-interface",
                         "eth0,ib0", "prog"},
                        ctx),
               "mpiexec", "-n", "2", "-iface", "eth0", "-outfile-pattern", "logs/rank.%r.stdout",
               "-errfile-pattern", "logs/rank.%r.stderr", "-genv", "NCCL_SOCKET_IFNAME",
               "eth0,ib0", "-genv", "UCX_NET_DEVICES", "eth0,ib0", "prog");
  // ssh settings reach Hydra's ssh through its environment.
  auto plan = plan_for({"-np", "2", "-p", "2222", "-i", "/k/id", "prog"}, ctx);
  assert_true(plan.ok());
  auto cmd = build_command(plan.value());
  assert_true(cmd.ok());
  assert_string_equal(render_command(cmd.value()).c_str(),
                      "HYDRA_LAUNCHER_EXTRA_ARGS='-p 2222 -i /k/id' mpiexec -n 2 prog");
}

void openmpi_commands(void**) {
  auto ctx = context(MpiFlavor::OpenMpi);
  assert_words(argv_for({"-np", "4", "-H", "h1:2,h2:2", "python", "train.py"}, ctx), "mpirun",
               "-np", "4", "-H", "h1:2,h2:2", "--bind-to", "none", "--map-by", "slot", "-x",
               "PATH", "python", "train.py");
  // No hosts: localhost with -np slots, so mpirun does not refuse more ranks than cores.
  // -x VAR is forwarded by name (the value stays out of the printed command).
  assert_words(argv_for({"-np", "2", "-x", "SECRET", "-x", "B=2", "--cycle-time-ms", "5",
                         "prog"},
                        ctx),
               "mpirun", "-np", "2", "-H", "localhost:2", "--bind-to", "none", "--map-by", "slot",
               "-x", "HOROVOD_CYCLE_TIME=5", "-x", "B=2", "-x", "SECRET", "-x", "PATH", "prog");
  // Root gets --allow-run-as-root; only then.
  assert_words(argv_for({"-np", "1", "--binding-args", "--bind-to socket", "-p", "2222",
                         "--network-interface", "eth0", "--output-filename", "out", "prog"},
                        context(MpiFlavor::OpenMpi, true)),
               "mpirun", "--allow-run-as-root", "-np", "1", "-H", "localhost:1", "--bind-to",
               "socket", "-mca", "btl_tcp_if_include", "eth0", "-mca", "plm_rsh_args", "-p 2222",
               "--output-filename", "out:nocopy", "-x", "NCCL_SOCKET_IFNAME=eth0", "-x", "UCX_NET_DEVICES=eth0",
               "-x", "PATH", "prog");
  // Open MPI can oversubscribe when asked.
  assert_words(argv_for({"-np", "3", "-H", "a:1", "--mpi-args", "--oversubscribe", "prog"}, ctx),
               "mpirun", "-np", "3", "-H", "a:1", "--bind-to", "none", "--map-by", "slot", "-x",
               "PATH", "--oversubscribe", "prog");
}

void intel_commands(void**) {
  auto ctx = context(MpiFlavor::IntelMpi);
  assert_words(argv_for({"-np", "4", "-H", "h1:2,h2:2", "--log-level", "info", "prog"}, ctx),
               "mpiexec", "-n", "4", "-hosts", "h1,h2", "-ppn", "2", "-genv", "HOROVOD_LOG_LEVEL",
               "info", "prog");
  assert_words(argv_for({"-np", "2", "-p", "2200", "--output-filename", "o", "prog"}, ctx),
               "mpiexec", "-n", "2", "-bootstrap", "ssh", "-bootstrap-exec-args", "-p 2200",
               "-outfile-pattern", "o/rank.%r.stdout", "-errfile-pattern", "o/rank.%r.stderr",
               "prog");
  assert_contains(plan_error({"-np", "3", "-H", "a:1,b:2", "prog"}, ctx),
                  "Intel MPI needs the same slots on every host, but a has 1 and b has 2");
}

void plan_errors(void**) {
  auto ctx = context(MpiFlavor::Mpich);
  assert_contains(plan_error({"-np", "5", "-H", "a:2,b:2", "prog"}, ctx),
                  "-np 5 is more than the 4 slots of -H a:2,b:2");
  assert_contains(plan_error({"-np", "2", "-H", "a:1", "prog"}, context(MpiFlavor::OpenMpi)),
                  "--mpi-args=--oversubscribe");
  assert_contains(plan_error({"-np", "2", "-H", "a:2,,b", "prog"}, ctx), "empty entry");
  assert_contains(plan_error({"-np", "2", "-H", "a b:2", "prog"}, ctx), "contains ' '");
  assert_contains(plan_error({"-np", "2", "--hostfile", "/no/such/file", "prog"}, ctx),
                  "--hostfile /no/such/file: cannot read it");
  assert_contains(plan_error({"-np", "2", "--mpi-args", "-a 'b", "prog"}, ctx),
                  "--mpi-args: unterminated single quote");
  assert_contains(plan_error({"-np", "2", "--fusion-threshold-mb", "-1", "prog"}, ctx),
                  "--fusion-threshold-mb -1: must be a number from 0");
  assert_contains(plan_error({"-np", "2", "--log-level", "loud", "prog"}, ctx),
                  "--log-level loud: must be one of");
  assert_contains(plan_error({"-np", "2", "--thread-affinity", "0,,1", "prog"}, ctx),
                  "--thread-affinity 0,,1");
  assert_contains(plan_error({"-np", "2", "--network-interface", ",", "prog"}, ctx),
                  "--network-interface");
  assert_contains(plan_error({"-np", "2", "--output-filename", "a%b", "prog"}, ctx),
                  "'%' is not allowed");
  // -np defaults to the slots.
  auto plan = plan_for({"-H", "a:2,b:3", "prog"}, ctx);
  assert_true(plan.ok());
  assert_int_equal(plan->num_proc, 5);
  // -x of an unset variable warns rather than failing.
  plan = plan_for({"-np", "1", "-x", "NOT_SET_ANYWHERE", "prog"}, ctx);
  assert_true(plan.ok());
  assert_int_equal(plan->warnings.size(), 1);
  assert_contains(plan->warnings[0], "NOT_SET_ANYWHERE is not set here");
}

void tuning_variables(void**) {
  TuningOptions t;
  t.fusion_threshold_mb = 0.5;
  t.cycle_time_ms = 3.5;
  t.cache_capacity = 2048;
  t.hierarchical_allreduce = false;
  t.hierarchical_allgather = true;
  t.autotune = true;
  t.autotune_log_file = "tune.csv";
  t.autotune_warmup_samples = 5;
  t.autotune_steps_per_sample = 20;
  t.autotune_bayes_opt_max_samples = 30;
  t.autotune_gaussian_process_noise = 0.25;
  t.timeline_filename = "tl.json";
  t.timeline_mark_cycles = true;
  t.stall_check_warning_time_seconds = 120;
  t.stall_check_shutdown_time_seconds = 600;
  t.no_stall_check = true;
  t.log_level = "Trace";
  t.thread_affinity = "1,3";
  auto env = tuning_environment(t);
  assert_true(env.ok());
  std::vector<std::string> lines;
  for (const auto& [k, v] : env.value()) lines.push_back(k + "=" + v);
  assert_words(lines, "HOROVOD_FUSION_THRESHOLD=524288", "HOROVOD_CYCLE_TIME=3.5",
               "HOROVOD_CACHE_CAPACITY=2048", "HOROVOD_HIERARCHICAL_ALLREDUCE=0",
               "HOROVOD_HIERARCHICAL_ALLGATHER=1", "HOROVOD_AUTOTUNE=1",
               "HOROVOD_AUTOTUNE_LOG=tune.csv", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES=5",
               "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE=20", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES=30",
               "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE=0.25", "HOROVOD_TIMELINE=tl.json",
               "HOROVOD_TIMELINE_MARK_CYCLES=1", "HOROVOD_STALL_CHECK_TIME_SECONDS=120",
               "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=600", "HOROVOD_STALL_CHECK_DISABLE=1",
               "HOROVOD_LOG_LEVEL=trace", "HOROVOD_THREAD_AFFINITY=1,3");
  // Nothing given, nothing set: the library keeps its defaults.
  assert_true(tuning_environment(TuningOptions{})->empty());
  // 128 MB is Horovod's default, in bytes.
  TuningOptions d;
  d.fusion_threshold_mb = 128;
  assert_string_equal(tuning_environment(d)->front().second.c_str(), "134217728");
  d.cache_capacity = -1;
  assert_contains(tuning_environment(d).error(), "--cache-capacity -1");
}

void later_env_wins(void**) {
  // An explicit -x beats the tuning flag for the same variable.
  auto argv = argv_for({"-np", "1", "--cycle-time-ms", "5", "-x", "HOROVOD_CYCLE_TIME=7", "prog"},
                       context(MpiFlavor::Mpich));
  assert_words(argv, "mpiexec", "-n", "1", "-genv", "HOROVOD_CYCLE_TIME", "7", "prog");
  assert_string_equal(format_number(0.1).c_str(), "0.1");
  assert_string_equal(format_number(60).c_str(), "60");
  assert_string_equal(format_number(1e-7).c_str(), "1e-07");
  assert_string_equal(format_number(2.5e20).c_str(), "2.5e+20");
}

}  // namespace

// Remote Open MPI ranks see only what -x names: libhvd's knobs and those of the
// libraries below it go along by name; unrelated variables stay behind.
void openmpi_forwards_library_knobs(void**) {
  auto ctx = context(MpiFlavor::OpenMpi);
  ctx.environment_names = {"PATH", "HVD_LIBRARY", "HOROVOD_CYCLE_TIME", "NCCL_DEBUG", "SECRET",
                           "HOME"};
  assert_words(argv_for({"-np", "2", "prog"}, ctx), "mpirun", "-np", "2", "-H", "localhost:2",
               "--bind-to", "none", "--map-by", "slot", "-x", "PATH", "-x", "HVD_LIBRARY", "-x",
               "HOROVOD_CYCLE_TIME", "-x", "NCCL_DEBUG", "prog");
  // Hydra passes the whole environment itself: nothing to add.
  auto mpich = context(MpiFlavor::Mpich);
  mpich.environment_names = ctx.environment_names;
  assert_words(argv_for({"-np", "2", "prog"}, mpich), "mpiexec", "-n", "2", "prog");
}

void rank_prefix(void**) {
  // Each line of output carries its rank, as horovodrun shows it: Hydra's -prepend-rank
  // ("[1] text"), Open MPI's --tag-output ("[1,1]<stdout>:text"); not with per-rank files.
  auto words = [](MpiFlavor f, std::vector<std::string> args) {
    auto plan = plan_for(std::move(args), context(f), true);
    assert_true(plan.ok());
    return build_command(plan.value()).value().argv;
  };
  auto has = [](const std::vector<std::string>& argv, const char* w) {
    return std::find(argv.begin(), argv.end(), w) != argv.end();
  };
  assert_true(has(words(MpiFlavor::Mpich, {"-np", "2", "prog"}), "-prepend-rank"));
  assert_true(has(words(MpiFlavor::IntelMpi, {"-np", "2", "prog"}), "-prepend-rank"));
  assert_true(has(words(MpiFlavor::OpenMpi, {"-np", "2", "prog"}), "--tag-output"));
  assert_false(has(words(MpiFlavor::Mpich, {"-np", "2", "--output-filename", "d", "prog"}),
                   "-prepend-rank"));
  assert_false(has(words(MpiFlavor::OpenMpi, {"-np", "2", "--output-filename", "d", "prog"}),
                   "--tag-output"));
  assert_false(has(words(MpiFlavor::Mpich, {"-np", "2", "--no-rank-prefix", "prog"}),
                   "-prepend-rank"));
  // --tcp and -prefix-timestamp (Open MPI only; Hydra gets a warning instead).
  auto plan = plan_for({"-np", "2", "--tcp", "-prefix-timestamp", "prog"}, context(MpiFlavor::Mpich));
  assert_true(plan.ok());
  assert_int_equal(plan->warnings.size(), 1);
  assert_true(has(words(MpiFlavor::OpenMpi, {"-np", "2", "-prefix-timestamp", "prog"}),
                  "--timestamp-output"));
  bool ib_off = false;
  for (const auto& [name, value] : plan->rank_env) ib_off |= name == "NCCL_IB_DISABLE" && value == "1";
  assert_true(ib_off);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mpich_commands),   cmocka_unit_test(openmpi_commands),
      cmocka_unit_test(intel_commands),   cmocka_unit_test(plan_errors),
      cmocka_unit_test(openmpi_forwards_library_knobs),
      cmocka_unit_test(tuning_variables), cmocka_unit_test(later_env_wins),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
