// The registry's groups, and the warnings for set variables that look like knobs but
// are none (a typo, a retired knob).
#include <unistd.h>  // environ

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "params/params.h"

namespace hvd {

const char* param_group_title(ParamGroup group) {
  switch (group) {
    case ParamGroup::FusionAndCycle: return "Fusion and cycle";
    case ParamGroup::Hierarchical: return "Hierarchical collectives";
    case ParamGroup::Autotune: return "Autotune";
    case ParamGroup::Timeline: return "Timeline";
    case ParamGroup::StallsAndTimeouts: return "Stalls and timeouts";
    case ParamGroup::AffinityAndThreads: return "Affinity and threads";
    case ParamGroup::Gpu: return "GPU";
    case ParamGroup::LoggingAndSummary: return "Logging and step summary";
    case ParamGroup::Advanced: return "Advanced: policy overrides and internals";
    case ParamGroup::TestOnly: return "For tests only";
  }
  return "";
}

const char* param_group_blurb(ParamGroup group) {
  switch (group) {
    case ParamGroup::FusionAndCycle:
      return "How many tensors go in one collective and how often ranks negotiate.";
    case ParamGroup::Hierarchical:
      return "Collectives that go through each node before crossing nodes.";
    case ParamGroup::Autotune: return "The online search over fusion, cycle time and algorithms.";
    case ParamGroup::Timeline: return "A Chrome-trace record of every tensor's life.";
    case ParamGroup::StallsAndTimeouts:
      return "What happens when ranks disagree or a collective hangs.";
    case ParamGroup::AffinityAndThreads:
      return "Where the process and its background thread run.";
    case ParamGroup::Gpu: return "Device-memory tensors and which GPU a rank uses.";
    case ParamGroup::LoggingAndSummary: return "What libhvd prints and measures.";
    case ParamGroup::Advanced:
      return "Overrides of choices libhvd makes by measuring the machine and the job, and "
             "values set by hvdrun. The defaults are measured; set these only to compare "
             "or where a measurement misjudges a machine.";
    case ParamGroup::TestOnly:
      return "Knobs that libhvd's own tests set to reach a path; never needed in a job.";
  }
  return "";
}

namespace {

// Knobs that became internal constants: setting one has no effect, so say so.
struct RetiredParam {
  const char* name;
  const char* now;
};
const RetiredParam kRetiredParams[] = {
    {"HVD_SPIN_US", "waiting threads poll 50 us before they sleep"},
    {"HVD_POLL_US", "the background thread sleeps at most 200 us between polls"},
    {"HVD_IDLE_POLL_MS", "an idle background thread checks for work every 5 ms"},
};

// Horovod's own variables that libhvd does not read, within a typo of a knob of ours:
// set for Horovod, they are no mistake.
const char* const kHorovodOnlyNames[] = {"HOROVOD_CPU_OPERATIONS"};

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

}  // namespace

std::vector<std::string> unknown_param_warnings(const std::vector<std::string>& names) {
  std::vector<std::string> warnings;
  for (const std::string& name : names) {
    if (!starts_with(name, "HVD_") && !starts_with(name, "HOROVOD_")) continue;
    bool known = false;
    const char* nearest = nullptr;
    size_t nearest_distance = SIZE_MAX;
    for (const ParamInfo& info : param_registry()) {
      if (name == info.name) {
        known = true;
        break;
      }
      size_t d = edit_distance(name, info.name);
      if (d < nearest_distance) nearest_distance = d, nearest = info.name;
    }
    if (known) continue;
    const RetiredParam* retired = nullptr;
    for (const RetiredParam& r : kRetiredParams)
      if (name == r.name) retired = &r;
    if (retired) {
      warnings.push_back(name + " is no longer read: " + retired->now +
                         " (an internal constant now); unset it");
      continue;
    }
    // A typo is a letter or two; other programs' variables (HOROVOD_RANK,
    // HVD_ELASTIC_DRIVER) lie further from every knob and are not ours to judge.
    const size_t typo = name.size() >= 16 ? 3 : 2;
    const bool horovods = std::any_of(std::begin(kHorovodOnlyNames), std::end(kHorovodOnlyNames),
                                      [&name](const char* n) { return name == n; });
    if (nearest && nearest_distance <= typo && !horovods)
      warnings.push_back(name + " is set but is not a libhvd knob; did you mean " + nearest +
                         "? (hvd-info -c lists every knob)");
  }
  return warnings;
}

std::vector<std::string> unknown_env_param_warnings() {
  std::vector<std::string> names;
  for (char** entry = environ; entry && *entry; ++entry) {
    const char* equals = std::strchr(*entry, '=');
    if (equals) names.emplace_back(*entry, static_cast<size_t>(equals - *entry));
  }
  return unknown_param_warnings(names);
}

}  // namespace hvd
