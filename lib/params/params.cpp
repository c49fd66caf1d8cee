#include "params/params.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace hvd {

namespace {

struct Value {
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
};

using Apply = void (*)(Params&, const Value&);
using Show = std::string (*)(const Params&);

struct ParamDef {
  ParamInfo info;
  double min;            // Int, Double, Bytes: inclusive range
  double max;
  const char* choices;   // Choice: '|'-separated accepted words, first is the default
  Apply apply;
  Show show;
};

constexpr double kNoMax = 9.0e18;

// A macro's value as a string literal (a default that is a macro, per MPI).
#define HVD_STRINGIFY_(x) #x
#define HVD_STRINGIFY(x) HVD_STRINGIFY_(x)

std::string show_bool(bool b) { return b ? "1" : "0"; }
std::string show_double(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

const char* log_level_names[] = {"trace", "debug", "info", "warning", "error", "fatal", "off"};

#define P_BOOL(env, field, def, desc)                                             \
  {{env, ParamType::Bool, #def, desc}, 0, 1, nullptr,                             \
   [](Params& p, const Value& v) { p.field = v.b; },                              \
   [](const Params& p) { return show_bool(p.field); }}
#define P_INT(env, field, def, lo, hi, desc)                                      \
  {{env, ParamType::Int, #def, desc}, lo, hi, nullptr,                            \
   [](Params& p, const Value& v) { p.field = v.i; },                              \
   [](const Params& p) { return std::to_string(p.field); }}
#define P_BYTES(env, field, def, lo, hi, desc)                                    \
  {{env, ParamType::Bytes, def, desc}, lo, hi, nullptr,                           \
   [](Params& p, const Value& v) { p.field = v.i; },                              \
   [](const Params& p) { return std::to_string(p.field); }}
#define P_DOUBLE(env, field, def, lo, hi, desc)                                   \
  {{env, ParamType::Double, #def, desc}, lo, hi, nullptr,                         \
   [](Params& p, const Value& v) { p.field = v.d; },                              \
   [](const Params& p) { return show_double(p.field); }}
// auto|never|always, read into Params::AutoChoice.
const char* auto_choice_names[] = {"auto", "never", "always"};
#define P_AUTO_CHOICE(env, field, desc)                                           \
  {{env, ParamType::Choice, "auto", desc}, 0, 0, "auto|never|always",             \
   [](Params& p, const Value& v) { p.field = static_cast<Params::AutoChoice>(v.i); }, \
   [](const Params& p) { return std::string(auto_choice_names[static_cast<int>(p.field)]); }}
#define P_STRING(env, field, desc)                                                \
  {{env, ParamType::String, "", desc}, 0, 0, nullptr,                             \
   [](Params& p, const Value& v) { p.field = v.s; },                              \
   [](const Params& p) { return p.field; }}

struct Section {
  ParamGroup group;
  std::vector<ParamDef> defs;
};

// The registry, in sections by what a user is doing. A knob's description says what it
// does, and for our own knobs when to set it and what it costs.
const std::vector<ParamDef>& defs() {
  static const std::vector<ParamDef> table = [] {
    const std::vector<Section> sections = {
      {ParamGroup::FusionAndCycle, {
      P_BYTES("HOROVOD_FUSION_THRESHOLD", fusion_threshold, "134217728", 0, kNoMax,
              "Largest fused buffer in bytes (K/M/G suffixes accepted); 0 disables fusion"),
      P_DOUBLE("HOROVOD_CYCLE_TIME", cycle_time_ms, 1, 0, 1e6,
               "Milliseconds between negotiation rounds while ranks wait for each other; "
               "new work starts a round at once"),
      P_INT("HOROVOD_CACHE_CAPACITY", cache_capacity, 1024, 0, 1 << 20,
            "Entries of the response cache; 0 disables it. Set, it also holds the cache on (or off) under autotune"),
      P_BOOL("HOROVOD_DISABLE_GROUP_FUSION", disable_group_fusion, 0,
             "Do not fuse a grouped allreduce with other tensors"),
      P_BYTES("HVD_ALLREDUCE_CHUNK_BYTES", allreduce_chunk_bytes,
              HVD_STRINGIFY(HVD_ALLREDUCE_CHUNK_BYTES_DEFAULT), 4096, kNoMax,
              "Largest single MPI reduction; bigger buffers are reduced in chunks, and "
              "allgather, alltoall and reducescatter blocks move in rounds of such chunks. "
              "The default is per MPI (1 MiB for MPICH, 16 MiB for Open MPI); try 4-16 MiB "
              "where large allreduces run below the network's bandwidth (hvd-bench)"),
      P_BYTES("HVD_SPECULATIVE_BYTES", speculative_bytes, "16384", 0, 1 << 30,
              "A repeated lone allreduce up to this size travels with its negotiation round: "
              "one round trip instead of two (0: off; the smallest over the ranks). Raise it "
              "where a loop of lone allreduces (losses, metrics) a little larger is bound by "
              "latency; a round whose guess misses sends those bytes for nothing"),
      }},
      {ParamGroup::Hierarchical, {
      P_BOOL("HOROVOD_HIERARCHICAL_ALLREDUCE", hierarchical_allreduce, 0,
             "Reduce within each node, across nodes, then gather within the node"),
      P_BOOL("HOROVOD_HIERARCHICAL_ALLGATHER", hierarchical_allgather, 0,
             "Gather within each node before exchanging across nodes"),
      P_BOOL("HVD_HIERARCHICAL_CROSS_MPI", hierarchical_cross_mpi, 0,
             "Device hierarchical allreduce: cross nodes with MPI on host copies of the "
             "shards instead of NCCL. Set it where MPI crosses the nodes faster than NCCL "
             "does (NCCL on sockets, MPI on RDMA); it costs a device-host copy each way"),
      }},
      {ParamGroup::Autotune, {
      P_BOOL("HOROVOD_AUTOTUNE", autotune, 0,
             "Tune fusion threshold, cycle time, algorithms and the response cache online"),
      P_STRING("HOROVOD_AUTOTUNE_LOG", autotune_log, "CSV file of the autotuner's samples"),
      P_INT("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", autotune_warmup_samples, 3, 0, 1 << 20,
            "Autotune samples discarded at the start"),
      P_INT("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", autotune_steps_per_sample, 10, 1, 1 << 20,
            "Training steps (a step ends when a tensor name returns) per autotune window"),
      P_INT("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", autotune_bayes_opt_max_samples, 20, 1,
            200, "Most samples the Bayesian optimisation takes"),
      P_DOUBLE("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", autotune_gaussian_process_noise, 0.8,
               0, 1e6, "Noise term of the autotuner's Gaussian process"),
      P_BYTES("HVD_AUTOTUNE_START_FUSION_THRESHOLD", autotune_start_fusion_threshold, "0", 0,
              kNoMax,
              "With autotune and no HOROVOD_FUSION_THRESHOLD: the threshold the job starts "
              "with and the search starts from (0: the default). Set it to a value known "
              "good for the model, so the first samples do not run far from it"),
      P_DOUBLE("HVD_AUTOTUNE_START_CYCLE_TIME", autotune_start_cycle_time_ms, 0, 0, 1e6,
               "With autotune and no HOROVOD_CYCLE_TIME: the cycle time (ms) the job starts "
               "with and the search starts from (0: the default); as the threshold above"),
      }},
      {ParamGroup::Timeline, {
      P_STRING("HOROVOD_TIMELINE", timeline,
               "Write a Chrome-trace timeline to this file (rank 0)"),
      P_BOOL("HOROVOD_TIMELINE_MARK_CYCLES", timeline_mark_cycles, 0,
             "Mark each negotiation round in the timeline"),
      }},
      {ParamGroup::StallsAndTimeouts, {
      P_DOUBLE("HOROVOD_STALL_CHECK_TIME_SECONDS", stall_check_time_s, 60, 0, 1e9,
               "Warn about tensors some ranks have not submitted after this many seconds"),
      P_DOUBLE("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", stall_shutdown_time_s, 0, 0, 1e9,
               "Fail stalled tensors with HVD_ERR_TIMEOUT after this many seconds; 0 never"),
      P_BOOL("HOROVOD_STALL_CHECK_DISABLE", stall_check_disable, 0,
             "Turn the stall inspector off"),
      P_DOUBLE("HVD_OP_TIMEOUT_SECONDS", op_timeout_s, 600, 0, 1e9,
               "End the job (MPI_Abort, exit status 124) when a collective every rank submitted "
               "has made no progress (no chunk or piece completed) for this many seconds; 0 "
               "never. Lower it to free a hung job's nodes sooner; raise it above the longest "
               "healthy collective (a 10 GB allreduce at 10 Gbit/s takes about 20 s)"),
      P_DOUBLE("HVD_FINALIZE_TIMEOUT_SECONDS", finalize_timeout_s, 30, 0, 1e9,
               "At exit, stop waiting for libhvd's MPI_Finalize after this many seconds (a "
               "peer or the launcher unreachable) and exit with the process's status; 0 "
               "never. A healthy finalize takes milliseconds"),
      }},
      {ParamGroup::AffinityAndThreads, {
      P_STRING("HOROVOD_THREAD_AFFINITY", thread_affinity,
               "Comma-separated core per local rank for the background thread"),
      {{"HVD_CPU_BIND", ParamType::Choice, "auto",
        "Bind the process and background thread near its GPU: none|numa|core|auto (auto: "
        "core when ranks share the node or machine and nothing else placed the process). "
        "Set none where the scheduler or the application binds threads itself"},
       0, 0, "none|numa|core|auto",
       [](Params& p, const Value& v) { p.cpu_bind = static_cast<CpuBind>(v.i); },
       [](const Params& p) {
         const char* n[] = {"none", "numa", "core", "auto"};
         return std::string(n[static_cast<int>(p.cpu_bind)]);
       }},
      P_STRING("HVD_TOPOLOGY_XML", topology_xml,
               "Read the node topology from this hwloc XML file (lstopo --of xml) instead "
               "of the machine: where hwloc cannot see the machine (containers) or to test "
               "a placement"),
      }},
      {ParamGroup::Gpu, {
      {{"HOROVOD_GPU_OPERATIONS", ParamType::Choice, "auto",
        "Backend for device-memory tensors: auto|NCCL|MPI (MPI stages through host memory)"},
       0, 0, "auto|nccl|mpi",
       [](Params& p, const Value& v) { p.gpu_operations = static_cast<GpuOperations>(v.i); },
       [](const Params& p) {
         const char* n[] = {"auto", "nccl", "mpi"};
         return std::string(n[static_cast<int>(p.gpu_operations)]);
       }},
      P_STRING("HVD_NCCL_LIBRARY", nccl_library,
               "Path of the NCCL library (libnccl.so.2) to load at the first GPU collective "
               "when no NCCL is loaded in the process yet (a framework's NCCL, once loaded, "
               "is used instead). Unset: libnccl.so.2 where the dynamic linker finds it"),
      P_BOOL("HVD_GPU_PINNING", gpu_pinning, 1,
             "Pick this rank's GPU from the topology and make it current (0: the "
             "application picks and sets the device itself)"),
      P_STRING("CUDA_VISIBLE_DEVICES", cuda_visible_devices,
               "Set by the user or the scheduler; GPU pinning picks among these devices"),
      }},
      {ParamGroup::LoggingAndSummary, {
      {{"HOROVOD_LOG_LEVEL", ParamType::Choice, "warning",
        "Least severe messages printed: trace|debug|info|warning|error|fatal|off"},
       0, 0, "trace|debug|info|warning|error|fatal|off",
       [](Params& p, const Value& v) { p.log_level = static_cast<LogLevel>(v.i); },
       [](const Params& p) {
         return std::string(log_level_names[static_cast<int>(p.log_level)]);
       }},
      P_BOOL("HVD_STEP_STATS", step_stats, 1,
             "Step accounting: per step, the time user threads waited on libhvd, "
             "negotiation, copies, transfers and bandwidth (0: off, saving a clock read at "
             "each round's, batch's and blocking wait's start and end)"),
      P_INT("HVD_STEP_STATS_WARMUP", step_stats_warmup, 1, 0, 1 << 30,
            "Steps at the start that step accounting leaves out (the first negotiates every "
            "name and opens connections); raise it for models whose first steps compile"),
      P_BOOL("HVD_SUMMARY", summary, 0,
             "At shutdown rank 0 prints the step summary (step time, exposed communication, "
             "bandwidth) to standard error"),
      P_STRING("HVD_SUMMARY_FILE", summary_file,
               "At shutdown rank 0 writes the step summary as JSON to this file"),
      }},
      {ParamGroup::Advanced, {
      P_BYTES("HVD_INPLACE_MIN_BYTES", inplace_min_bytes, "262144", 0, kNoMax,
              "Tensors at least this large are reduced in their own buffer, not copied (alone, "
              "or in a fused batch's pieces: see HVD_FUSE_LARGE). Lower it where copies show "
              "in the step summary; raising it fuses more tensors at the cost of copies"),
      P_AUTO_CHOICE(
          "HVD_FUSE_LARGE", fuse_large,
          "Whether host tensors of HVD_INPLACE_MIN_BYTES and more join fused batches, "
          "reduced in equal pieces in their own memory: auto|never|always (auto: across "
          "nodes, or where a rank's tensors lie back to back). Set never or always only to "
          "compare, where auto's choice measures slower (hvd-bench)"),
      P_AUTO_CHOICE(
          "HVD_FUSED_RING", fused_ring,
          "Reduce a fused host allreduce by libhvd's own ring straight from and into the "
          "tensors, not through the fusion buffer: auto|never|always (auto: batches of 64 "
          "KiB+ across nodes, a CPU per rank). Set never where MPI's own allreduce is "
          "faster across the nodes (a tuned vendor MPI)"),
      P_AUTO_CHOICE(
          "HVD_FAR_CORES", far_cores,
          "Large allreduces go in 16 MiB calls while a node's ranks sit on cores that "
          "share no cache: auto|never|always (auto: measured by a cache line's round "
          "trip, above 280 ns; hvd_get_counters().far_cores shows the choice). Set never or "
          "always where the measurement misjudges the machine"),
      P_BYTES("HVD_FUSION_PIECE_BYTES", fusion_piece_bytes, "1048576", 4096, kNoMax,
              "A fused host allreduce is copied in, reduced and copied out this many "
              "bytes at a time, so each piece stays in cache between the three: keep it within "
              "a rank's share of the last-level cache"),
      P_INT("HVD_BURST_GAP_US", burst_gap_us, 50, 0, 1000000,
            "Microseconds a round waits, again while more requests arrive (at most the "
            "cycle time), so one round takes a burst of requests whole (0: never). Raise it "
            "where the timeline shows one step's tensors split over many rounds; 0 gives "
            "lone small operations the least latency"),
      P_INT("HVD_EXIT_NOTICE_FD", exit_notice_fd, -1, -1, 1 << 20,
            "Set by hvdrun's rank monitor, not by users: where this process reports that "
            "hvd_init began and when it began to exit (-1: none)"),
      }},
      {ParamGroup::TestOnly, {
      P_INT("HVD_TEST_PROGRESS_DELAY_MS", test_progress_delay_ms, 0, 0, 60000,
            "For tests, not users: pause this many milliseconds after each chunk of a "
            "collective, so that it progresses slowly"),
      P_INT("HVD_CACHE_TOGGLE_ROUNDS", cache_toggle_rounds, 0, 0, 1 << 30,
            "For tests, not users: turn the response cache off and on every this many "
            "negotiation rounds (0: never; ignored under autotune)"),
      P_BOOL("HVD_BURST_CAP_MEASURE", burst_cap_measure, 1,
             "For tests, not users: 0 leaves to the placement alone, not to measured CPU "
             "waits as well, whether a round may start before a burst ends"),
      P_INT("HVD_BG_SPIN_US", bg_spin_us, 50, 0, 1000000,
            "For tests, not users: microseconds the background thread polls for new work "
            "after activity before it sleeps (0: sleeps at once, the path where each "
            "request must wake it)"),
      }},
    };
    std::vector<ParamDef> all;
    for (const Section& section : sections)
      for (ParamDef def : section.defs) {
        def.info.group = section.group;
        all.push_back(def);
      }
    return all;
  }();
  return table;
}

bool parse_choice(const char* text, const char* choices, int64_t* index) {
  int64_t i = 0;
  const char* p = choices;
  size_t len = std::strlen(text);
  while (*p) {
    const char* end = std::strchr(p, '|');
    size_t n = end ? static_cast<size_t>(end - p) : std::strlen(p);
    if (n == len && strncasecmp(p, text, n) == 0) {
      *index = i;
      return true;
    }
    if (!end) break;
    p = end + 1;
    ++i;
  }
  return false;
}

const char* type_hint(const ParamDef& def) {
  switch (def.info.type) {
    case ParamType::Bool: return "1/0, true/false, yes/no or on/off";
    case ParamType::Int: return "a whole number";
    case ParamType::Double: return "a number";
    case ParamType::Bytes: return "a byte count, optionally with K, M or G";
    case ParamType::String: return "text";
    case ParamType::Choice: return def.choices;
  }
  return "";
}

// Parses text for def into value; false with *why filled on failure.
bool parse_for(const ParamDef& def, const char* text, Value* value, std::string* why) {
  char range[128];
  switch (def.info.type) {
    case ParamType::Bool:
      if (parse_bool(text, &value->b)) return true;
      break;
    case ParamType::Int:
    case ParamType::Bytes: {
      bool ok = def.info.type == ParamType::Int ? parse_int(text, &value->i)
                                                : parse_bytes(text, &value->i);
      if (ok && value->i >= def.min && static_cast<double>(value->i) <= def.max) return true;
      if (ok) {
        std::snprintf(range, sizeof range, "%.0f to %.0f", def.min, def.max);
        *why = std::string("out of range (") + range + ")";
        return false;
      }
      break;
    }
    case ParamType::Double:
      if (parse_double(text, &value->d) && value->d >= def.min && value->d <= def.max)
        return true;
      break;
    case ParamType::String:
      value->s = text;
      return true;
    case ParamType::Choice:
      if (parse_choice(text, def.choices, &value->i)) return true;
      break;
  }
  *why = std::string("expected ") + type_hint(def);
  return false;
}

}  // namespace

bool parse_bool(const char* text, bool* out) {
  static const char* yes[] = {"1", "true", "yes", "on", "y", "t"};
  static const char* no[] = {"0", "false", "no", "off", "n", "f", ""};
  for (const char* w : yes)
    if (strcasecmp(text, w) == 0) return *out = true, true;
  for (const char* w : no)
    if (strcasecmp(text, w) == 0) return *out = false, true;
  return false;
}

bool parse_int(const char* text, int64_t* out) {
  if (!*text) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  while (end && (*end == ' ' || *end == '\t')) ++end;
  if (errno != 0 || !end || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_double(const char* text, double* out) {
  if (!*text) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text, &end);
  while (end && (*end == ' ' || *end == '\t')) ++end;
  if (errno != 0 || !end || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool parse_bytes(const char* text, int64_t* out) {
  if (!*text) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || v < 0) return false;
  std::string suffix(end);
  while (!suffix.empty() && (suffix.back() == ' ' || suffix.back() == '\t')) suffix.pop_back();
  int64_t mult = 1;
  if (suffix.empty() || strcasecmp(suffix.c_str(), "b") == 0) mult = 1;
  else if (strcasecmp(suffix.c_str(), "k") == 0 || strcasecmp(suffix.c_str(), "kib") == 0 ||
           strcasecmp(suffix.c_str(), "kb") == 0) mult = 1ll << 10;
  else if (strcasecmp(suffix.c_str(), "m") == 0 || strcasecmp(suffix.c_str(), "mib") == 0 ||
           strcasecmp(suffix.c_str(), "mb") == 0) mult = 1ll << 20;
  else if (strcasecmp(suffix.c_str(), "g") == 0 || strcasecmp(suffix.c_str(), "gib") == 0 ||
           strcasecmp(suffix.c_str(), "gb") == 0) mult = 1ll << 30;
  else return false;
  if (v > INT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

bool parse_log_level(const char* text, LogLevel* out) {
  int64_t i;
  if (!parse_choice(text, "trace|debug|info|warning|error|fatal|off", &i)) return false;
  *out = static_cast<LogLevel>(i);
  return true;
}

Params load_params(const EnvLookup& lookup, std::vector<std::string>* warnings) {
  Params params;
  for (const ParamDef& def : defs()) {
    const char* text = lookup(def.info.name);
    if (!text) continue;
    Value value;
    std::string why;
    if (parse_for(def, text, &value, &why)) {
      def.apply(params, value);
    } else if (warnings) {
      warnings->push_back(std::string(def.info.name) + "='" + text + "' is invalid: " + why +
                          "; using the default " +
                          (def.info.default_text[0] ? def.info.default_text : "(empty)"));
    }
  }
  return params;
}

Params load_params_from_env(std::vector<std::string>* warnings) {
  return load_params([](const char* name) -> const char* { return std::getenv(name); },
                     warnings);
}

bool param_is_set(const char* name) { return std::getenv(name) != nullptr; }

LauncherSize launcher_size() {
  static const struct {
    const char* variable;
    const char* launcher;
  } launchers[] = {{"PMI_SIZE", "MPICH's or Intel MPI's mpiexec (Hydra)"},
                   {"OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"}};
  for (const auto& l : launchers) {
    const char* value = std::getenv(l.variable);
    if (value && *value) return {l.variable, l.launcher, std::atoi(value)};
  }
  return {};
}

PinOptions pin_options(const Params& params) {
  PinOptions options;
  options.gpu_pinning = params.gpu_pinning;
  options.cpu_bind = params.cpu_bind;
  options.topology_xml = params.topology_xml;
  options.thread_affinity = params.thread_affinity;
  if (!params.cuda_visible_devices.empty() || param_is_set("CUDA_VISIBLE_DEVICES"))
    options.cuda_visible_devices = params.cuda_visible_devices;
  return options;
}

const std::vector<ParamInfo>& param_registry() {
  static const std::vector<ParamInfo> infos = [] {
    std::vector<ParamInfo> v;
    for (const ParamDef& def : defs()) v.push_back(def.info);
    return v;
  }();
  return infos;
}

bool set_param_text(Params* params, const char* name, const char* text, std::string* why) {
  for (const ParamDef& def : defs()) {
    if (std::strcmp(def.info.name, name) != 0) continue;
    Value value;
    if (!parse_for(def, text, &value, why)) return false;
    def.apply(*params, value);
    return true;
  }
  *why = "no such parameter";
  return false;
}

const std::vector<const char*>& agreed_param_names() {
  // HVD_SPECULATIVE_BYTES is agreed too, as the smallest over the ranks (runtime.cpp).
  // Timing knobs (the burst wait, spins, polls) and what one rank does alone (the
  // timeline, the stall inspector, logging, pinning, the summary) may differ.
  static const std::vector<const char*> names = {
      "HOROVOD_FUSION_THRESHOLD",       "HOROVOD_CYCLE_TIME",
      "HOROVOD_CACHE_CAPACITY",         "HOROVOD_HIERARCHICAL_ALLREDUCE",
      "HOROVOD_HIERARCHICAL_ALLGATHER", "HVD_HIERARCHICAL_CROSS_MPI",
      "HOROVOD_GPU_OPERATIONS",         "HOROVOD_DISABLE_GROUP_FUSION",
      "HVD_ALLREDUCE_CHUNK_BYTES",      "HVD_INPLACE_MIN_BYTES",
      "HVD_FUSE_LARGE",                 "HVD_FUSION_PIECE_BYTES",
      "HVD_CACHE_TOGGLE_ROUNDS",        "HVD_FUSED_RING",
      "HVD_FAR_CORES",
  };
  return names;
}

bool param_value_text(const Params& params, const char* name, std::string* out) {
  for (const ParamDef& def : defs()) {
    if (std::strcmp(def.info.name, name) == 0) {
      *out = def.show(params);
      return true;
    }
  }
  return false;
}

}  // namespace hvd
