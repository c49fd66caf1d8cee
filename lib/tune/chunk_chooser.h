// The chunk size of large in-place allreduces, chosen by measurement. One MPI library
// on one machine does not have one best size: over MPICH's shared memory a 100 MB
// buffer reduces fastest in 1 MiB calls in some launches and in 16 MiB calls in others
// (the same program, launched again: 22 against 27 ms in one kind of launch, 42 against
// 34 ms in the other), so a fixed size loses a fifth of the time in one of them.
//
// Two arms: the configured size (HVD_ALLREDUCE_CHUNK_BYTES, or the MPI's default) and
// an alternative a factor of 16 away. Calls on buffers of at least the larger size
// (where the two arms make different calls) are timed; each arm keeps its last
// kWindow times per byte, and the arm with the lower median is used, the other tried
// now and then: first after kFirstInterval calls, then at intervals that double each
// time it loses again (up to kMaxInterval), so a clear loser costs under one call in a
// hundred. A switch needs the median to win by kMargin and kMinSamples samples of
// the challenger; a challenger that beats the incumbent on too few samples is tried
// again at once.
//
// Every rank's calls must be the same: only rank 0's choice is used (it travels in
// the negotiation round, core/controller.h), so the choice is a pure function of
// rank 0's measurements.
#pragma once

#include <array>
#include <cstdint>

namespace hvd {

class ChunkChooser {
 public:
  static constexpr int kArms = 2;
  static constexpr int kWindow = 7;
  static constexpr int kMinSamples = 3;
  static constexpr int kFirstInterval = 4;
  static constexpr int kMaxInterval = 128;
  static constexpr double kMargin = 0.05;

  // adaptive false: always the configured size.
  ChunkChooser(int64_t configured_bytes, bool adaptive);

  // The alternative to a configured size: 16 times larger up to 16 MiB, else 16 times
  // smaller (no smaller than 64 KiB).
  static int64_t alternative(int64_t configured_bytes);

  bool adaptive() const { return adaptive_; }
  int64_t bytes(int arm) const { return bytes_[arm]; }
  // The arm whose size this is, or -1.
  int arm_of(int64_t chunk_bytes) const;
  // Whether a call on a buffer of this size tells the arms apart.
  bool measures(int64_t buffer_bytes) const { return adaptive_ && buffer_bytes >= largest_; }
  // One timed call, made with the arm's size.
  void record(int arm, int64_t buffer_bytes, double seconds);
  // The arm the next calls should use.
  int proposal() const { return adaptive_ && explore_now_ ? 1 - best_ : best_; }
  int best() const { return best_; }
  // Median seconds per byte of an arm's window; 0 without samples.
  double median(int arm) const;
  int samples(int arm) const { return count_[arm]; }

 private:
  struct Window {
    std::array<double, kWindow> values{};
    int next = 0;
  };
  void decide();

  bool adaptive_;
  std::array<int64_t, kArms> bytes_;
  int64_t largest_;
  std::array<Window, kArms> windows_;
  std::array<int, kArms> count_{};  // samples taken (the window holds the last kWindow)
  int best_ = 0;
  bool explore_now_ = false;
  int interval_ = kFirstInterval;
  int since_explore_ = 0;
};

}  // namespace hvd
