// Horovod's tuning flags to the HOROVOD_* variables libhvd reads, in Horovod's
// units (the fusion threshold in bytes, the cycle time in milliseconds).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "options.h"
#include "result.h"

namespace hvdrun {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The variables for the flags that were given, in a fixed order; an error names
// the flag and the accepted values.
Result<EnvList> tuning_environment(const TuningOptions& tuning);

// Sets name=value in list, replacing an earlier entry of the same name in place.
void set_env(EnvList& list, const std::string& name, const std::string& value);

// Shortest decimal text of a finite double ("5", "0.25").
std::string format_number(double value);

}  // namespace hvdrun
