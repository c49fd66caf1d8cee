#include "core_round_trip.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "stats.h"

namespace hvdbench {

namespace {

constexpr int kWarmUp = 1000;    // round trips before the timed ones
constexpr int kBatch = 1000;     // round trips per timed batch
constexpr int kBatches = 20;     // the median batch is the result
constexpr double kDeadlineSeconds = 0.5;
constexpr int64_t kStop = -1;    // written by the pinging rank when it gives up

// The pinging rank writes 2i+1, the echoing rank answers 2i+2. Returns the median
// batch's time per round trip in seconds, or a negative value when the deadline passed
// (then kStop is in the line, which ends the echoing rank's loop).
double ping(std::atomic_ref<int64_t> line) {
  const double deadline = now_seconds() + kDeadlineSeconds;
  std::vector<double> batches;
  int64_t i = 0;
  for (int b = -1; b < kBatches; ++b) {  // batch -1: the warm-up, not timed
    const int rounds = b < 0 ? kWarmUp : kBatch;
    const double start = now_seconds();
    for (int r = 0; r < rounds; ++r, ++i) {
      line.store(2 * i + 1, std::memory_order_release);
      for (uint32_t spins = 1; line.load(std::memory_order_acquire) != 2 * i + 2; ++spins) {
        if (spins % 1024 == 0 && now_seconds() > deadline) {
          line.store(kStop, std::memory_order_release);
          return -1;
        }
      }
    }
    if (b >= 0) batches.push_back((now_seconds() - start) / rounds);
  }
  line.store(kStop, std::memory_order_release);
  return summarize(batches).median;
}

void echo(std::atomic_ref<int64_t> line) {
  for (int64_t i = 0;; ++i) {
    int64_t seen;
    while ((seen = line.load(std::memory_order_acquire)) != 2 * i + 1)
      if (seen == kStop) return;
    // A failed exchange means the pinging rank gave up (kStop) in the meantime.
    int64_t expected = 2 * i + 1;
    if (!line.compare_exchange_strong(expected, 2 * i + 2, std::memory_order_acq_rel)) return;
  }
}

}  // namespace

double core_round_trip_ns() {
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  // Key 0 keeps world order, so world rank 0 is node rank 0 of its node.
  int first_of_node = world_rank;
  MPI_Bcast(&first_of_node, 1, MPI_INT, 0, node);
  const bool probing = first_of_node == 0 && node_size >= 2 && node_rank < 2;

  void* base = nullptr;
  MPI_Win window;
  MPI_Win_allocate_shared(node_rank == 0 ? 64 : 0, 1, MPI_INFO_NULL, node, &base, &window);
  MPI_Aint bytes = 0;
  int unit = 1;
  int64_t* shared = nullptr;
  MPI_Win_shared_query(window, 0, &bytes, &unit, &shared);
  if (node_rank == 0) *shared = 0;
  MPI_Barrier(node);  // the line is zeroed before either rank uses it

  double result = kNoPeerOnNode;  // world rank 0's value is the one broadcast
  if (probing) {
    std::atomic_ref<int64_t> line(*shared);
    if (node_rank == 0) {
      const double seconds = ping(line);
      result = seconds < 0 ? kGaveUp : seconds * 1e9;
    } else {
      echo(line);
    }
  }
  MPI_Barrier(node);
  MPI_Win_free(&window);
  MPI_Comm_free(&node);
  MPI_Bcast(&result, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return result;
}

}  // namespace hvdbench
