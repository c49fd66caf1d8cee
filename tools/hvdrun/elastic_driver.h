// An elastic job (--host-discovery-script): a sequence of generations, each one
// ordinary fixed-size MPI job launched as a non-elastic run is, on the hosts the
// discovery script reports less those left out after a failure. A generation whose
// ranks all return 0 ends the job; one whose ranks leave with status 75 (a change of
// hosts they were told of) is followed by the next on the new hosts; a failure leaves
// the failing host out and starts the next from the last commit. The workers' side
// (hvd.elastic) and what passes between them: docs/elastic.md.
#pragma once

#include "elastic_outcome.h"
#include "options.h"
#include "plan.h"

namespace hvdrun {

// How often the discovery script runs (Horovod: every second).
inline constexpr double kDiscoveryIntervalSeconds = 1;

// Runs the job of options (options.elastic set); returns hvdrun's exit status.
int run_elastic_job(const LaunchOptions& options, const PlanContext& context);

}  // namespace hvdrun
