#include "cli_elastic.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "cli_option.h"

namespace hvdrun {

// Horovod's bounds on the blacklist's cooldown (runner/elastic/discovery.py).
constexpr int64_t kCooldownLowest = 1;
constexpr int64_t kCooldownHighest = 3600;

void add_elastic_options(CLI::App& app, ElasticArgs& a) {
  const std::string group = "Elastic training (docs/elastic.md)";
  add_optional(app, "--host-discovery-script", a.discovery_script,
               "Elastic training: a program (run with /bin/sh -c) that prints the hosts "
               "available now, one a line as 'host' or 'host:slots'. hvdrun runs it at the "
               "start (a failure there ends the job) and every second; the job runs as a "
               "sequence of MPI jobs, a new one when hosts come or go or a rank fails",
               "SCRIPT");
  app.get_option("--host-discovery-script")->group(group);
  add_optional(app, "--min-np,--min-num-proc", a.min_np,
               "Fewest ranks the job runs with; with fewer slots it waits for hosts, at most "
               "--elastic-timeout. Default -np",
               "N");
  app.get_option("--min-np")->group(group);
  add_optional(app, "--max-np,--max-num-proc", a.max_np,
               "Most ranks the job runs with. Default: every slot discovered", "N");
  app.get_option("--max-np")->group(group);
  add_optional(app, "--slots-per-host,--slots", a.slots_per_host,
               "Slots of a host the discovery script prints without ':slots'. Default 1", "N");
  app.get_option("--slots-per-host")->group(group);
  add_optional(app, "--elastic-timeout", a.elastic_timeout_s,
               "Seconds to wait for --min-np slots before the job ends (default 600, or "
               "HOROVOD_ELASTIC_TIMEOUT)",
               "S");
  app.get_option("--elastic-timeout")->group(group);
  add_optional(app, "--reset-limit", a.reset_limit,
               "Most restarts after a failure; one more failure ends the job. Default: no "
               "limit. Host changes the ranks leave for (status 75) do not count",
               "N");
  app.get_option("--reset-limit")->group(group);
  app.add_option("--blacklist-cooldown-range", a.cooldown_range,
                 "A failing host is left out for MIN seconds, doubling with each failure of "
                 "it, at most MAX (1 <= MIN <= MAX <= 3600). Default: left out for the rest "
                 "of the job")
      ->expected(2)
      ->type_name("MIN MAX")
      ->group(group);
}

Result<std::optional<ElasticOptions>> check_elastic(const ElasticArgs& a, LaunchOptions& o,
                                                    const std::optional<std::string>& env_timeout) {
  using R = Result<std::optional<ElasticOptions>>;
  if (!a.discovery_script) {
    const std::pair<bool, const char*> needing[] = {
        {a.min_np.has_value(), "--min-np"},
        {a.max_np.has_value(), "--max-np"},
        {a.slots_per_host.has_value(), "--slots-per-host"},
        {a.elastic_timeout_s.has_value(), "--elastic-timeout"},
        {a.reset_limit.has_value(), "--reset-limit"},
        {!a.cooldown_range.empty(), "--blacklist-cooldown-range"}};
    for (const auto& [given, flag] : needing)
      if (given)
        return R::failure(std::string(flag) +
                          " is an elastic training option: add --host-discovery-script SCRIPT "
                          "(a program printing the available hosts, one 'host:slots' a line), "
                          "or leave " + flag + " out to run a fixed number of ranks");
    return std::optional<ElasticOptions>();
  }
  ElasticOptions e;
  e.discovery_script = *a.discovery_script;
  if (e.discovery_script.empty())
    return R::failure("--host-discovery-script: the script's name is empty");
  if (o.hosts || o.hostfile)
    return R::failure(std::string(o.hosts ? "-H" : "--hostfile") +
                      " and --host-discovery-script: an elastic job runs on the hosts the "
                      "discovery script prints; leave " + (o.hosts ? "-H" : "--hostfile") +
                      " out (or the script out, for a fixed set of hosts)");
  if (o.scaling)
    return R::failure("--scaling and --host-discovery-script: a scaling study runs fixed sizes; "
                      "give one of them");
  if (o.output_filename)
    return R::failure("--output-filename with --host-discovery-script: an elastic job's "
                      "generations would write over each other's files; leave it out (the "
                      "ranks' output comes to the terminal, each line with its rank)");
  if (o.dry_run)
    return R::failure("--dry-run with --host-discovery-script: an elastic job's command lines "
                      "depend on the hosts found while it runs; run it with --verbose to see each");
  auto at_least = [](const char* flag, int64_t v, int64_t low) -> std::string {
    if (v >= low) return "";
    return std::string(flag) + " " + std::to_string(v) + ": must be at least " + std::to_string(low);
  };
  if (!o.num_proc && !a.min_np)
    return R::failure("-np is missing: say how many ranks the elastic job starts with, e.g. "
                      "-np 4 --host-discovery-script " + e.discovery_script);
  if (a.min_np) {
    if (auto bad = at_least("--min-np", *a.min_np, 1); !bad.empty()) return R::failure(bad);
  }
  const int64_t np = o.num_proc ? *o.num_proc : *a.min_np;
  e.min_np = a.min_np ? *a.min_np : np;
  o.num_proc = np;
  if (*e.min_np > np)
    return R::failure("--min-np " + std::to_string(*e.min_np) + " is more than -np " +
                      std::to_string(np) + ": the job starts with -np ranks and never runs "
                      "with fewer than --min-np; lower --min-np or raise -np");
  if (a.max_np) {
    if (*a.max_np < np)
      return R::failure("--max-np " + std::to_string(*a.max_np) + " is less than -np " +
                        std::to_string(np) + ": raise --max-np or lower -np");
    e.max_np = a.max_np;
  }
  if (a.slots_per_host) {
    if (auto bad = at_least("--slots-per-host", *a.slots_per_host, 1); !bad.empty())
      return R::failure(bad);
    e.slots_per_host = a.slots_per_host;
  }
  if (a.reset_limit) {
    if (auto bad = at_least("--reset-limit", *a.reset_limit, 0); !bad.empty()) return R::failure(bad);
    e.reset_limit = a.reset_limit;
  }
  if (a.elastic_timeout_s) {
    e.elastic_timeout_s = *a.elastic_timeout_s;
  } else if (env_timeout && !env_timeout->empty()) {
    char* end = nullptr;
    e.elastic_timeout_s = std::strtod(env_timeout->c_str(), &end);
    if (*end != '\0')
      return R::failure("HOROVOD_ELASTIC_TIMEOUT=" + *env_timeout +
                        ": expects a number of seconds, e.g. 600");
  }
  if (!(e.elastic_timeout_s > 0))
    return R::failure("--elastic-timeout: the seconds to wait for --min-np slots must be more "
                      "than 0");
  if (!a.cooldown_range.empty()) {
    const int64_t lo = a.cooldown_range[0], hi = a.cooldown_range[1];
    if (lo < kCooldownLowest || hi > kCooldownHighest || lo > hi)
      return R::failure("--blacklist-cooldown-range " + std::to_string(lo) + " " +
                        std::to_string(hi) + ": give MIN MAX seconds with 1 <= MIN <= MAX <= 3600");
    e.cooldown_range = std::make_pair(lo, hi);
  }
  return std::optional<ElasticOptions>(std::move(e));
}

}  // namespace hvdrun
