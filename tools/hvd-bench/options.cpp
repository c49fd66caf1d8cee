#include "options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "dtypes.h"
#include "workload_file.h"

namespace hvdbench {

namespace {

// The launcher's rank, read before MPI starts: only the first rank prints messages
// about the command line, so two ranks do not say the same thing twice.
bool first_rank() {
  for (const char* var : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    const char* value = std::getenv(var);
    if (value) return std::atoi(value) == 0;
  }
  return true;
}

const std::vector<std::string> kRedops{"sum", "prod", "min", "max", "avg", "adasum"};

}  // namespace

const std::vector<std::string>& sweep_collectives() {
  static const std::vector<std::string> names{"allreduce", "broadcast", "allgather",
                                              "reducescatter", "alltoall"};
  return names;
}

std::optional<int64_t> parse_size(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t pos = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &pos);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (value < 0) return std::nullopt;
  int shift = 0;
  if (pos < text.size()) {
    if (pos + 1 != text.size()) return std::nullopt;
    switch (text[pos]) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: return std::nullopt;
    }
  }
  if (value > (INT64_MAX >> shift)) return std::nullopt;
  return static_cast<int64_t>(value) << shift;
}

std::optional<int> parse_options(int argc, char** argv, Options* o) {
  CLI::App app{
      "hvd-bench: measures libhvd's collectives against raw MPI on the same buffers.\n"
      "Modes: sweep (default, nccl-tests flags and table), --workload FILE, --tensors N "
      "--count C, --idle SECONDS.",
      "hvd-bench"};
  std::string min_bytes = "8", max_bytes = "128M", step_bytes;
  std::string collective = "allreduce";
  int check = 1;
  int64_t tensors = 0, count = 0;
  double bucket_mb = 0;

  app.add_option("-b,--minbytes", min_bytes, "sweep: smallest size in bytes (K, M, G suffixes)");
  app.add_option("-e,--maxbytes", max_bytes, "sweep: largest size in bytes");
  app.add_option("-f,--stepfactor", o->step_factor, "sweep: multiply the size by this")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  app.add_option("-i,--stepbytes", step_bytes, "sweep: add this many bytes instead of -f");
  app.add_option("-o,--op", o->redop, "reduction: sum, prod, min, max, avg, adasum (its mpi column: MPI_SUM)")
      ->check(CLI::IsMember(kRedops));
  app.add_option("-d,--datatype", o->dtype, "sweep element type: " + dtype_names())
      ->check([](const std::string& name) {
        return find_dtype(name) ? std::string() : "unknown type '" + name + "' (" + dtype_names() + ")";
      });
  app.add_option("-r,--root", o->root, "broadcast root rank")->check(CLI::NonNegativeNumber);
  app.add_option("-n,--iters", o->iters, "measured repetitions")->check(CLI::Range(1, 10000000));
  app.add_option("-w,--warmup_iters", o->warmup, "warm-up repetitions, not measured")
      ->check(CLI::Range(0, 10000000));
  app.add_option("-c,--check", check, "check results (1) or not (0); workload modes always check")
      ->check(CLI::Range(0, 1));
  app.add_option("--collective", collective,
                 "sweep: allreduce, broadcast, allgather, reducescatter, alltoall, or all");
  app.add_option("--workload", o->workload,
                 "workload mode: file of tensor sizes (or resnet50, bert_base)");
  app.add_option("--tensors", tensors, "tensors mode: number of equal tensors")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  app.add_option("--count", count, "tensors mode: elements per tensor (float32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--inner", o->inner,
                 "steps run back to back per timed repetition (0: chosen from the size)")
      ->check(CLI::Range(0, 100000));
  app.add_flag("--baseline", o->baseline,
               "also measure raw MPI references on the same data, alternating with libhvd");
  app.add_flag("--contiguous", o->contiguous,
               "lay the step's tensors out back to back in one allocation (a flat gradient "
               "buffer), which libhvd reduces where they are");
  app.add_flag("--grouped", o->grouped,
               "libhvd's step as one hvd_grouped_allreduce_async of every tensor (as a "
               "framework hands over a bucket), not one call per tensor");
  app.add_option("--bucket-mb", bucket_mb,
                 "libhvd's step as one hvd_allreduce_async per bucket: consecutive tensors of "
                 "the flat buffer, up to this many MiB (a larger tensor alone), as "
                 "DistributedOptimizer(gradient_as_bucket_view=True) and DDP hand gradients "
                 "over; implies --contiguous")
      ->check(CLI::Range(1e-6, 1e6));
  app.add_flag("--huge-pages", o->huge_pages,
               "take the workload's buffers (tensors, packed and staging buffers of the "
               "references alike) from hvd_alloc_host: from 1 MiB up, 2 MiB pages");
  app.add_flag("--json", o->json, "one JSON object per measured case on rank 0's stdout");
  app.add_option("--idle", o->idle_seconds,
                 "idle mode: initialize, sleep this many seconds, report CPU use and traffic")
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--fusion-threshold", o->fusion_threshold,
                 "sets HOROVOD_FUSION_THRESHOLD (bytes) before hvd_init");
  app.add_option("--cycle-time", o->cycle_time, "sets HOROVOD_CYCLE_TIME (ms) before hvd_init");

  std::ostringstream quiet;
  const bool talk = first_rank();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return talk ? app.exit(e) : app.exit(e, quiet, quiet);
  }

  auto fail = [&](const std::string& message) -> std::optional<int> {
    if (talk) std::cerr << "hvd-bench: " << message << "\n";
    return 2;
  };

  const bool has_workload = !o->workload.empty();
  const bool has_tensors = tensors > 0 || count > 0;
  const bool has_idle = app.count("--idle") > 0;
  if (has_workload + has_tensors + has_idle > 1)
    return fail("choose one of --workload, --tensors/--count and --idle");
  if (has_tensors && (tensors == 0 || count == 0))
    return fail("--tensors and --count go together (e.g. --tensors 1000 --count 1024)");

  if (has_idle) {
    o->mode = Mode::Idle;
  } else if (has_workload) {
    o->mode = Mode::Workload;
    o->workload_path = resolve_workload(o->workload);
    if (o->workload_path.empty())
      return fail("workload '" + o->workload +
                  "' is neither a file nor a known workload (resnet50, bert_base)");
    std::string error;
    if (!load_workload(o->workload_path, &o->tensor_counts, &error)) return fail(error);
  } else if (has_tensors) {
    o->mode = Mode::Tensors;
    o->tensor_counts.assign(static_cast<size_t>(tensors), count);
  } else {
    o->mode = Mode::Sweep;
  }

  if (bucket_mb > 0) {
    if (o->mode != Mode::Workload && o->mode != Mode::Tensors)
      return fail("--bucket-mb goes with --workload or --tensors/--count");
    if (o->grouped) return fail("choose one of --grouped and --bucket-mb");
    o->bucket_bytes = std::max<int64_t>(1, static_cast<int64_t>(bucket_mb * 1048576.0));
    o->contiguous = true;  // buckets are views of one flat buffer
  }

  if (o->mode != Mode::Sweep && o->mode != Mode::Idle && o->redop != "sum")
    return fail("workload and tensors modes reduce with sum, as the MPI references do");

  auto min = parse_size(min_bytes), max = parse_size(max_bytes);
  if (!min) return fail("-b: '" + min_bytes + "' is not a size (e.g. 8, 64K, 128M, 1G)");
  if (!max) return fail("-e: '" + max_bytes + "' is not a size (e.g. 8, 64K, 128M, 1G)");
  if (*min > *max) return fail("-b must not exceed -e");
  o->min_bytes = *min;
  o->max_bytes = *max;
  if (!step_bytes.empty()) {
    auto step = parse_size(step_bytes);
    if (!step || *step == 0) return fail("-i: '" + step_bytes + "' is not a positive size");
    o->step_bytes = *step;
  }
  o->check = check != 0;

  if (collective == "all") {
    o->collectives = sweep_collectives();
  } else {
    const auto& known = sweep_collectives();
    if (std::find(known.begin(), known.end(), collective) == known.end())
      return fail("--collective: '" + collective +
                  "' is not one of allreduce, broadcast, allgather, reducescatter, alltoall, all");
    o->collectives = {collective};
  }
  if (o->fusion_threshold && !parse_size(*o->fusion_threshold))
    return fail("--fusion-threshold: '" + *o->fusion_threshold + "' is not a size");
  if (o->fusion_threshold) o->fusion_threshold = std::to_string(*parse_size(*o->fusion_threshold));
  if (o->cycle_time) {
    char* end = nullptr;
    double ms = std::strtod(o->cycle_time->c_str(), &end);
    if (*end != '\0' || !(ms >= 0)) return fail("--cycle-time: '" + *o->cycle_time + "' is not a time in ms");
  }
  return std::nullopt;
}

}  // namespace hvdbench
