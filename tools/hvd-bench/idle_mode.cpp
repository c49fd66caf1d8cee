#include "idle_mode.h"

#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <vector>

#include <hvd/hvd.h>

#include "comm.h"
#include "json.h"
#include "stats.h"

namespace hvdbench {

namespace {

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void sleep_seconds(double seconds) {
  timespec ts{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

}  // namespace

int run_idle_mode(const Options& o) {
  const int rank = world_rank(), size = world_size();
  // One collective first, so the process has been through a step and its background
  // thread has settled, as after a training step.
  float one = 1;
  check_hvd(hvd_allreduce(&one, &one, 1, HVD_FLOAT32, HVD_OP_SUM, "hvd-bench.idle.warm-up"),
            "hvd_allreduce");
  MPI_Barrier(MPI_COMM_WORLD);
  // The barrier's last messages may still be settling; begin measuring a moment later.
  sleep_seconds(0.05);

  const hvd_counters_t before = hvd_counters_now();
  const double cpu_before = cpu_seconds(), wall_before = now_seconds();
  sleep_seconds(o.idle_seconds);
  const double cpu_after = cpu_seconds(), wall_after = now_seconds();
  const hvd_counters_t after = hvd_counters_now();

  // Per rank: CPU percent of one core, collectives, negotiation rounds, bytes sent.
  double mine[4] = {
      100.0 * (cpu_after - cpu_before) / (wall_after - wall_before),
      static_cast<double>(after.collectives - before.collectives),
      static_cast<double>(after.negotiation_rounds - before.negotiation_rounds),
      static_cast<double>((after.global_bytes + after.local_bytes + after.cross_bytes) -
                          (before.global_bytes + before.local_bytes + before.cross_bytes))};
  std::vector<double> all(static_cast<size_t>(4 * size));
  MPI_Gather(mine, 4, MPI_DOUBLE, all.data(), 4, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank != 0) return 0;

  std::vector<double> cpu;
  double collectives = 0, rounds = 0, bytes = 0;
  for (int r = 0; r < size; ++r) {
    cpu.push_back(all[4 * r]);
    collectives += all[4 * r + 1];
    rounds += all[4 * r + 2];
    bytes += all[4 * r + 3];
  }
  const Stats cpu_stats = summarize(cpu);
  const bool traffic = collectives > 0 || rounds > 0 || bytes > 0;
  if (o.json) {
    JsonLine line;
    line.add("mode", "idle")
        .add("ranks", size)
        .add("seconds", o.idle_seconds)
        .add("cpu_percent", cpu_stats)
        .add("collectives", static_cast<long long>(collectives))
        .add("negotiation_rounds", static_cast<long long>(rounds))
        .add("traffic_bytes", static_cast<long long>(bytes))
        .add("mpi_traffic", traffic);
    std::printf("%s\n", line.str().c_str());
  } else {
    std::printf("# hvd-bench idle: %d ranks initialized, %.3f s asleep; CPU of the whole "
                "process (all threads) in %% of one core\n", size, o.idle_seconds);
    std::printf("# %6s %10s %12s %12s %14s\n", "rank", "cpu(%)", "collectives", "negotiations",
                "bytes sent");
    for (int r = 0; r < size; ++r)
      std::printf("  %6d %10.3f %12.0f %12.0f %14.0f\n", r, all[4 * r], all[4 * r + 1],
                  all[4 * r + 2], all[4 * r + 3]);
    std::printf("# max cpu %.3f%% of a core; MPI traffic while idle: %s\n", cpu_stats.max,
                traffic ? "yes" : "none");
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace hvdbench
