#include "cli_scaling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "cli_option.h"
#include "hosts.h"

namespace hvdrun {
namespace {

// "1,2,4": distinct positive sizes, returned in ascending order.
Result<std::vector<int64_t>> parse_sizes(const std::string& text) {
  using R = Result<std::vector<int64_t>>;
  const std::string what = "--scaling " + text + ": ";
  std::vector<int64_t> sizes;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string word = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (word.empty())
      return R::failure(what + "give the numbers of ranks separated by commas, e.g. 1,2,4");
    int64_t n = 0;
    for (char c : word) {
      if (c < '0' || c > '9' || n > kMaxSlotsPerHost)
        return R::failure(what + "'" + word +
                          "' is not a number of ranks (a whole number, 1 "
                          "or more)");
      n = n * 10 + (c - '0');
    }
    if (n < 1) return R::failure(what + "a size must be at least 1 rank");
    if (std::find(sizes.begin(), sizes.end(), n) != sizes.end())
      return R::failure(what + std::to_string(n) + " is given twice");
    sizes.push_back(n);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

}  // namespace

void add_scaling_options(CLI::App& app, ScalingArgs& sc) {
  const std::string scale = "Scaling (run the command at several sizes; docs/scaling.md)";
  ScalingOptions& so = sc.options;
  add_optional(app, "--scaling", sc.sizes,
               "Run the command once on each number of ranks (instead of -np), with "
               "hosts as -H/--hostfile give them (the first N slots) or on this machine, and "
               "print step time, throughput, scaling efficiency against the smallest size "
               "and the share of exposed communication, read from the step summary libhvd "
               "writes (HVD_SUMMARY_FILE)",
               "N,N,...");
  app.get_option("--scaling")->group(scale);
  add_optional(app, "--steps", so.steps,
               "Measure the first K steps after warm-up in each run (HVD_STEP_STATS_STEPS)", "K");
  add_optional(app, "--samples-per-step", so.samples_per_step,
               "Samples each rank takes per step (its batch size): throughput in samples/s", "B");
  add_optional(app, "--price-per-hour", so.price_per_hour,
               "Price of one rank (GPU, node) per hour: adds time and cost at each size "
               "(needs --hours)",
               "P");
  add_optional(app, "--hours", so.hours, "Hours the job takes on the smallest size", "T");
  add_optional(app, "--time-value", so.time_value,
               "Value of an hour of waiting for the result: adds the total (cost plus "
               "waiting) and the break-even efficiency at each size",
               "W");
  add_optional(app, "--json", so.json_file, "Write every figure to FILE as JSON", "FILE");
  add_optional(app, "--plot", so.plot_file,
               "Draw efficiency and cost (or throughput) against ranks into FILE.png "
               "(python3 with matplotlib)",
               "FILE.png");
  for (const char* name : {"--steps", "--samples-per-step", "--price-per-hour", "--hours",
                           "--time-value", "--json", "--plot"})
    app.get_option(name)->group(scale);
}

Result<std::optional<ScalingOptions>> check_scaling(const ScalingArgs& args,
                                                    const LaunchOptions& launch) {
  using R = Result<std::optional<ScalingOptions>>;
  const ScalingOptions& given = args.options;
  const std::pair<const char*, bool> scaling_only[] = {
      {"--steps", given.steps.has_value()},
      {"--samples-per-step", given.samples_per_step.has_value()},
      {"--price-per-hour", given.price_per_hour.has_value()},
      {"--hours", given.hours.has_value()},
      {"--time-value", given.time_value.has_value()},
      {"--json", given.json_file.has_value()},
      {"--plot", given.plot_file.has_value()}};
  if (!args.sizes) {
    for (const auto& [name, set] : scaling_only)
      if (set)
        return R::failure(std::string(name) +
                          " needs --scaling: it describes the runs of "
                          "--scaling N,N,...");
    return std::optional<ScalingOptions>();
  }
  if (launch.num_proc) return R::failure("--scaling runs each size it lists; leave out -np");
  if (given.price_per_hour && !given.hours)
    return R::failure("--price-per-hour needs --hours (the job's hours on the smallest size)");
  if (given.hours && !given.price_per_hour)
    return R::failure("--hours needs --price-per-hour (the price of one rank per hour)");
  if (given.time_value && !given.price_per_hour)
    return R::failure("--time-value needs --price-per-hour and --hours");
  auto sizes = parse_sizes(*args.sizes);
  if (!sizes) return R::failure(sizes.error());
  ScalingOptions o = args.options;
  o.sizes = std::move(sizes).value();
  if (o.steps && *o.steps < 1)
    return R::failure("--steps " + std::to_string(*o.steps) + ": measure at least 1 step");
  auto positive = [](const char* name, const std::optional<double>& v, bool zero_ok) {
    if (!v || (std::isfinite(*v) && (zero_ok ? *v >= 0 : *v > 0))) return std::string();
    char value[32];
    std::snprintf(value, sizeof value, "%g", *v);
    return std::string(name) + " " + value + ": must be " + (zero_ok ? "0 or more" : "more than 0");
  };
  for (const auto& problem :
       {positive("--samples-per-step", o.samples_per_step, false),
        positive("--price-per-hour", o.price_per_hour, false), positive("--hours", o.hours, false),
        positive("--time-value", o.time_value, true)})
    if (!problem.empty()) return R::failure(problem);
  for (const auto* file : {&o.json_file, &o.plot_file})
    if (*file && (*file)->empty()) return R::failure("--json/--plot: the file name is empty");
  return std::optional<ScalingOptions>(std::move(o));
}

}  // namespace hvdrun
