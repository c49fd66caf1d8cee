// hvdrun's --scaling options: declared on the command line, then checked together
// once parsed (which need --scaling, which need each other, every number in range).
#pragma once

#include <optional>
#include <string>

#include "options.h"
#include "result.h"

namespace CLI {
class App;
}

namespace hvdrun {

// --scaling and its options as typed; checked after parsing (check_scaling).
struct ScalingArgs {
  std::optional<std::string> sizes;
  ScalingOptions options;
};

// Declares --scaling and the options that describe its runs (a group of their own in
// --help).
void add_scaling_options(CLI::App& app, ScalingArgs& sc);

// The scaling options after parsing (none without --scaling): the sizes read, every
// number in its range, the options that go together given together.
Result<std::optional<ScalingOptions>> check_scaling(const ScalingArgs& args,
                                                    const LaunchOptions& launch);

}  // namespace hvdrun
