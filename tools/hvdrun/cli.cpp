#include "cli.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <memory>

#include "cli_compat.h"
#include "cli_elastic.h"
#include "config_file.h"
#include "cli_option.h"
#include "cli_scaling.h"

namespace hvdrun {
namespace {

constexpr const char* kDescription =
    "NAME\n"
    "    hvdrun - run a libhvd (or Horovod) training job on MPI\n"
    "\n"
    "SYNOPSIS\n"
    "    hvdrun -np N [-H host:slots,... | --hostfile FILE] [options] command [args...]\n"
    "    hvdrun -np N --host-discovery-script SCRIPT [--min-np N] [--max-np N] [options]\n"
    "        command [args...]\n"
    "    hvdrun --scaling N,N,... [-H host:slots,... | --hostfile FILE] [options] command [args...]\n"
    "    hvdrun --check-build | --version | --help\n"
    "\n"
    "DESCRIPTION\n"
    "    Starts N copies of command as one MPI job, through the launcher of the MPI\n"
    "    libhvd was built against (mpiexec.mpich or mpiexec.openmpi when on PATH,\n"
    "    else mpiexec or mpirun from PATH; MPICH/Hydra, Open MPI or Intel MPI,\n"
    "    detected from `mpiexec --version`). A launcher of another MPI is refused:\n"
    "    it would start every rank as a job of its own. --verbose prints the command\n"
    "    run. Takes horovodrun's options, so a horovodrun command line\n"
    "    works unchanged. The tuning options become HOROVOD_* variables in every\n"
    "    rank's environment. Everything from the first word that is not an option\n"
    "    (or after `--`) is the command, passed to the ranks exactly as given: no\n"
    "    shell runs it, so spaces, quotes and `;` in arguments arrive unchanged.\n"
    "    SIGINT and SIGTERM sent to hvdrun are passed on to the job; a job still\n"
    "    running 10 s later is killed.\n"
    "\n"
    "    With --host-discovery-script the job is elastic: it runs as a sequence of\n"
    "    MPI jobs (generations) on the hosts the script reports, a new generation\n"
    "    when hosts come or go (the ranks leave with status 75) or a rank fails (its\n"
    "    host is left out). Each rank sees HOROVOD_ELASTIC=1, HVD_ELASTIC_GENERATION,\n"
    "    HVD_ELASTIC_STATE_DIR, HVD_ELASTIC_DRIVER, HVD_ELASTIC_TOKEN and\n"
    "    HOROVOD_HOSTNAME; hvd.elastic.run uses them (docs/elastic.md).\n";

constexpr const char* kFooter =
    "ENVIRONMENT\n"
    "    HVDRUN_MPIEXEC  the MPI launcher to run instead of the one of libhvd's MPI,\n"
    "                    e.g. /opt/openmpi/bin/mpirun.\n"
    "    HVDRUN_PYTHON   the Python that draws --plot (needs matplotlib); default\n"
    "                    the job's interpreter when the command is one (python3,\n"
    "                    /usr/bin/python3.11, ...), else python3 from PATH.\n"
    "    HVDRUN_ELASTIC_ADDRESS  elastic jobs: the address the hosts reach this\n"
    "                    machine's notification listener at (default 127.0.0.1 for\n"
    "                    local hosts, else the address routed towards the hosts).\n"
    "    HOROVOD_ELASTIC_TIMEOUT  --elastic-timeout's default.\n"
    "\n"
    "EXIT STATUS\n"
    "    The job's exit status (128+N when the launcher was killed by signal N, or\n"
    "    when hvdrun was sent SIGINT, SIGTERM or SIGHUP and passed it on to the job);\n"
    "    2 for a usage error (bad option, -np larger than the slots, bad host list,\n"
    "    unreadable hostfile, missing command); 127 when no MPI launcher can be run.\n"
    "    Elastic: 0 when a generation's ranks all return 0; the failed generation's\n"
    "    status when --reset-limit is exceeded; 1 when fewer than --min-np slots\n"
    "    remained for --elastic-timeout seconds.\n"
    "    With --scaling: the first failed run's status; 1 when a run wrote no step\n"
    "    summary or --json/--plot could not be written (the table is printed first).\n"
    "\n"
    "EXAMPLES\n"
    "    hvdrun -np 4 -H localhost:4 python train.py --lr 0.1\n"
    "    hvdrun -np 16 -H server1:8,server2:8 --fusion-threshold-mb 32 python train.py\n"
    "    hvdrun -np 8 --hostfile hosts.txt -x NCCL_DEBUG=INFO -x PYTHONPATH python train.py\n"
    "    hvdrun -np 4 -H nodeA:2,nodeB:2 --mpi-args \"-launcher fork\" ./train_linear\n"
    "    hvdrun -np 2 --output-filename logs ./train_linear   # logs/rank.0.stdout, ...\n"
    "    hvdrun -np 4 --min-np 2 --max-np 8 --host-discovery-script ./discover_hosts.sh \\\n"
    "        python train.py                                   # elastic\n"
    "    hvdrun -np 2 --dry-run python train.py               # print the mpiexec command\n"
    "    hvdrun --scaling 1,2,4 --samples-per-step 32 --price-per-hour 2.5 --hours 24 \\\n"
    "        --json scaling.json --plot scaling.png python train.py\n";

// Lays options out as a man page does (name line, then the description wrapped
// and indented) and shows horovodrun's single-dash spellings beside CLI11's names.
class ManFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "USAGE\n    hvdrun [options] command [args...]\n";
  }
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    if (opt->check_name("--num-proc")) return "-np, " + name;
    if (opt->check_name("--check-build")) return "-cb, " + name;
    if (opt->check_name("--hostfile")) return "-hostfile, " + name;
    size_t comma = name.find(',');
    if (comma != std::string::npos && name[comma + 1] != ' ') name.insert(comma + 1, " ");
    return name;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    return opt->get_type_name().empty() || opt->get_expected_min() == 0
               ? std::string()
               : " " + opt->get_type_name();
  }
  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    std::string out = "    " + make_option_name(opt, is_positional) + make_option_opts(opt) + "\n";
    return out + wrap(make_option_desc(opt), 8, 80);
  }

 private:
  static std::string wrap(const std::string& text, size_t indent, size_t width) {
    std::string out, line;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find(' ', start);
      if (end == std::string::npos) end = text.size();
      std::string word = text.substr(start, end - start);
      if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
        out += std::string(indent, ' ') + line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + word;
      start = end + 1;
    }
    if (!line.empty()) out += std::string(indent, ' ') + line + "\n";
    return out;
  }
};

// The option a word names, if hvdrun knows it: "--name[=value]", or a short option
// with its value attached ("-xFOO", "-p22").
bool known_option(const CLI::App& app, const std::string& tok) {
  const std::string name = tok.substr(0, tok.find('='));
  if (app.get_option_no_throw(name)) return true;
  if (name == "-h" || name == "--help") return true;
  return tok.rfind("--", 0) != 0 && tok.size() > 2 && app.get_option_no_throw(tok.substr(0, 2));
}

// "-np abc": the number of ranks, a whole number (a negative one is refused later,
// with the message of -np 0).
std::optional<int64_t> parse_whole_number(const std::string& text) {
  const bool negative = !text.empty() && text[0] == '-';
  const std::string digits = negative ? text.substr(1) : text;
  if (digits.empty() || digits.size() > 18) return std::nullopt;
  int64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return negative ? -n : n;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_';
    if (!ok) return false;
  }
  return true;
}

std::unique_ptr<CLI::App> make_app(LaunchOptions& o, std::vector<std::string>& env_args,
                                   ScalingArgs& sc, ElasticArgs& el,
                                   std::optional<std::string>& num_proc_text) {
  auto app = std::make_unique<CLI::App>(kDescription, "hvdrun");
  app->formatter(std::make_shared<ManFormatter>());
  app->footer(refused_flags_help() + kFooter);
  TuningOptions& t = o.tuning;

  const std::string procs = "Processes and hosts";
  add_optional(*app, "--num-proc", num_proc_text,
               "Number of processes (ranks) to start. Defaults to the total slots of "
               "-H or --hostfile",
               "N");
  app->get_option("--num-proc")->group(procs);
  add_optional(*app, "-H,--hosts", o.hosts,
               "Hosts and their slots, e.g. node1:4,node2:4 (a host without :N has 1 slot). "
               "Without -H or --hostfile all ranks run on this machine",
               "HOST:N,...");
  app->get_option("--hosts")->group(procs);
  add_optional(*app, "--hostfile", o.hostfile,
               "File with one host per line: 'host slots=N', 'host:N' or 'host'; # starts "
               "a comment",
               "FILE");
  app->get_option("--hostfile")->group(procs)->excludes("--hosts");

  const std::string tune = "Tuning (each sets a HOROVOD_* variable in the ranks)";
  auto tuning = [&](CLI::Option* opt) { opt->group(tune); };
  add_optional(*app, "--config-file", o.config_file,
               "Horovod's YAML file of these settings (params:, autotune:, timeline:, "
               "stall_check:, library_options:, logging:); a flag given on the command line "
               "wins over the file",
               "FILE");
  tuning(app->get_option("--config-file"));
  add_optional(*app, "--fusion-threshold-mb", t.fusion_threshold_mb,
               "Largest fused buffer, in MiB (HOROVOD_FUSION_THRESHOLD, in bytes; "
               "default 128; 0 turns fusion off)",
               "MB");
  tuning(app->get_option("--fusion-threshold-mb"));
  add_optional(*app, "--cycle-time-ms", t.cycle_time_ms,
               "Milliseconds between negotiation rounds (HOROVOD_CYCLE_TIME; default 1)", "MS");
  tuning(app->get_option("--cycle-time-ms"));
  add_optional(*app, "--cache-capacity", t.cache_capacity,
               "Entries in the response cache; 0 turns it off (HOROVOD_CACHE_CAPACITY; "
               "default 1024)",
               "N");
  tuning(app->get_option("--cache-capacity"));
  auto* har = app->add_flag_callback(
      "--hierarchical-allreduce", [&t] { t.hierarchical_allreduce = true; },
      "Reduce within each node, then across nodes (HOROVOD_HIERARCHICAL_ALLREDUCE=1)");
  auto* nohar = app->add_flag_callback(
      "--no-hierarchical-allreduce", [&t] { t.hierarchical_allreduce = false; },
      "Flat allreduce (HOROVOD_HIERARCHICAL_ALLREDUCE=0)");
  har->excludes(nohar);
  tuning(har);
  tuning(nohar);
  auto* hag = app->add_flag_callback(
      "--hierarchical-allgather", [&t] { t.hierarchical_allgather = true; },
      "Gather within each node first (HOROVOD_HIERARCHICAL_ALLGATHER=1)");
  auto* nohag = app->add_flag_callback(
      "--no-hierarchical-allgather", [&t] { t.hierarchical_allgather = false; },
      "Flat allgather (HOROVOD_HIERARCHICAL_ALLGATHER=0)");
  hag->excludes(nohag);
  tuning(hag);
  tuning(nohag);
  tuning(app->add_flag("--autotune", t.autotune,
                       "Tune the fusion threshold, cycle time, response cache and (on several nodes) "
                       "the hierarchical allreduce and allgather while training (HOROVOD_AUTOTUNE=1)"));
  add_optional(*app, "--autotune-log-file", t.autotune_log_file,
               "CSV log of the autotuner's samples (HOROVOD_AUTOTUNE_LOG)", "FILE");
  tuning(app->get_option("--autotune-log-file"));
  add_optional(*app, "--autotune-warmup-samples", t.autotune_warmup_samples,
               "Samples the autotuner discards first (HOROVOD_AUTOTUNE_WARMUP_SAMPLES)", "N");
  tuning(app->get_option("--autotune-warmup-samples"));
  add_optional(*app, "--autotune-steps-per-sample", t.autotune_steps_per_sample,
               "Steps per autotune sample (HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE)", "N");
  tuning(app->get_option("--autotune-steps-per-sample"));
  add_optional(*app, "--autotune-bayes-opt-max-samples", t.autotune_bayes_opt_max_samples,
               "Most samples of the Bayesian optimisation "
               "(HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES)",
               "N");
  tuning(app->get_option("--autotune-bayes-opt-max-samples"));
  add_optional(*app, "--autotune-gaussian-process-noise", t.autotune_gaussian_process_noise,
               "Noise of the autotuner's Gaussian process "
               "(HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE)",
               "X");
  tuning(app->get_option("--autotune-gaussian-process-noise"));
  add_optional(*app, "--timeline-filename", t.timeline_filename,
               "Write a Chrome-trace timeline of the collectives to FILE (HOROVOD_TIMELINE)",
               "FILE");
  tuning(app->get_option("--timeline-filename"));
  tuning(app->add_flag("--timeline-mark-cycles", t.timeline_mark_cycles,
                       "Mark negotiation rounds in the timeline (HOROVOD_TIMELINE_MARK_CYCLES=1)"));
  add_optional(*app, "--stall-check-warning-time-seconds", t.stall_check_warning_time_seconds,
               "Warn about tensors some ranks have not submitted after this long "
               "(HOROVOD_STALL_CHECK_TIME_SECONDS; default 60)",
               "S");
  tuning(app->get_option("--stall-check-warning-time-seconds"));
  add_optional(*app, "--stall-check-shutdown-time-seconds", t.stall_check_shutdown_time_seconds,
               "Fail such tensors after this long; 0 never "
               "(HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)",
               "S");
  tuning(app->get_option("--stall-check-shutdown-time-seconds"));
  tuning(app->add_flag("--no-stall-check", t.no_stall_check,
                       "Turn the stall inspector off (HOROVOD_STALL_CHECK_DISABLE=1)"));
  add_optional(*app, "--log-level", t.log_level,
               "trace, debug, info, warning, error or fatal (HOROVOD_LOG_LEVEL)", "LEVEL");
  tuning(app->get_option("--log-level"));
  add_optional(*app, "--thread-affinity", t.thread_affinity,
               "Core for each local rank's background thread, e.g. 0,8 "
               "(HOROVOD_THREAD_AFFINITY)",
               "CORES");
  tuning(app->get_option("--thread-affinity"));

  const std::string mpi = "Environment and MPI";
  app->add_option("-x", env_args,
                  "Pass VAR (its value here) or VAR=value to every rank; repeatable. The "
                  "rest of the environment arrives as the MPI passes it (MPICH: all of it)")
      ->type_name("VAR[=VALUE]")
      ->allow_extra_args(false)
      ->group(mpi);
  add_optional(*app, "--mpi-args", o.mpi_args,
               "Extra mpiexec arguments, split into words as a shell would (quotes work, "
               "nothing is expanded), e.g. \"-launcher fork\"",
               "\"ARGS\"");
  app->get_option("--mpi-args")->group(mpi);
  add_optional(*app, "--binding-args", o.binding_args,
               "Process binding arguments replacing the default (Open MPI: --bind-to none "
               "--map-by slot; MPICH and Intel MPI: none, the MPI's own default)",
               "\"ARGS\"");
  app->get_option("--binding-args")->group(mpi);
  app->add_option_function<std::vector<std::string>>(
         "--network-interfaces,--network-interface",
         [&o](const std::vector<std::string>& values) {
           for (const auto& v : values)
             o.network_interface = o.network_interface ? *o.network_interface + "," + v : v;
         },
         "Network interfaces for MPI and NCCL, e.g. eth0 or eth0,ib0; repeatable (MPICH and "
         "Intel MPI: -iface with the first, Open MPI: btl_tcp_if_include; all in "
         "NCCL_SOCKET_IFNAME)")
      ->type_name("IF[,IF...]")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(mpi);
  app->add_flag("--tcp", o.tcp_only,
                "Keep NCCL off InfiniBand (NCCL_IB_DISABLE=1), as horovodrun --tcp does; MPI "
                "uses the transports it was built with (--mpi-args to choose)")
      ->group(mpi);
  app->add_flag_callback("--mpi", [] {}, "Run on MPI: what hvdrun always does")->group(mpi);
  add_optional(*app, "-p,--ssh-port", o.ssh_port, "SSH port on the remote hosts", "PORT");
  app->get_option("--ssh-port")->group(mpi);
  add_optional(*app, "-i,--ssh-identity-file", o.ssh_identity_file,
               "SSH private key for the remote hosts", "FILE");
  app->get_option("--ssh-identity-file")->group(mpi);

  const std::string out = "Output";
  add_optional(*app, "--output-filename", o.output_filename,
               "Write each rank's output to files under DIR instead of the terminal "
               "(MPICH, Intel MPI: DIR/rank.R.stdout and DIR/rank.R.stderr; Open MPI: its "
               "own layout under DIR). DIR is created",
               "DIR");
  app->get_option("--output-filename")->group(out);
  app->add_flag_callback(
         "--prefix-output-with-timestamp", [&o] { o.timestamp_output = true; },
         "Put the time before each line of the ranks' output (Open MPI: --timestamp-output; "
         "Hydra has no such option: a note says so)")
      ->group(out);
  app->add_flag_callback(
         "--no-rank-prefix", [&o] { o.rank_prefix = false; },
         "Relay the ranks' output as written, without the rank before each line that "
         "horovodrun shows (not a horovodrun flag)")
      ->group(out);
  app->add_flag("--verbose", o.verbose, "Print the MPI command line before running it")
      ->group(out);
  app->add_flag("--dry-run", o.dry_run, "Print the MPI command line and exit without running")
      ->group(out);

  add_elastic_options(*app, el);
  add_scaling_options(*app, sc);
  add_ineffective_horovodrun_flags(*app, o);
  tuning(app->add_flag_callback("--no-autotune", [&t] { t.autotune = false; },
                                "The default: no autotuning"));
  tuning(app->add_flag_callback("--no-timeline-mark-cycles", [&t] { t.timeline_mark_cycles = false; },
                                "The default"));
  tuning(app->add_flag_callback("--stall-check", [&t] { t.no_stall_check = false; },
                                "The default: the stall inspector is on"));

  const std::string info = "Information";
  app->add_flag("--check-build", o.check_build,
                "Print which of MPI, CUDA, NCCL and hwloc libhvd was built with, as horovodrun --check-build does")
      ->group(info);
  app->add_flag("-v,--version", o.version, "Print hvdrun's and libhvd's versions")->group(info);
  app->set_help_flag("-h,--help", "Print this help and exit")->group(info);
  return app;
}

// Splits args into hvdrun's own options (rewritten so that CLI11 sees every value
// attached to its option) and the command, which starts at the first word that is
// neither an option nor an option's value.
// Returns an error for a refused or unknown option (empty if none).
std::string split_arguments(const CLI::App& app, const std::vector<std::string>& args,
                            std::vector<std::string>& own, std::vector<std::string>& command) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      return {};
    }
    if (args[i].size() < 2 || args[i][0] != '-') {
      command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      return {};
    }
    std::string tok = normalize_alias(args[i]);
    if (auto refused = refused_flag(tok.substr(0, tok.find('=')))) return *refused;
    if (!known_option(app, tok))
      return "unknown option '" + args[i] + "': hvdrun does not know it (it takes horovodrun's "
             "options and a few of its own; the command starts at the first word that is not "
             "an option, or after --)";
    const CLI::Option* opt = nullptr;
    if (tok.find('=') == std::string::npos) opt = app.get_option_no_throw(tok);
    if (!opt || opt->get_expected_min() == 0 || i + 1 >= args.size()) {
      own.push_back(tok);
      continue;
    }
    if (opt->get_expected_min() > 1) {
      // --blacklist-cooldown-range MIN MAX: its words, as given.
      own.push_back(tok);
      for (int k = 0; k < opt->get_expected_min() && i + 1 < args.size(); ++k) own.push_back(args[++i]);
      continue;
    }
    // Attaching the value keeps CLI11 from reading "-launcher fork" as an option.
    const std::string& value = args[++i];
    if (tok.rfind("--", 0) == 0) {
      own.push_back(tok + "=" + value);
    } else if (!value.empty()) {
      own.push_back(tok + value);
    } else {
      own.push_back(tok);
      own.push_back(value);
    }
  }
  return {};
}

CliOutcome error(std::string message) {
  CliOutcome r;
  r.kind = CliOutcome::Kind::Error;
  r.text = std::move(message);
  return r;
}

}  // namespace

CliOutcome parse_command_line(const std::vector<std::string>& args) {
  CliOutcome outcome;
  std::vector<std::string> env_args;
  ScalingArgs scaling;
  ElasticArgs elastic;
  std::optional<std::string> num_proc_text;
  std::unique_ptr<CLI::App> app;
  try {
    app = make_app(outcome.options, env_args, scaling, elastic, num_proc_text);
  } catch (const std::exception& e) {
    return error(std::string("internal error building the option table: ") + e.what());
  }

  std::vector<std::string> own;
  const std::string refused = split_arguments(*app, args, own, outcome.options.command);
  if (!refused.empty()) return error(refused);
  // CLI11 takes the arguments last-first.
  std::vector<std::string> reversed(own.rbegin(), own.rend());
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    outcome.kind = CliOutcome::Kind::Help;
    outcome.text = help_text();
    return outcome;
  } catch (const CLI::ConversionError& e) {
    // CLI11: "Could not convert: --cycle-time-ms = fast"
    const std::string what = e.what();
    const size_t colon = what.find(": "), eq = what.find(" = ");
    if (colon != std::string::npos && eq != std::string::npos && eq > colon)
      return error(what.substr(colon + 2, eq - colon - 2) + " expects a number, got '" +
                   what.substr(eq + 3) + "'");
    return error(what);
  } catch (const CLI::ParseError& e) {
    return error(e.what());
  } catch (const std::exception& e) {
    return error(e.what());
  }

  LaunchOptions& o = outcome.options;
  if (o.config_file) {
    auto entries = read_config_file(*o.config_file);
    if (!entries) return error(entries.error());
    auto given = [&app](const std::string& flag) {
      const CLI::Option* opt = app->get_option_no_throw(flag);
      return opt && opt->count() > 0;
    };
    Status applied = apply_config(*entries, *o.config_file, given, o);
    if (!applied) return error(applied.error());
  }
  if (num_proc_text) {
    o.num_proc = parse_whole_number(*num_proc_text);
    if (!o.num_proc)
      return error("-np/--num-proc expects a whole number of ranks, got '" + *num_proc_text + "'");
  }
  for (const auto& arg : env_args) {
    size_t eq = arg.find('=');
    EnvForward f{arg.substr(0, eq), std::nullopt};
    if (eq != std::string::npos) f.value = arg.substr(eq + 1);
    if (!valid_env_name(f.name))
      return error("-x " + arg + ": '" + f.name +
                   "' is not a valid environment variable name (letters, digits and _, not "
                   "starting with a digit)");
    o.env.push_back(std::move(f));
  }
  if (o.num_proc && *o.num_proc < 1)
    return error("-np " + std::to_string(*o.num_proc) + ": the number of processes must be at "
                 "least 1");
  if (o.ssh_port && (*o.ssh_port < 1 || *o.ssh_port > 65535))
    return error("--ssh-port " + std::to_string(*o.ssh_port) + ": not a TCP port (1-65535)");
  if (o.output_filename && o.output_filename->empty())
    return error("--output-filename: the directory name is empty");

  auto checked = check_scaling(scaling, o);
  if (!checked) return error(checked.error());
  o.scaling = std::move(checked).value();
  const char* env_timeout = std::getenv("HOROVOD_ELASTIC_TIMEOUT");
  auto elastic_checked = check_elastic(
      elastic, o, env_timeout ? std::optional<std::string>(env_timeout) : std::nullopt);
  if (!elastic_checked) return error(elastic_checked.error());
  o.elastic = std::move(elastic_checked).value();

  bool informational = o.check_build || o.version;
  if (o.command.empty() && !informational)
    return error("no command to run: give the program and its arguments after the options, "
                 "e.g. hvdrun -np 2 python train.py");
  if (!o.num_proc && !o.hosts && !o.hostfile && !o.scaling && !informational)
    return error("-np is missing: say how many processes to start, e.g. hvdrun -np 2 " +
                 (o.command.empty() ? std::string("python train.py") : o.command[0]));
  outcome.kind = CliOutcome::Kind::Run;
  return outcome;
}

std::string help_text() {
  LaunchOptions unused;
  std::vector<std::string> env_args;
  ScalingArgs scaling;
  ElasticArgs elastic;
  std::optional<std::string> num_proc_text;
  auto app = make_app(unused, env_args, scaling, elastic, num_proc_text);
  return app->help();
}

}  // namespace hvdrun
