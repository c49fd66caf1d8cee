// The background thread: the only thread that calls MPI after init. It runs
// negotiation rounds, plans fusion and executes the ready tensors.
//
// When a round is posted (all ranks post every round, in the same sequence):
//   Continue  the last round made progress and some rank is busy: at once.
//   Waiting   some rank is busy but nothing moved: on new local work, on a peer's
//             doorbell, or after the cycle time, whichever comes first.
//   Idle      no rank has work: on new local work or a peer's doorbell, nothing
//             else, so an idle job sends no MPI traffic and sleeps.
// A rank that starts a round from Idle or Waiting because of its own new work rings
// a doorbell (a small message to every peer), so the others join at once instead of
// after a timer: a lone allreduce costs about one MPI latency, not one cycle time.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "adapt/burst_cap.h"
#include "negotiate/controller.h"
#include "execute/execute.h"
#include "adapt/far_cores.h"
#include "execute/fusion_planner.h"
#include "adapt/layout_watch.h"
#include "observe/op_watchdog.h"
#include "negotiate/speculation.h"
#include "runtime/runtime.h"
#include "topo/run_delay.h"
#include "tune/parameter_manager.h"
#include "tune/step_detector.h"
#include "ops/device/device_engine.h"
#include "ops/mpi/mpi_backend.h"

namespace hvd {

class BackgroundLoop {
 public:
  explicit BackgroundLoop(Runtime& runtime);
  ~BackgroundLoop();

  void run();  // the thread body; returns after the shutdown round

 private:
  enum class Mode { Continue, Waiting, Idle };
  static constexpr int kDoorbellTag = 17;  // a peer's "round starts" on rt_.control
  // Longest sleep between polls while an operation is in flight, and between checks
  // for peers' work while idle: short enough that a peer's round is noticed well
  // within a cycle, long enough that an idle job costs no CPU. Were HVD_POLL_US and
  // HVD_IDLE_POLL_MS; no measurement ever favoured other values.
  static constexpr int64_t kPollUs = 200;
  static constexpr int64_t kIdlePollUs = 5000;

  // Blocks until this rank should post the next round.
  void wait_for_round();
  // Returns true if a doorbell for the next round (or a later one) arrived.
  bool poll_doorbell();
  // poll_doorbell(); when it rang and this rank has nothing for the round but has just
  // completed work, first waits briefly for its own next request (see the .cpp).
  bool doorbell_rang();
  void ring_doorbells();
  Error run_round(bool* shutdown);
  // Waits while this rank's queue is still growing fast (HVD_BURST_GAP_US).
  struct BurstWait {
    bool take_requests = true;  // false: none was queued when the round began
    bool capped = false;        // the wait ended at its cap with requests still arriving
  };
  BurstWait let_burst_finish();
  Error wait_request(MPI_Request* request);
  // A tensor the round's speculative payload completed (negotiate/speculation.h); result:
  // the reduced payload.
  void complete_speculated(const Response& r, const void* result);
  void inspect_stalls();
  void warn_stall(const Controller::Stalled& s, double now) const;
  void complete(Request&& request, const Error& result);
  void complete_batch(std::span<Request* const> requests, const Error& result);
  // Runs process-set changes (collective over the world, in negotiated order).
  Error administer(const Response& response, Request* local);
  // Creates the device engine on this thread when the rank has a GPU.
  void start_device();
  // Autotuning (HOROVOD_AUTOTUNE): the coordinator scores steps and proposes
  // parameters; every rank applies them in the round they arrive.
  void start_tuner();
  void observe_for_tuning(std::span<const Response> ready, const std::vector<Batch>& batches);
  void apply_tuning(const std::string& blob);
  // Step accounting: a step boundary when a name comes back (unless the framework
  // marks steps), then each batch's copy and transfer time and bytes.
  void observe_step(std::span<const Response> ready);
  void run_batches(std::span<const Response> ready, const std::vector<Batch>& batches);
  // The time this rank waited for every rank of the set to reach the next collective
  // (ns; 0 where the summary was not asked for). Collective over the set.
  int64_t await_arrivals(int32_t set_id);
  // FusionConfig::fuse_large for a set: the option, the hierarchical algorithm and
  // whether the set's ranks are on more than one node.
  bool fuse_large_tensors(int32_t set_id);
  // The round's agreed word on the ranks' layout (RoundFlags::back_to_back): the plan
  // and the staging pieces follow it.
  void agree_layout(bool back_to_back);
  bool fused_ring(int32_t set_id, int64_t bytes);
  bool spans_nodes(int32_t set_id);
  // Turns the response cache on or off as tuned, once the round's responses have run.
  void switch_cache();
  void toggle_cache_for_tests();
  void fail_everything(const Error& error);

  Runtime& rt_;
  Controller controller_;
  Speculation speculation_;
  MpiBackend host_;
  FarCores far_cores_;  // host_'s chunk size for the ranks' cores; set each round
  // Where this rank's large allreduces lie (watched where HVD_FUSE_LARGE is auto), and
  // what the ranks agreed on it: fuse_large_tensors says yes everywhere while they all
  // lie back to back.
  LayoutWatch layout_watch_;
  bool back_to_back_ = false;
  Executor executor_;
  HierarchicalAllreduce hier_;
  HierarchicalAllgather hier_ag_;
  std::unique_ptr<DeviceEngine> device_;
  std::unique_ptr<ParameterManager> tuner_;  // rank 0 only
  StepDetector steps_;
  StepDetector stat_steps_;  // step accounting's own (the tuner's runs on rank 0 only)
  bool step_stats_ = false;  // HVD_STEP_STATS
  bool await_arrivals_ = false;  // HVD_SUMMARY or HVD_SUMMARY_FILE
  bool steps_started_ = false;
  int64_t step_bytes_ = 0;
  double step_start_ = 0;
  double cycle_time_ms_ = 1.0;
  BurstCap burst_cap_{true, false};  // judged on this thread when it starts (run())
  RunDelayReader own_delay_;         // this thread's
  RunDelayReader caller_delay_;      // the last pushing thread's
  TunedParams applied_;           // the values in use (tuned, or as configured)
  int cache_switch_ = -1;         // 0 or 1: the cache goes off or on after this round
  bool toggled_cache_on_ = true;  // HVD_CACHE_TOGGLE_ROUNDS: the state last sent
  FusionConfig fusion_;
  PlanMemo plan_memo_;
  std::unordered_map<int32_t, bool> spans_nodes_;  // by process set (spans_nodes)
  Mode mode_ = Mode::Idle;
  int64_t round_ = 0;
  double last_round_end_ = 0;
  double last_progress_ = 0;  // end of the last round that ran or negotiated something
  // repeat_identity of the last running round's only tensor, or 0
  size_t last_lone_identity_ = 0;
  uint64_t completed_ = 0;      // local requests completed, ever
  bool last_round_completed_ = false;  // the last round completed some of them

  MPI_Request doorbell_request_ = MPI_REQUEST_NULL;
  int64_t doorbell_value_ = 0;
  struct StallWarning {
    double first_seen;    // of the stall warned about
    double last_warning;  // 0: not yet
    bool timed_out = false;  // its timeout was decided (sent once, not warned again)
  };
  std::unordered_map<std::string, StallWarning> stall_warned_;  // rank 0
  // By rank, the last operation of a process set this rank is not in that the rank
  // went into: while in it (and just after, until its application thread gets the
  // result) it submits nothing new, which the stall inspector says rather than "not
  // submitted". ended: when the first negotiation round after it completed (< 0: not
  // yet).
  struct BusyElsewhere {
    std::string what;  // "allgather of tensor 'x' on process set 2"
    double ended = -1;
  };
  std::unordered_map<int, BusyElsewhere> busy_elsewhere_;
  double last_stall_check_ = 0;
  double stall_probe_s_ = 0;  // 0: cached requests are never announced for the inspector

  std::vector<uint64_t> bits_;
  std::vector<uint64_t> bits_result_;
  std::vector<uint8_t> message_;
  std::vector<uint8_t> gathered_;
  std::vector<Response> ready_;  // this round's responses (capacity reused)
  std::vector<Request> fresh_;   // requests drained this round (capacity reused)
  std::vector<Refusal> refusals_;  // calls this rank refused, drained this round
  // Last: it is stopped before anything it may read in flight (device_, ready_) goes.
  OpWatchdog watchdog_;
};

}  // namespace hvd
