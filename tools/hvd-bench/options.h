// Command line of hvd-bench: what to measure and how often. Parsed before MPI starts,
// so that a bad flag ends every rank the same way, with nothing left to clean up.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hvdbench {

enum class Mode { Sweep, Workload, Tensors, Idle };

struct Options {
  Mode mode = Mode::Sweep;
  bool json = false;
  bool baseline = false;
  bool contiguous = false;  // the step's tensors back to back in one allocation
  bool grouped = false;     // libhvd's step as one grouped allreduce, not a call per tensor
  // libhvd's step as one allreduce per bucket of consecutive tensors up to this many
  // bytes of the flat buffer (0: not bucketed); implies contiguous.
  int64_t bucket_bytes = 0;
  bool huge_pages = false;  // buffers from hvd_alloc_host (huge pages from 1 MiB up)

  // Repetitions: measured and warm-up.
  int iters = 20;
  int warmup = 5;
  // Steps run back to back inside one timed repetition; 0 picks a count from the
  // step's size (small steps are too short to time alone).
  int inner = 0;

  // Workload and tensors modes.
  std::string workload;                 // as given on the command line
  std::string workload_path;            // resolved file
  std::vector<int64_t> tensor_counts;   // elements per tensor, file order

  // Sweep mode (nccl-tests conventions).
  int64_t min_bytes = 8;
  int64_t max_bytes = 128ll << 20;
  int64_t step_factor = 2;
  int64_t step_bytes = 0;  // -i: additive step; 0 means multiply by step_factor
  std::string redop = "sum";
  std::string dtype = "float";
  int root = 0;
  bool check = true;
  std::vector<std::string> collectives{"allreduce"};

  // Idle mode.
  double idle_seconds = 0;

  // Conveniences that set HOROVOD_* before hvd_init.
  std::optional<std::string> fusion_threshold;
  std::optional<std::string> cycle_time;
};

// Parses argv. Returns the exit code to end with (0 after --help) when the program
// should stop, or nothing when it should run. Messages go to stderr, from the first
// rank only when the launcher says which rank this is.
std::optional<int> parse_options(int argc, char** argv, Options* options);

// "8", "64K", "128M", "1G" (binary multiples, as nccl-tests reads them).
std::optional<int64_t> parse_size(const std::string& text);

// The collectives the sweep knows, in the order "all" runs them.
const std::vector<std::string>& sweep_collectives();

}  // namespace hvdbench
