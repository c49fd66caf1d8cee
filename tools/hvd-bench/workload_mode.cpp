#include "workload_mode.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "comm.h"
#include "core_round_trip.h"
#include "json.h"
#include "stats.h"
#include "strategies.h"
#include "tensor_set.h"

namespace hvdbench {

namespace {

struct Measured {
  StrategyCase what;
  std::vector<double> seconds;  // per step, slowest rank, one per repetition
  int64_t wrong = 0;
  Stats ms;
};

// What libhvd's timed steps ran, from this rank's counters: how many negotiation
// rounds and data collectives a step took, and how many allreduces completed within
// their round. A step that takes more rounds than usual (ranks out of phase) shows
// here where the times alone only show it slow.
struct StepCounts {
  int64_t steps = 0;
  uint64_t rounds = 0, collectives = 0, speculative = 0, ring = 0;
  // Repetitions that ended with libhvd's large allreduces in far-core calls
  // (HVD_FAR_CORES), of all recorded ones, and its last probe's round trip.
  int64_t repetitions = 0, far_repetitions = 0;
  uint64_t core_round_trip_ns = 0;
  // Repetitions that ended with the large tensors fused where they lie, every rank's
  // lying back to back (hvd_counters_t.back_to_back).
  int64_t back_to_back_repetitions = 0;

  void add(const hvd_counters_t& before, const hvd_counters_t& after, int step_count) {
    steps += step_count;
    rounds += after.negotiation_rounds - before.negotiation_rounds;
    collectives += after.collectives - before.collectives;
    speculative += after.speculative - before.speculative;
    ring += after.ring_allreduces - before.ring_allreduces;
    ++repetitions;
    if (after.far_cores) ++far_repetitions;
    if (after.back_to_back) ++back_to_back_repetitions;
    core_round_trip_ns = after.core_round_trip_ns;
  }
  double per_step(uint64_t count) const {
    return steps ? static_cast<double>(count) / static_cast<double>(steps) : 0;
  }
};

// Steps per timed repetition: a lone small allreduce takes microseconds, too short
// to time one at a time, so small steps run back to back. In place, the values grow
// by a factor of size per step; the count stays low enough for that to stay exact.
int steps_per_repetition(const Options& o, int64_t step_bytes, int size) {
  int k = o.inner;
  if (k == 0) k = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 20) / step_bytes, 1, 100));
  if (size > 1) k = std::min(k, 1 + static_cast<int>(60 / std::log2(static_cast<double>(size))));
  return k;
}

void fill(const StrategyCase& c, TensorSet& set) {
  if (c.uses_packed()) set.fill_packed();
  else set.fill_tensors();
}

// The cores' distance (core_round_trip.h) when the run started and when it ended.
struct CoreDistance {
  double start_ns = kNoPeerOnNode;
  double end_ns = kNoPeerOnNode;
};

std::string describe_round_trip(double ns) {
  if (ns == kGaveUp) return "none within 0.5 s (a core shared with another process)";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f ns", ns);
  return text;
}

int64_t wrong(const StrategyCase& c, const TensorSet& set, double factor) {
  return c.uses_packed() ? set.wrong_in_packed(factor) : set.wrong_in_tensors(factor);
}

void print_table(const Options& o, const TensorSet& set, int size, const Layout& layout,
                 const std::string& handover, int inner, const std::vector<Measured>& results,
                 const Measured* limit, const Measured* back_to_back,
                 const Measured* limit_back_to_back, const StepCounts& counts,
                 const CoreDistance& cores) {
  const Measured& hvd = results.front();
  std::string what = o.mode == Mode::Workload
                         ? "workload " + o.workload_path
                         : "tensors " + std::to_string(set.count()) + " x " +
                               std::to_string(set.elements(0)) + " floats";
  std::printf("# hvd-bench %s: %zu tensors%s, %lld bytes, float32 sum in place, %d ranks on %d "
              "node(s), allreduce %s; libhvd %s\n",
              what.c_str(), set.count(), o.contiguous ? " back to back" : "",
              static_cast<long long>(set.total_bytes()), size, layout.nodes,
              layout.hierarchical_allreduce ? "hierarchical" : "flat",
              handover.c_str());
  std::printf("# %d repetitions after %d warm-up, %d step(s) per repetition; times per step, "
              "slowest rank\n", o.iters, o.warmup, inner);
  std::printf("# %-22s %12s %12s %12s %14s %8s\n", "strategy", "median(ms)", "min(ms)", "max(ms)",
              "ref/libhvd", "#wrong");
  for (const Measured& m : results) {
    char ratio[32] = "";
    if (&m != &hvd) std::snprintf(ratio, sizeof ratio, "%.3f", m.ms.median / hvd.ms.median);
    std::printf("  %-22s %12.4f %12.4f %12.4f %14s %8lld\n", m.what.name().c_str(), m.ms.median,
                m.ms.min, m.ms.max, ratio, static_cast<long long>(m.wrong));
  }
  if (back_to_back)
    std::printf("  %-22s %12.4f %12.4f %12.4f %14s %8lld\n", "libhvd back to back",
                back_to_back->ms.median, back_to_back->ms.min, back_to_back->ms.max, "",
                static_cast<long long>(back_to_back->wrong));
  if (limit_back_to_back)
    std::printf("  %-22s %12.4f %12.4f %12.4f %14s %8lld\n", "limit back to back",
                limit_back_to_back->ms.median, limit_back_to_back->ms.min,
                limit_back_to_back->ms.max, "", static_cast<long long>(limit_back_to_back->wrong));
  std::printf("# libhvd per step (rank 0): %.2f negotiation rounds, %.2f collectives (%.2f of "
              "them through libhvd's ring), %.2f allreduces done within their round\n",
              counts.per_step(counts.rounds), counts.per_step(counts.collectives),
              counts.per_step(counts.ring), counts.per_step(counts.speculative));
  if (counts.repetitions > 0)
    std::printf("# libhvd's large allreduces in 16 MiB calls for far cores (HVD_FAR_CORES) after "
                "%lld of %lld repetitions; its own last round trip %llu ns (0: none measured)\n",
                static_cast<long long>(counts.far_repetitions),
                static_cast<long long>(counts.repetitions),
                static_cast<unsigned long long>(counts.core_round_trip_ns));
  if (counts.repetitions > 0)
    std::printf("# libhvd's large allreduces fused where they lie, back to back on every rank "
                "(HVD_FUSE_LARGE), after %lld of %lld repetitions\n",
                static_cast<long long>(counts.back_to_back_repetitions),
                static_cast<long long>(counts.repetitions));
  double load[1] = {0};
  if (getloadavg(load, 1) == 1)
    std::printf("# load average (1 min) at the end: %.2f (other processes share the cores)\n",
                load[0]);
  if (cores.start_ns != kNoPeerOnNode)
    std::printf("# a cache line's round trip between the cores of ranks 0 and 1: %s at the "
                "start, %s at the end (tens of ns: a shared cache; hundreds: none)\n",
                describe_round_trip(cores.start_ns).c_str(),
                describe_round_trip(cores.end_ns).c_str());
  if (limit) {
    const Measured& per_tensor = results[1];
    std::printf("# limit: %s %.4f ms; libhvd vs limit %.3f, vs per-tensor MPI %.3f "
                "(above 1: libhvd is faster)\n",
                limit->what.name().c_str(), limit->ms.median, limit->ms.median / hvd.ms.median,
                per_tensor.ms.median / hvd.ms.median);
    for (const Measured& m : results) {
      if (m.what.strategy == Strategy::FusedCopies)
        std::printf("# fused-copies (copy in, reduce, copy out on one thread): %.3f x the limit, "
                    "libhvd %.3f x fused-copies\n",
                    limit->ms.median / m.ms.median, m.ms.median / hvd.ms.median);
      if (m.what.strategy == Strategy::Hybrid)
        std::printf("# hybrid (libhvd's plan on one thread: large tensors in place, small ones "
                    "copied): %.3f x the limit, libhvd %.3f x hybrid\n",
                    limit->ms.median / m.ms.median, m.ms.median / hvd.ms.median);
    }
    if (back_to_back)
      std::printf("# libhvd back to back (its repetitions one after another, no reference "
                  "between them): %.3f x the limit\n",
                  limit->ms.median / back_to_back->ms.median);
    if (back_to_back && limit_back_to_back)
      std::printf("# both back to back (the limit's repetitions one after another too): "
                  "libhvd %.3f x the limit\n",
                  limit_back_to_back->ms.median / back_to_back->ms.median);
    if (set.count() == 1)
      std::printf("# latency: libhvd %.2f us, raw MPI %.2f us, difference %.2f us\n",
                  hvd.ms.median * 1e3, per_tensor.ms.median * 1e3,
                  (hvd.ms.median - per_tensor.ms.median) * 1e3);
  }
}

void print_json(const Options& o, const TensorSet& set, int size, const Layout& layout,
                const std::vector<Measured>& results, const Measured* limit,
                const Measured* back_to_back, const Measured* limit_back_to_back,
                const StepCounts& counts, const CoreDistance& cores) {
  const Measured& hvd = results.front();
  JsonLine line;
  line.add("mode", o.mode == Mode::Workload ? "workload" : "tensors");
  if (o.mode == Mode::Workload) line.add("workload", o.workload);
  line.add("op", "allreduce")
      .add("ranks", size)
      .add("nodes", layout.nodes)
      .add("hierarchical", layout.hierarchical_allreduce)
      .add("contiguous", o.contiguous)
      .add("grouped", o.grouped)
      .add("bucket_bytes", static_cast<long long>(o.bucket_bytes))
      .add("huge_pages", o.huge_pages)
      .add("tensors", static_cast<long long>(set.count()))
      .add("bytes", static_cast<long long>(set.total_bytes()))
      .add("hvd_ms", hvd.ms);
  const bool latency_case = set.count() == 1;
  if (limit) {
    const Measured& per_tensor = results[1];
    line.add("limit_ms", limit->ms)
        .add("limit_strategy", limit->what.name())
        .add("per_tensor_ms", per_tensor.ms);
    if (latency_case) line.add("raw_latency_us", scaled(per_tensor.ms, 1e3));
  }
  if (latency_case) line.add("hvd_latency_us", scaled(hvd.ms, 1e3));
  if (limit) {
    line.add("vs_limit", limit->ms.median / hvd.ms.median)
        .add("vs_per_tensor", results[1].ms.median / hvd.ms.median);
  }
  for (const Measured& m : results)
    if (m.what.strategy == Strategy::FusedCopies)
      line.add("fused_copies_ms", m.ms).add("vs_fused_copies", m.ms.median / hvd.ms.median);
  if (back_to_back && limit)
    line.add("hvd_back_to_back_ms", back_to_back->ms)
        .add("vs_limit_back_to_back", limit->ms.median / back_to_back->ms.median);
  if (back_to_back && limit_back_to_back)
    line.add("limit_back_to_back_ms", limit_back_to_back->ms)
        .add("vs_limit_both_back_to_back", limit_back_to_back->ms.median / back_to_back->ms.median);
  line.add("rounds_per_step", counts.per_step(counts.rounds))
      .add("collectives_per_step", counts.per_step(counts.collectives))
      .add("speculative_per_step", counts.per_step(counts.speculative))
      .add("ring_per_step", counts.per_step(counts.ring))
      .add("far_core_repetitions", static_cast<long long>(counts.far_repetitions))
      .add("back_to_back_repetitions", static_cast<long long>(counts.back_to_back_repetitions));
  // Negative: not measured (core_round_trip.h).
  if (cores.start_ns != kNoPeerOnNode)
    line.add("core_round_trip_ns_start", cores.start_ns).add("core_round_trip_ns_end", cores.end_ns);
  line.add("wrong", static_cast<long long>(hvd.wrong));
  std::printf("%s\n", line.str().c_str());
}

}  // namespace

int run_workload_mode(const Options& o) {
  const int rank = world_rank(), size = world_size();
  TensorSet set(o.tensor_counts, rank, size, o.baseline, o.contiguous, o.huge_pages);
  const int inner = steps_per_repetition(o, set.total_bytes(), size);
  const double factor = std::pow(static_cast<double>(size), inner - 1);

  std::vector<Measured> results;
  for (const StrategyCase& c : step_cases(o.baseline, set.total_bytes()))
    results.push_back(Measured{c, {}, 0, {}});
  LibhvdStep libhvd(set, o.grouped, o.bucket_bytes);
  const Layout layout = job_layout();
  CoreDistance cores;
  cores.start_ns = core_round_trip_ns();

  // `inner` steps of a strategy on filled tensors: seconds per step.
  auto timed_steps = [&](const StrategyCase& c) {
    double start = now_seconds();
    for (int k = 0; k < inner; ++k) {
      if (c.strategy == Strategy::Libhvd) libhvd.run(set);
      else run_reference(c, set);
    }
    return (now_seconds() - start) / inner;
  };
  StepCounts counts;  // over libhvd's recorded interleaved repetitions
  auto run_case = [&](Measured& m, bool record) {
    fill(m.what, set);
    MPI_Barrier(MPI_COMM_WORLD);
    const bool counted = record && m.what.strategy == Strategy::Libhvd;
    const hvd_counters_t before = counted ? hvd_counters_now() : hvd_counters_t{};
    double elapsed = timed_steps(m.what);
    if (counted) counts.add(before, hvd_counters_now(), inner);
    // Checked on every repetition, warm-up included.
    m.wrong += wrong(m.what, set, factor);
    if (record) m.seconds.push_back(elapsed);
  };

  // Each repetition starts with a different strategy, so none always runs first (after
  // the barrier). Within a repetition the order stays, so each strategy follows the same
  // neighbour in n - 1 of n repetitions; a shuffled order gave the same ratios
  // (docs/performance.md, 2026-11-29 07:00 entry).
  const size_t n = results.size();
  for (int rep = 0; rep < o.warmup + o.iters; ++rep) {
    for (size_t j = 0; j < n; ++j) run_case(results[(rep + j) % n], rep >= o.warmup);
  }

  int64_t total_wrong = 0;
  for (Measured& m : results) {
    max_over_ranks(&m.seconds);
    m.ms = scaled(summarize(m.seconds), 1e3);
    m.wrong = sum_over_ranks(m.wrong);
    total_wrong += m.wrong;
  }
  const Measured* limit = nullptr;
  for (size_t j = 1; j < n; ++j)
    if (results[j].what.is_limit_candidate() && (!limit || results[j].ms.median < limit->ms.median))
      limit = &results[j];

  // With references, libhvd's repetitions also run one after another, nothing between
  // them but refilling the tensors, and then the limit's: interleaved, each step
  // follows the other strategies' traffic (libhvd's with its threads idle), which a
  // training loop's steps do not; over TCP an odd-sized call (the per-tensor
  // reference's) also slows the full-sized calls after it for tens of calls
  // (docs/performance.md, 2026-11-27 07:15 entry).
  Measured back_to_back{results.front().what, {}, 0, {}};
  Measured limit_back_to_back{limit ? limit->what : results.front().what, {}, 0, {}};
  auto run_back_to_back = [&](Measured& m) {
    MPI_Barrier(MPI_COMM_WORLD);
    for (int rep = 0; rep < o.warmup + o.iters; ++rep) {
      fill(m.what, set);
      double elapsed = timed_steps(m.what);
      m.wrong += wrong(m.what, set, factor);
      if (rep >= o.warmup) m.seconds.push_back(elapsed);
    }
    max_over_ranks(&m.seconds);
    m.ms = scaled(summarize(m.seconds), 1e3);
    m.wrong = sum_over_ranks(m.wrong);
    total_wrong += m.wrong;
  };
  if (o.baseline) run_back_to_back(back_to_back);
  if (o.baseline && limit) run_back_to_back(limit_back_to_back);
  cores.end_ns = core_round_trip_ns();

  if (rank == 0) {
    const Measured* b2b = o.baseline ? &back_to_back : nullptr;
    const Measured* limit_b2b = o.baseline && limit ? &limit_back_to_back : nullptr;
    if (o.json) print_json(o, set, size, layout, results, limit, b2b, limit_b2b, counts, cores);
    else print_table(o, set, size, layout, libhvd.handover(), inner, results, limit,
                     b2b, limit_b2b, counts, cores);
    std::fflush(stdout);
    if (total_wrong)
      std::fprintf(stderr, "hvd-bench: %lld wrong elements (see #wrong)\n",
                   static_cast<long long>(total_wrong));
  }
  return total_wrong ? 1 : 0;
}

}  // namespace hvdbench
