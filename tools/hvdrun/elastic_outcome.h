// What an elastic generation's end means for the job, from the ranks' exit statuses
// and hosts lost or silent (docs/elastic.md, "How a generation ends"). Pure: the
// driver (elastic_driver.cpp) acts on it, tests call it with any report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hosts.h"
#include "job_report.h"

namespace hvdrun {

// The status a worker leaves with for a change of hosts (EX_TEMPFAIL), and the one for
// a collective that failed because of another rank.
inline constexpr int kElasticRestartStatus = 75;
inline constexpr int kElasticPeerFailedStatus = 76;

enum class GenerationEnd {
  kDone,             // the training function returned on every rank: the job is done
  kLeftForNewHosts,  // the ranks left (75) for a change of hosts: not a failure
  kFailed,           // the next generation starts from the last commit
};

struct GenerationVerdict {
  GenerationEnd end = GenerationEnd::kFailed;
  std::string done_note;             // kDone: what happened after the ranks returned, if anything
  std::vector<std::string> blamed;   // kFailed: the hosts to leave out
  std::string cause;                 // kFailed: "rank 1 (pid 42 on b) exited with status 1"
  std::string after;                 // kFailed: ", after ..." for the next generation's line
};

// `ranks`: the generation's ranks per host (assign_ranks), `np` their number.
// A rank that failed on its own (not 76, not killed in the launcher's cleanup) blames
// its host; a lost host or one whose ranks went silent (cut off from the launcher) is
// blamed as that host; ranks that all returned 0 before a host went silent did the
// work: hvd.elastic.run returns only once the function returned on every rank.
GenerationVerdict judge_generation(const JobReport& report, const HostList& ranks, int64_t np);

}  // namespace hvdrun
