// The longest a burst's wait may last (BackgroundLoop::let_burst_finish): the cycle
// time where a round started before the burst ends can overlap the caller's remaining
// pushes, kSharedCpuFactor cycle times where it cannot (the round's transfers and the
// pushes take turns on one CPU, so ending the wait early only splits the step).
//
// Whether a CPU is free for the round is first judged from the placement
// (Runtime::rounds_overlap_pushes: two CPUs or more per rank, or a GPU), then, where
// the CPU transfers, measured: over each early round (the wait reached the cap with
// requests still arriving) the run delay of the background thread and of the caller
// (topo/run_delay.h) says how long they waited for a CPU. The kernel counts a wait
// when it ends and lets a thread run a few milliseconds before another gets its CPU,
// so a round of a millisecond shows all or nothing: the judgement is made over early
// rounds adding up to kJudgedSeconds. Waiting a fifth of that time or more means the
// CPUs the rank counts as its own were busy (the round and the pushes took turns, or
// another rank's threads or another job held them: sharing the rank cannot see from
// its placement), and the cap becomes long. Under the long cap every kProbeEvery-th
// burst that outlasts the cycle time still ends at it, and under a twentieth makes the
// cap short again once the CPUs free up.
// Each rank judges its own CPUs, and every negotiation round ANDs the judgements
// (Controller::fill_bits): the cap is short only where every rank's CPUs are free,
// since any rank that ends its wait early splits the step for all (the round takes the
// tensors every rank has), and a rank whose CPUs are busy slows its peers' rounds too.
#pragma once

#include <cstdint>

namespace hvd {

class BurstCap {
 public:
  static constexpr double kSharedCpuFactor = 10;
  static constexpr int kProbeEvery = 32;
  static constexpr double kBusyShare = 0.2;   // of a round's time waiting for a CPU
  static constexpr double kFreeShare = 0.05;
  static constexpr double kJudgedSeconds = 0.01;

  // overlap_expected: the placement's judgement; measured: early rounds are judged by
  // their run delay (false with a GPU, whose transfers overlap whatever the CPUs, or
  // where the kernel does not report run delay).
  BurstCap(bool overlap_expected, bool measured)
      : free_here_(overlap_expected), free_everywhere_(overlap_expected), measured_(measured) {}

  // The cap for the burst now starting, in milliseconds.
  double cap_ms(double cycle_ms) const {
    return free_everywhere_ || probe_next_ ? cycle_ms : cycle_ms * kSharedCpuFactor;
  }
  // A burst lasted longer than the cycle time (whatever ended it).
  void outlasted_cycle();
  // An early round: its wall time and the run delay its threads (the background
  // thread's and the caller's) had over it.
  void early_round(double wall_s, int64_t delay_ns);
  // The round's agreement: every rank's CPUs were free. Returns true if that changed.
  bool agree(bool every_rank_free);

  bool free_here() const { return free_here_; }
  bool free_everywhere() const { return free_everywhere_; }
  bool measured() const { return measured_; }

 private:
  bool free_here_;
  bool free_everywhere_;
  bool measured_;
  bool probe_next_ = false;
  double wall_s_ = 0;    // early rounds since the last judgement
  int64_t delay_ns_ = 0;  // their threads' run delay
  int64_t long_bursts_ = 0;  // bursts that outlasted the cycle time under the long cap
};

}  // namespace hvd
