// Every configuration knob, declared once (params.cpp) with its type, default and
// description. Horovod's names, defaults and units; our own knobs use the HVD_ prefix.
// Only params.cpp reads the environment.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/log.h"
#include "ops/device/gpu_operations.h"
#include "topo/pin_options.h"

// HVD_ALLREDUCE_CHUNK_BYTES's default, per MPI, measured on resnet50 with 2 ranks
// (docs/performance.md, 2026-11-25): MPICH reduces as fast or faster in 1 MiB chunks;
// Open MPI pays per call, and with 16 MiB chunks libhvd reached 0.81 x the limit
// over shared memory against 0.42 x with 1 MiB, 0.71 x against 0.60 x on the lab.
#ifdef HVD_MPI_OPENMPI
#define HVD_ALLREDUCE_CHUNK_BYTES_DEFAULT 16777216
#else
#define HVD_ALLREDUCE_CHUNK_BYTES_DEFAULT 1048576
#endif

namespace hvd {

struct Params {
  int64_t fusion_threshold = 128ll << 20;  // bytes; 0 disables fusion
  double cycle_time_ms = 1.0;
  int64_t cache_capacity = 1024;           // 0 disables the response cache
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;
  bool hierarchical_cross_mpi = false;
  std::string timeline;
  bool timeline_mark_cycles = false;
  bool autotune = false;
  std::string autotune_log;
  int64_t autotune_warmup_samples = 3;
  int64_t autotune_steps_per_sample = 10;
  int64_t autotune_bayes_opt_max_samples = 20;
  double autotune_gaussian_process_noise = 0.8;
  // Where the search starts when the knob itself is not set (0: its usual default).
  int64_t autotune_start_fusion_threshold = 0;
  double autotune_start_cycle_time_ms = 0;
  double stall_check_time_s = 60.0;
  double stall_shutdown_time_s = 0.0;
  bool stall_check_disable = false;
  // Longest a collective may stay in flight before the watchdog ends the job. 600 s,
  // as PyTorch's NCCL process groups: far above any healthy collective (a 10 GB
  // allreduce over 10 Gbit/s takes about 20 s), far below a hang's cost.
  double op_timeout_s = 600.0;
  // At exit, how long libhvd's own MPI_Finalize may take: it waits on every peer and
  // on the launcher, and one that became unreachable after the work was done held the
  // process for ever. 30 s: a healthy finalize takes milliseconds.
  double finalize_timeout_s = 30.0;
  // Tests only: a pause after each chunk of a collective (base/op_progress.h).
  int64_t test_progress_delay_ms = 0;
  // Set by hvdrun's rank monitor: where libhvd writes the time this process began to
  // exit, so hvdrun can tell the rank that failed first from ranks that failed
  // because of it (an exit's own shutdown and MPI_Finalize take time). -1: none.
  int64_t exit_notice_fd = -1;
  LogLevel log_level = LogLevel::Warning;
  std::string thread_affinity;
  GpuOperations gpu_operations = GpuOperations::Auto;
  std::string nccl_library;  // "": NCCL by its soname (ops/nccl/nccl_loader.h)
  bool disable_group_fusion = false;
  bool gpu_pinning = true;
  CpuBind cpu_bind = CpuBind::Auto;
  std::string topology_xml;
  std::string cuda_visible_devices;  // read, not set: pinning maps ordinals through it
  int64_t allreduce_chunk_bytes = HVD_ALLREDUCE_CHUNK_BYTES_DEFAULT;
  int64_t inplace_min_bytes = 256ll << 10;
  // Whether tensors of inplace_min_bytes and more join fused batches (execute/fusion_planner.h),
  // and the other knobs that read auto|never|always.
  enum class AutoChoice { Auto, Never, Always };
  AutoChoice fuse_large = AutoChoice::Auto;  // auto: in process sets that span nodes
  // HVD_FUSED_RING (execute/execute_ring.cpp); auto: likewise, batches of 64 KiB and more.
  AutoChoice fused_ring = AutoChoice::Auto;
  // auto: large allreduces go in kFarCoresChunkBytes calls while a node's first two
  // ranks sit on cores that share no cache (probed; adapt/far_cores.h)
  AutoChoice far_cores = AutoChoice::Auto;
  int64_t fusion_piece_bytes = 1ll << 20;
  int64_t speculative_bytes = 16ll << 10;  // see negotiate/speculation.h; agreed at init
  int64_t bg_spin_us = 50;  // tests: 0 makes the background thread sleep at once
  int64_t burst_gap_us = 50;
  bool burst_cap_measure = true;  // tests: 0 leaves the burst cap to the placement
  int64_t cache_toggle_rounds = 0;  // tests: flip the response cache every N rounds
  bool step_stats = true;           // step accounting (see observe/step_stats.h)
  int64_t step_stats_warmup = 1;    // recorded steps not measured at the start
  bool summary = false;             // rank 0 prints the step summary at shutdown
  std::string summary_file;         // and writes it as JSON here
};

enum class ParamType { Bool, Int, Double, Bytes, String, Choice };

// What a user is doing when they reach for a knob; the reference (hvd-info,
// docs/configuration.md) lists the knobs in these groups, in this order. The last two
// are not for users: overrides of policies that measure the machine, values set by
// hvdrun, and knobs that only tests set.
enum class ParamGroup {
  FusionAndCycle,
  Hierarchical,
  Autotune,
  Timeline,
  StallsAndTimeouts,
  AffinityAndThreads,
  Gpu,
  LoggingAndSummary,
  Advanced,
  TestOnly,
};
constexpr int kParamGroupCount = static_cast<int>(ParamGroup::TestOnly) + 1;

// The group's heading and one sentence on when its knobs matter.
const char* param_group_title(ParamGroup group);
const char* param_group_blurb(ParamGroup group);

struct ParamInfo {
  const char* name;
  ParamType type;
  const char* default_text;
  const char* description;
  ParamGroup group = ParamGroup::FusionAndCycle;  // set by the registry's section
};

// Function that returns the value of an environment variable or nullptr.
using EnvLookup = std::function<const char*(const char*)>;

// Reads every knob through lookup. Invalid values keep the default and add a warning
// (one sentence naming the variable, the value and what is accepted) to *warnings.
Params load_params(const EnvLookup& lookup, std::vector<std::string>* warnings);

// The same from the process environment.
Params load_params_from_env(std::vector<std::string>* warnings);

// Warnings for variables that look like knobs but are not: each name of names with the
// HVD_ or HOROVOD_ prefix that is no knob and lies within a typo of one ("HVD_FUSED_RNG
// is not a libhvd knob; did you mean HVD_FUSED_RING?"), and each retired knob (now an
// internal constant). Names far from every knob (HOROVOD_RANK, HVD_ELASTIC_DRIVER:
// other programs' variables) pass silently.
std::vector<std::string> unknown_param_warnings(const std::vector<std::string>& names);

// The same for the process environment's names.
std::vector<std::string> unknown_env_param_warnings();

// True if the variable is set in the environment (the autotuner holds such knobs fixed).
bool param_is_set(const char* name);

// The job's size as the launcher told this process before MPI: the first set of
// PMI_SIZE (MPICH's and Intel MPI's Hydra) and OMPI_COMM_WORLD_SIZE (Open MPI's
// mpirun), with the variable's name and the launcher that sets it; {nullptr, nullptr,
// 0} when neither is.
struct LauncherSize {
  const char* variable = nullptr;
  const char* launcher = nullptr;
  int size = 0;
};
LauncherSize launcher_size();

// What GPU pinning and CPU binding take of the parameters (CUDA_VISIBLE_DEVICES
// counts as set when the environment has it, even empty).
PinOptions pin_options(const Params& params);

// The registry, for listing (tools, docs) and for hvd_param_get.
const std::vector<ParamInfo>& param_registry();

// The value of one knob in params as text; false for an unknown name.
bool param_value_text(const Params& params, const char* name, std::string* out);

// Sets one knob from text, as if the environment held it: false (and *why) for an
// unknown name or invalid text. The text param_value_text gives is always valid.
bool set_param_text(Params* params, const char* name, const char* text, std::string* why);

// The knobs that decide which MPI calls every rank makes, and of what sizes: the fusion
// plan, pieces and chunks, the algorithms, the negotiation's layout. Ranks that
// differ here deadlock or reduce mismatched buffers, so init makes every rank use
// rank 0's values (runtime/init_agreement.h), as Horovod's coordinator does.
const std::vector<const char*>& agreed_param_names();

// Parsers, exposed for tests and fuzzing. Each returns false on invalid text.
bool parse_bool(const char* text, bool* out);
bool parse_int(const char* text, int64_t* out);
bool parse_double(const char* text, double* out);
bool parse_bytes(const char* text, int64_t* out);  // plain bytes, or with K/M/G/KiB/MiB/GiB
bool parse_log_level(const char* text, LogLevel* out);

}  // namespace hvd
