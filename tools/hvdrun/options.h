// What the user asked hvdrun for: the parsed command line, before any decision
// about the MPI implementation. Filled by parse_command_line (cli.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hvdrun {

// Horovod's tuning flags. Each set field becomes a HOROVOD_* variable in the
// ranks' environment (env_mapping.h); unset fields leave the library's default.
struct TuningOptions {
  std::optional<double> fusion_threshold_mb;
  std::optional<double> cycle_time_ms;
  std::optional<int64_t> cache_capacity;
  std::optional<bool> hierarchical_allreduce;
  std::optional<bool> hierarchical_allgather;
  bool autotune = false;
  std::optional<std::string> autotune_log_file;
  std::optional<int64_t> autotune_warmup_samples;
  std::optional<int64_t> autotune_steps_per_sample;
  std::optional<int64_t> autotune_bayes_opt_max_samples;
  std::optional<double> autotune_gaussian_process_noise;
  std::optional<std::string> timeline_filename;
  bool timeline_mark_cycles = false;
  std::optional<double> stall_check_warning_time_seconds;
  std::optional<double> stall_check_shutdown_time_seconds;
  bool no_stall_check = false;
  std::optional<std::string> log_level;
  std::optional<std::string> thread_affinity;
};

// One -x argument: VAR (forward the launcher's value) or VAR=value.
struct EnvForward {
  std::string name;
  std::optional<std::string> value;
  bool operator==(const EnvForward&) const = default;
};

// --scaling: the same command run at several sizes, with the figures to report.
struct ScalingOptions {
  std::vector<int64_t> sizes;                 // ascending, distinct, each >= 1
  std::optional<int64_t> steps;               // --steps: HVD_STEP_STATS_STEPS
  std::optional<double> samples_per_step;     // per rank
  std::optional<double> price_per_hour;       // per rank-hour
  std::optional<double> hours;                // the job's hours on the smallest size
  std::optional<double> time_value;           // value of an hour of waiting
  std::optional<std::string> json_file;
  std::optional<std::string> plot_file;
};

// Elastic training (--host-discovery-script): a sequence of fixed-size MPI jobs
// ("generations") on the hosts the script reports (elastic_driver.h).
struct ElasticOptions {
  std::string discovery_script;               // run with /bin/sh -c
  std::optional<int64_t> min_np;              // --min-np; default -np
  std::optional<int64_t> max_np;              // --max-np; default: no limit
  std::optional<int64_t> slots_per_host;      // --slots-per-host; default 1
  double elastic_timeout_s = 600;             // --elastic-timeout, HOROVOD_ELASTIC_TIMEOUT
  std::optional<int64_t> reset_limit;         // --reset-limit; default: no limit
  std::optional<std::pair<int64_t, int64_t>> cooldown_range;  // --blacklist-cooldown-range
};

struct LaunchOptions {
  std::optional<int64_t> num_proc;            // -np
  std::optional<std::string> hosts;           // -H text, parsed later
  std::optional<std::string> hostfile;        // --hostfile path
  TuningOptions tuning;
  std::optional<std::string> config_file;     // --config-file, applied into tuning
  std::vector<EnvForward> env;                // -x, in order
  std::optional<std::string> mpi_args;        // --mpi-args text, split later
  std::optional<std::string> binding_args;    // --binding-args text, split later
  std::optional<std::string> network_interface;  // --network-interface
  std::optional<int> ssh_port;                // -p
  std::optional<std::string> ssh_identity_file;  // -i
  std::optional<std::string> output_filename; // --output-filename DIR
  bool tcp_only = false;                      // --tcp: NCCL_IB_DISABLE=1
  bool timestamp_output = false;              // --prefix-output-with-timestamp
  bool rank_prefix = true;                    // --no-rank-prefix turns it off
  // horovodrun flags accepted without effect here, each with the reason: printed
  // once as "hvdrun: note: ..." before the job starts.
  std::vector<std::string> notices;
  bool verbose = false;
  bool dry_run = false;
  bool check_build = false;
  bool version = false;
  std::optional<ScalingOptions> scaling;      // --scaling SIZES and its options
  std::optional<ElasticOptions> elastic;      // --host-discovery-script and its options
  std::vector<std::string> command;           // the program and its arguments
};

}  // namespace hvdrun
