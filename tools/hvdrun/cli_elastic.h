// hvdrun's elastic options (horovodrun's --host-discovery-script, --min-np, --max-np,
// --slots-per-host, --elastic-timeout, --reset-limit, --blacklist-cooldown-range):
// declared on the command line, then checked together once parsed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "options.h"
#include "result.h"

namespace CLI {
class App;
}

namespace hvdrun {

// The elastic options as typed; checked after parsing (check_elastic).
struct ElasticArgs {
  std::optional<std::string> discovery_script;
  std::optional<int64_t> min_np, max_np, slots_per_host, reset_limit;
  std::optional<double> elastic_timeout_s;
  std::vector<int64_t> cooldown_range;  // MIN MAX
};

// Declares the elastic options (a group of their own in --help).
void add_elastic_options(CLI::App& app, ElasticArgs& args);

// The elastic options after parsing (none without --host-discovery-script): each
// number in range, -np and --min-np filled in from each other, the flags that need a
// discovery script given with one. env_timeout: HOROVOD_ELASTIC_TIMEOUT, if set.
Result<std::optional<ElasticOptions>> check_elastic(const ElasticArgs& args, LaunchOptions& launch,
                                                    const std::optional<std::string>& env_timeout);

}  // namespace hvdrun
