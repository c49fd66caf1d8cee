#include "ops/mpi/core_probe.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

namespace hvd {

namespace {

constexpr size_t kMappedBytes = 4096;
// The first round trips wait for the other rank to arrive and bring both cores up to
// speed (untimed: with none, the probe read 50-90 ns above a long measurement's
// 1000-round-trip batches); then kBatches batches of kBatchRoundTrips, timed apart, and
// the fastest batch is the result: an interruption (an interrupt, a page of the other
// rank's being touched) only ever lengthens a batch.
constexpr uint32_t kWarmUpRoundTrips = 16;
constexpr uint32_t kBatches = 8;
constexpr uint32_t kBatchRoundTrips = 8;
constexpr uint32_t kRoundTrips = kWarmUpRoundTrips + kBatches * kBatchRoundTrips;
// How long either rank waits for the other: the two come from the same negotiation
// round, microseconds apart unless one was descheduled.
constexpr std::chrono::microseconds kPatience(500);

// A value in the line: the probe's index in the high half, a step in the low one
// (2i+1 from local rank 0, 2i+2 from rank 1, kStop when rank 0 gives up). Values of
// earlier probes are never mistaken for this one's.
constexpr uint32_t kStop = 0xffffffffu;
uint64_t value(uint32_t index, uint32_t step) { return (uint64_t{index} << 32) | step; }

using Clock = std::chrono::steady_clock;

}  // namespace

CoreProbe::~CoreProbe() {
  if (line_) munmap(line_, kMappedBytes);
}

void CoreProbe::open(MPI_Comm local) {
  MPI_Comm_rank(local, &local_rank_);
  // Local rank 0 makes a shared-memory object under a name no other job uses; the
  // others map it by that name; it is unlinked once every rank has it (or failed).
  char name[64] = "";
  void* mapped = MAP_FAILED;
  if (local_rank_ == 0) {
    std::random_device random;
    std::snprintf(name, sizeof name, "/hvd-core-probe.%d.%08x", static_cast<int>(getpid()),
                  static_cast<unsigned>(random()));
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0) {
      if (ftruncate(fd, kMappedBytes) == 0)
        mapped = mmap(nullptr, kMappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);
    }
    if (mapped == MAP_FAILED) name[0] = '\0';
  }
  MPI_Bcast(name, sizeof name, MPI_CHAR, 0, local);
  if (local_rank_ != 0 && name[0] != '\0') {
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd >= 0) {
      mapped = mmap(nullptr, kMappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);
    }
  }
  int ok = mapped != MAP_FAILED ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, local);
  if (local_rank_ == 0 && name[0] != '\0') shm_unlink(name);
  if (!all_ok) {
    if (mapped != MAP_FAILED) munmap(mapped, kMappedBytes);
    return;
  }
  line_ = static_cast<uint64_t*>(mapped);  // zeroed by ftruncate: no probe's value
}

std::optional<double> CoreProbe::probe(uint32_t index) {
  if (!line_ || index == 0) return std::nullopt;  // index 0 would match the zeroed line
  if (local_rank_ == 0) return ping(index);
  if (local_rank_ == 1) echo(index);
  return std::nullopt;
}

std::optional<double> CoreProbe::ping(uint32_t index) {
  std::atomic_ref<uint64_t> line(*line_);
  const Clock::time_point deadline = Clock::now() + kPatience;
  Clock::time_point batch_start{};
  double batch_ns[kBatches];
  for (uint32_t i = 0; i < kRoundTrips; ++i) {
    line.store(value(index, 2 * i + 1), std::memory_order_release);
    for (uint32_t spins = 1; line.load(std::memory_order_acquire) != value(index, 2 * i + 2); ++spins) {
      if (spins % 256 == 0 && Clock::now() > deadline) {
        line.store(value(index, kStop), std::memory_order_release);
        return std::nullopt;
      }
    }
    // After round trip i: the warm-up ends, or a batch, every kBatchRoundTrips after it.
    if (i + 1 >= kWarmUpRoundTrips && (i + 1 - kWarmUpRoundTrips) % kBatchRoundTrips == 0) {
      const Clock::time_point now = Clock::now();
      if (i + 1 > kWarmUpRoundTrips)
        batch_ns[(i + 1 - kWarmUpRoundTrips) / kBatchRoundTrips - 1] =
            std::chrono::duration<double, std::nano>(now - batch_start).count() / kBatchRoundTrips;
      batch_start = now;
    }
  }
  line.store(value(index, kStop), std::memory_order_release);
  return *std::min_element(batch_ns, batch_ns + kBatches);
}

void CoreProbe::echo(uint32_t index) {
  std::atomic_ref<uint64_t> line(*line_);
  const Clock::time_point deadline = Clock::now() + 2 * kPatience;
  for (uint32_t i = 0;; ++i) {
    for (uint32_t spins = 1;; ++spins) {
      const uint64_t seen = line.load(std::memory_order_acquire);
      if (seen == value(index, 2 * i + 1)) break;
      if (seen == value(index, kStop)) return;
      if (spins % 256 == 0 && Clock::now() > deadline) return;
    }
    // A failed exchange: rank 0 gave up (kStop) in the meantime.
    uint64_t expected = value(index, 2 * i + 1);
    if (!line.compare_exchange_strong(expected, value(index, 2 * i + 2), std::memory_order_acq_rel))
      return;
  }
}

}  // namespace hvd
