#include "runtime/background.h"

#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>

#include "base/dtype.h"
#include "base/log.h"
#include "observe/step_stats.h"
#include "observe/step_summary.h"
#include "fusion/scale.h"
#include "ops/mpi/negotiation_op.h"
#include "topo/run_delay.h"

namespace hvd {

namespace {

// Bus bytes per byte of an operation over n ranks, as nccl-tests count them, so the
// bandwidth reads like theirs.
double bus_factor(OpType op, int n) {
  if (n <= 1) return 0;
  switch (op) {
    case OpType::Allreduce: return 2.0 * (n - 1) / n;
    case OpType::Allgather:
    case OpType::Alltoall:
    case OpType::Reducescatter: return static_cast<double>(n - 1) / n;
    case OpType::Broadcast: return 1.0;
    default: return 0;
  }
}

}  // namespace

BackgroundLoop::BackgroundLoop(Runtime& runtime)
    : rt_(runtime),
      controller_(runtime.rank, runtime.size, static_cast<size_t>(runtime.params.cache_capacity),
                  &runtime.sets),
      speculation_(runtime.speculative_bytes),
      host_(runtime.params.allreduce_chunk_bytes, &runtime.counters),
      far_cores_(FarCoresJob{runtime.world, runtime.local, runtime.rank, runtime.local_rank,
                             runtime.local_size, runtime.every_rank_has_a_cpu,
                             runtime.params.allreduce_chunk_bytes, runtime.params.far_cores},
                 &runtime.counters),
      layout_watch_(runtime.params.inplace_min_bytes),
      executor_(&host_, &runtime.sets, &runtime.counters,
                [this](std::span<Request* const> r, const Error& e) { complete_batch(r, e); },
                [this](const Response& r, Request* local) { return administer(r, local); }),
      hier_(NodeLayout{runtime.local, runtime.cross, runtime.local_rank, runtime.local_size,
                       runtime.cross_rank, runtime.cross_size, runtime.homogeneous,
                       runtime.num_nodes, runtime.max_local_size,
                       runtime.local_rank == 0 ? runtime.cross : MPI_COMM_NULL},
            runtime.params.allreduce_chunk_bytes, &runtime.counters),
      hier_ag_(NodeLayout{runtime.local, runtime.cross, runtime.local_rank, runtime.local_size,
                          runtime.cross_rank, runtime.cross_size, runtime.homogeneous,
                          runtime.num_nodes, runtime.max_local_size,
                          runtime.local_rank == 0 ? runtime.cross : MPI_COMM_NULL},
               runtime.node_of, runtime.local_rank_of, runtime.rank, &runtime.counters),
      watchdog_(
          runtime.params.op_timeout_s,
          runtime.params.stall_check_disable ? 0.0 : runtime.params.stall_check_time_s,
          runtime.rank, &runtime.sets,
          [this] {
            if (device_) device_->abort_communicators();
          },
          [this] { return controller_.describe_pending(8); }) {
  host_.set_piece_bytes(rt_.params.fusion_piece_bytes);
  // How long a request may wait on the response cache before it is announced by name
  // for the stall inspector: half the warning time, at most a second (a healthy job's
  // ranks are milliseconds apart, so it never pays for it).
  if (!rt_.params.stall_check_disable && rt_.params.stall_check_time_s > 0)
    stall_probe_s_ = std::min(1.0, rt_.params.stall_check_time_s / 2);
  executor_.set_hierarchical(&hier_);
  executor_.set_hierarchical_allgather(&hier_ag_);
  executor_.use_hierarchical_allgather(rt_.params.hierarchical_allgather);
  controller_.set_timeline(&process_timeline());
  executor_.set_timeline(&process_timeline());
  executor_.use_hierarchical(rt_.params.hierarchical_allreduce);
  if (rt_.params.hierarchical_allreduce && hier_.useful() && !rt_.homogeneous && rt_.rank == 0)
    HVD_LOG(Warning,
            "hierarchical allreduce: nodes have different numbers of ranks, so it reduces "
            "through one rank per node (slower than the even-node algorithm)");
  fusion_.threshold = rt_.params.fusion_threshold;
  fusion_.inplace_min_bytes = rt_.params.inplace_min_bytes;
  fusion_.disable_group_fusion = rt_.params.disable_group_fusion;
  fusion_.fuse_large = [this](int32_t set_id) { return fuse_large_tensors(set_id); };
  fusion_.equal_pieces = [this](int32_t set_id) { return spans_nodes(set_id); };
  if (rt_.params.fuse_large == Params::AutoChoice::Auto) executor_.set_layout_watch(&layout_watch_);
  executor_.set_fused_ring(
      [this](int32_t set_id, int64_t bytes) { return fused_ring(set_id, bytes); });
  cycle_time_ms_ = rt_.params.cycle_time_ms;
  // A chosen starting point for the search (on every rank, so all fuse alike until
  // the first tuned values arrive); knobs the user set win, and are held.
  if (rt_.params.autotune) {
    if (rt_.params.autotune_start_fusion_threshold > 0 && !param_is_set("HOROVOD_FUSION_THRESHOLD"))
      fusion_.threshold = rt_.params.autotune_start_fusion_threshold;
    if (rt_.params.autotune_start_cycle_time_ms > 0 && !param_is_set("HOROVOD_CYCLE_TIME"))
      cycle_time_ms_ = rt_.params.autotune_start_cycle_time_ms;
  }
  applied_.fusion_threshold = fusion_.threshold;
  applied_.cycle_time_ms = cycle_time_ms_;
  applied_.hierarchical_allreduce = rt_.params.hierarchical_allreduce;
  applied_.hierarchical_allgather = rt_.params.hierarchical_allgather;
  applied_.cache_enabled = controller_.cache_enabled();
  start_tuner();
  step_stats_ = rt_.params.step_stats;
  await_arrivals_ = step_stats_ && rt_.await_arrivals;
  executor_.time_copies(step_stats_);
}

BackgroundLoop::~BackgroundLoop() = default;

void BackgroundLoop::complete(Request&& request, const Error& result) {
  ++completed_;
  rt_.queue.release_name(request);
  if (request.handle) request.handle->complete(result);
}

void BackgroundLoop::complete_batch(std::span<Request* const> requests, const Error& result) {
  // Names first: a caller woken by its handle may reuse the name at once.
  completed_ += requests.size();
  rt_.queue.release_names(requests);
  for (Request* r : requests)
    if (r->handle) r->handle->complete(result);
}

void BackgroundLoop::start_device() {
  if (rt_.gpu_device < 0) {
    executor_.set_device(nullptr, "this rank has no GPU (" +
                                      (rt_.pin.notes.empty() ? std::string("none was found")
                                                             : rt_.pin.notes) + ")");
    return;
  }
  Error err = DeviceEngine::create(rt_.gpu_device, rt_.params.gpu_operations,
                                   rt_.params.nccl_library, &host_, &rt_.counters, &device_);
  // A backend may make communicators here, collectively; a rank whose engine failed
  // must still answer, so every set goes through process_set_added on every rank with
  // an engine. (NCCL makes a set's at its first collective, so that NCCL is loaded only
  // when a GPU collective needs it.)
  if (err.ok()) {
    for (auto& set : rt_.sets.all()) {
      Error added = device_->process_set_added(set->communicator());
      if (!added.ok()) err = added;
    }
  }
  if (!err.ok()) {
    HVD_LOG(Debug, "device operations unavailable: %s", err.message.c_str());
    device_.reset();
    executor_.set_device(nullptr, "the device engine could not start: " + err.message);
    return;
  }
  if (rt_.params.hierarchical_cross_mpi) device_->set_hierarchical_cross(CrossTransport::Mpi);
  HVD_LOG(Debug, "device engine on GPU %d: %s", rt_.gpu_device, device_->description().c_str());
  executor_.set_device(device_.get(), "");
}

bool BackgroundLoop::fuse_large_tensors(int32_t set_id) {
  // A hierarchical reduction takes a fused batch whole through the fusion buffer, so
  // large tensors stay alone there.
  if (rt_.params.fuse_large == Params::AutoChoice::Never || executor_.reduces_hierarchically(set_id))
    return false;
  return rt_.params.fuse_large == Params::AutoChoice::Always || back_to_back_ || spans_nodes(set_id);
}

void BackgroundLoop::agree_layout(bool back_to_back) {
  if (back_to_back != back_to_back_) {
    back_to_back_ = back_to_back;
    plan_memo_.forget();  // fuse_large_tensors changed
    rt_.counters.back_to_back.store(back_to_back ? 1 : 0, std::memory_order_relaxed);
    if (rt_.rank == 0)
      HVD_LOG(Debug, "large allreduces %s",
              back_to_back ? "lie back to back on every rank: fused, reduced where they lie"
                           : "no longer lie back to back on every rank: reduced a tensor at a time");
  }
  // A piece that lies in place needs no room in a cache for its copies: on one machine
  // it goes in the calls the whole buffer would get as one tensor (16 MiB ones where the
  // cores are far apart, adapt/far_cores.h). Across nodes the pieces stay the fusion
  // pieces, which keep a network's stream of calls even.
  const int64_t piece = rt_.params.fusion_piece_bytes;
  host_.set_piece_bytes(back_to_back_ && rt_.num_nodes == 1
                            ? std::max(piece, host_.allreduce_chunk_bytes())
                            : piece);
}

// Below this a fused batch is latency-bound: the ring's 2 (size - 1) steps cost more
// than MPI_Allreduce's fewer rounds save in copies.
constexpr int64_t kFusedRingMinBytes = 64 << 10;

bool BackgroundLoop::fused_ring(int32_t set_id, int64_t bytes) {
  if (rt_.params.fused_ring == Params::AutoChoice::Never) return false;
  if (rt_.params.fused_ring == Params::AutoChoice::Always) return true;
  return bytes >= kFusedRingMinBytes && rt_.every_rank_has_a_cpu && spans_nodes(set_id);
}

bool BackgroundLoop::spans_nodes(int32_t set_id) {
  auto known = spans_nodes_.find(set_id);
  if (known != spans_nodes_.end()) return known->second;
  bool spans = false;
  if (auto set = rt_.sets.find(set_id)) {
    for (int rank : set->ranks)
      if (rt_.node_of[static_cast<size_t>(rank)] != rt_.node_of[static_cast<size_t>(set->ranks.front())]) {
        spans = true;
        break;
      }
  }
  spans_nodes_.emplace(set_id, spans);  // set ids are never reused, and ranks never move
  return spans;
}

void BackgroundLoop::run_batches(std::span<const Response> ready,
                                 const std::vector<Batch>& batches) {
  for (const Batch& batch : batches) {
    int64_t start = 0;
    if (step_stats_) {
      const TensorSpec& spec = ready[batch.items.front()].spec;
      int n = rt_.size;
      if (spec.process_set != 0) {
        auto set = rt_.sets.find(spec.process_set);
        n = set && set->member() ? set->size() : 0;
      }
      const int64_t bytes = n > 0 ? batch.bytes : 0;
      step_stats().add_bytes(bytes,
                             static_cast<int64_t>(static_cast<double>(bytes) * bus_factor(spec.op, n)));
      start = monotonic_ns();
    }
    if (auto set = rt_.sets.find(ready[batch.items.front()].spec.process_set); set && !set->member()) {
      watchdog_.note_elsewhere(&batch, &ready_);
      const Response& first = ready[batch.items.front()];
      const std::string what = std::string(op_type_name(first.spec.op)) + " of tensor '" +
                               first.name + "' on process set " + std::to_string(first.spec.process_set);
      for (int rank : set->ranks) busy_elsewhere_[rank] = {what, -1};
    }
    watchdog_.begin(&batch, &ready_);
    const int64_t peer_wait_ns = await_arrivals(ready[batch.items.front()].spec.process_set);
    executor_.run(batch, ready_, controller_);
    watchdog_.end();
    if (!step_stats_) continue;
    const int64_t copy_ns = executor_.take_copy_ns();
    step_stats().add_execute(
        copy_ns, std::max<int64_t>(0, monotonic_ns() - start - peer_wait_ns - copy_ns),
        peer_wait_ns);
  }
}

int64_t BackgroundLoop::await_arrivals(int32_t set_id) {
  // A collective cannot finish on any rank before its last rank enters it, so a rank
  // that enters early counts the others' lateness (a peer that was descheduled, or busy
  // with a copy) as its transfer time, and the bandwidth computed from it says the
  // network is slow when a rank was. A barrier just before the collective takes that
  // wait out: it ends on each rank once every rank has entered it, so the time in it
  // is this rank's wait for the last arrival (plus one barrier latency, microseconds
  // on a node), and the collective after it starts with every rank present. It costs
  // one barrier per batch, so it runs only where every rank asked for the summary
  // (Runtime::await_arrivals); without it, transfer time includes the wait.
  if (!await_arrivals_) return 0;
  auto set = rt_.sets.find(set_id);
  if (!set || !set->member() || set->size() < 2) return 0;
  const int64_t start = monotonic_ns();
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(set->comm, &request) != MPI_SUCCESS) return 0;
  // A failure here is the collective's to report: it runs next on the same ranks.
  if (!wait_request(&request).ok()) return 0;
  return monotonic_ns() - start;
}

Error BackgroundLoop::administer(const Response& response, Request* local) {
  if (response.spec.op == OpType::ProcessSetAdd) {
    std::vector<int> ranks(response.spec.splits.begin(), response.spec.splits.end());
    if (auto existing = rt_.sets.find_by_ranks(ranks))
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "a process set with these ranks already exists (id %d); use it, or "
                        "remove it first",
                        existing->id);
    auto set = make_process_set(rt_.sets.next_id(), ranks, rt_.world, rt_.rank, rt_.size);
    if (set->comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(set->comm, MPI_ERRORS_RETURN);
    Error err = host_.process_set_added(set->communicator());
    if (err.ok() && device_) err = device_->process_set_added(set->communicator());
    if (!err.ok()) {
      if (set->comm != MPI_COMM_NULL) MPI_Comm_free(&set->comm);
      return err;
    }
    rt_.sets.add(set);
    if (local && local->out_value) *local->out_value = set->id;
    HVD_LOG(Debug, "process set %d added (%d ranks)", set->id, set->size());
    return Error::success();
  }
  const int32_t id = response.spec.root;
  if (id == 0)
    return make_error(HVD_ERR_INVALID_ARGUMENT, "the global process set (id 0) cannot be removed");
  auto set = rt_.sets.remove(id);
  if (!set) return make_error(HVD_ERR_INVALID_ARGUMENT, "process set %d does not exist", id);
  Error gone = make_error(HVD_ERR_INVALID_ARGUMENT,
                          "process set %d was removed while this operation was pending", id);
  for (Request& r : controller_.drop_process_set(id)) complete(std::move(r), gone);
  host_.process_set_removed(set->communicator());
  if (device_) device_->process_set_removed(set->communicator());
  if (set->comm != MPI_COMM_NULL) MPI_Comm_free(&set->comm);
  HVD_LOG(Debug, "process set %d removed", id);
  return Error::success();
}

void BackgroundLoop::fail_everything(const Error& error) {
  rt_.queue.close(error.message);
  std::vector<Request> queued;
  std::vector<Refusal> refused;  // nobody is left to tell
  rt_.queue.drain(&queued, &refused);
  controller_.intake(std::move(queued));
  for (Request& r : controller_.take_all_local()) complete(std::move(r), error);
}

void BackgroundLoop::complete_speculated(const Response& r, const void* result) {
  Request local;
  if (!controller_.take_local(r, &local)) return;  // cannot be: it gave data
  const TensorSpec& spec = r.spec;
  const int64_t count = spec.num_elements();
  const int64_t bytes = count * static_cast<int64_t>(dtype_size(spec.dtype));
  Timeline& timeline = process_timeline();
  std::string row;
  if (timeline.enabled()) {
    row = timeline_row(spec, r.name);
    timeline.op_start(row, op_type_label(spec.op), bytes);
  }
  const auto global = rt_.sets.find(0);  // speculation runs on the global set only
  copy_averaged(local.recv, result, count, spec.dtype, divisor_of(spec, *global), spec.postscale);
  if (step_stats_)
    step_stats().add_bytes(bytes, static_cast<int64_t>(static_cast<double>(bytes) *
                                                       bus_factor(spec.op, rt_.size)));
  if (timeline.enabled())
    timeline.op_end(row, "OK", horovod_dtype_label(spec.dtype), output_shape_text(r, *global));
  rt_.speculated.fetch_add(1, std::memory_order_relaxed);
  complete(std::move(local), Error::success());
}

Error BackgroundLoop::run_round(bool* shutdown) {
  process_timeline().mark_cycle();
  const uint64_t completed_before = completed_;
  // An early round's run delay and its caller's say whether the two had CPUs of their
  // own (adapt/burst_cap.h).
  const BurstWait burst = let_burst_finish();
  const bool early = burst.capped && burst_cap_.measured();
  const double early_start = early ? now_seconds() : 0;
  const int caller = early ? rt_.queue.last_pusher() : 0;
  const int64_t early_delay = early ? own_delay_.read(current_thread_id()) : -1;
  const int64_t caller_delay = early ? caller_delay_.read(caller) : -1;
  if (burst.take_requests)
    rt_.queue.drain(&fresh_, &refusals_);
  else
    rt_.queue.drain_refusals(&refusals_);
  if (!refusals_.empty()) {  // before the requests: some may be the same calls again
    controller_.refuse(std::move(refusals_));
    refusals_.clear();
  }
  if (!fresh_.empty()) {
    controller_.intake(std::move(fresh_));
    fresh_.clear();  // moved-from requests; the capacity stays for the next round
  }
  if (rt_.rank == 0 && mode_ != Mode::Idle) inspect_stalls();

  const size_t words = controller_.bit_words();
  // The same answer on every rank (see negotiate/speculation.h), so the layout agrees.
  const bool speculating = speculation_.prepare(controller_);
  const size_t vector_words =
      speculating ? words + Speculation::kWords + speculation_.payload_words() : words;
  bits_.resize(vector_words);
  bits_result_.resize(vector_words);
  controller_.fill_bits(bits_.data(), rt_.shutdown_requested.load(),
                        stall_probe_s_ > 0 ? now_seconds() - stall_probe_s_ : -1.0,
                        RankWords{burst_cap_.free_here(), far_cores_.near_here(),
                                  layout_watch_.back_to_back()});
  const int64_t negotiation_start = step_stats_ ? monotonic_ns() : 0;
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  if (speculating) {
    speculation_.fill(bits_.data() + words, bits_.data() + words + Speculation::kWords);
    NegotiationLayout layout;
    layout.words = static_cast<int64_t>(words + Speculation::kWords);
    layout.count = speculation_.count();
    layout.dtype = speculation_.spec().dtype;
    layout.op = transport_op(speculation_.spec().reduce_op);
    MPI_Op op;
    MPI_Datatype type;
    negotiation_op_for(layout, &op, &type);
    rc = MPI_Iallreduce(bits_.data(), bits_result_.data(), 1, type, op, rt_.control, &request);
  } else {
    rc = MPI_Iallreduce(bits_.data(), bits_result_.data(), static_cast<int>(words), MPI_UINT64_T,
                        MPI_BAND, rt_.control, &request);
  }
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Iallreduce (negotiation)");
  watchdog_.begin_negotiation();
  Error err = wait_request(&request);
  watchdog_.end();
  if (!err.ok()) return err;
  // Every rank took part: none is in another set's operation any more.
  for (auto& [rank, busy] : busy_elsewhere_)
    if (busy.ended < 0) busy.ended = now_seconds();
  rt_.rounds.fetch_add(1, std::memory_order_relaxed);
  RoundFlags flags = controller_.apply_bits(bits_result_.data());
  host_.set_allreduce_chunk_bytes(far_cores_.chunk_bytes(flags.near_cores));
  agree_layout(flags.back_to_back);
  far_cores_.after_round(rt_.rounds.load(std::memory_order_relaxed));
  if (burst_cap_.agree(flags.cpus_free))
    HVD_LOG(Debug, "the burst wait's cap is now %g ms: %s", burst_cap_.cap_ms(cycle_time_ms_),
            flags.cpus_free ? "every rank's CPUs are free for a round to overlap the pushes"
                            : "some rank's rounds and pushes take turns on its CPUs");

  if (flags.any_announcements) {
    message_.clear();
    controller_.encode_message(&message_);
    watchdog_.begin_negotiation();
    int mine = static_cast<int>(message_.size());
    std::vector<int> counts(rt_.size), displs(rt_.size);
    rc = MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, rt_.control);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allgather (negotiation)");
    int64_t total = 0;
    for (int r = 0; r < rt_.size; ++r) {
      displs[r] = static_cast<int>(total);
      total += counts[r];
    }
    if (total > INT32_MAX)
      return make_error(HVD_ERR_INTERNAL, "negotiation messages exceed 2 GiB in one round");
    gathered_.resize(static_cast<size_t>(total));
    rc = MPI_Allgatherv(message_.data(), mine, MPI_BYTE, gathered_.data(), counts.data(),
                        displs.data(), MPI_BYTE, rt_.control);
    watchdog_.end();
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allgatherv (negotiation)");
    err = controller_.apply_messages(gathered_, counts, displs);
    if (!err.ok()) return err;
    std::string tuned;
    if (controller_.take_tuning(&tuned)) apply_tuning(tuned);
  }
  const int64_t negotiate_ns = step_stats_ ? monotonic_ns() - negotiation_start : 0;

  for (auto& [blocked, why] : controller_.take_blocked_by_join()) complete(std::move(blocked), why);

  size_t ready_count = controller_.take_ready(&ready_);
  const bool ran_something = ready_count > 0;
  if (ran_something) {
    const Response& first = ready_[0];
    last_lone_identity_ =
        ready_count > 1
            ? 0
            : repeat_identity(first.name, TensorKeyRef(first.key, first.key_hash).hash, first.spec);
  }
  bool carried = false;  // the round's payload completed a tensor
  if (ready_count > 0) {
    const std::span<const Response> all(ready_.data(), ready_count);
    Timeline& timeline = process_timeline();
    if (timeline.enabled())
      for (const Response& r : all) timeline.negotiate_end(timeline_row(r.spec, r.name));
    if (step_stats_) observe_step(all);
    speculation_.observe(all, controller_.cache());
    const int done = speculating ? speculation_.completed_index(bits_result_.data() + words, all)
                                 : -1;
    if (done >= 0) {
      // The round carried the tensor's data: its time is that transfer's.
      if (step_stats_) step_stats().add_execute(0, negotiate_ns);
      carried = true;
      complete_speculated(ready_[static_cast<size_t>(done)],
                          bits_result_.data() + words + Speculation::kWords);
      // Out of the list, the others keeping their order (the same on every rank).
      std::rotate(ready_.begin() + done, ready_.begin() + done + 1,
                  ready_.begin() + static_cast<std::ptrdiff_t>(ready_count));
      --ready_count;
    }
  }
  if (step_stats_ && !carried) step_stats().add_negotiate(negotiate_ns);
  const std::span<const Response> ready(ready_.data(), ready_count);
  if (!ready.empty()) {
    Timeline& timeline = process_timeline();
    const std::vector<Batch>& batches = plan_memo_.plan(ready, fusion_);
    const bool watching = rt_.params.fuse_large == Params::AutoChoice::Auto;
    if (watching) layout_watch_.begin_round(ready.size());
    run_batches(ready, batches);
    if (watching) layout_watch_.end_round(ready);
    if (tuner_) observe_for_tuning(ready, batches);
    if (timeline.enabled())
      timeline.counters("traffic_bytes", static_cast<int64_t>(rt_.counters.local_bytes.load()),
                        static_cast<int64_t>(rt_.counters.cross_bytes.load()),
                        static_cast<int64_t>(rt_.counters.global_bytes.load()));
  }

  switch_cache();
  toggle_cache_for_tests();
  last_round_completed_ = completed_ != completed_before;

  *shutdown = flags.shutdown;
  bool progress = ran_something || flags.any_announcements;
  // Work waiting only on cached tensors needs another rank's enqueue to progress,
  // and that rank will ring: no round until then (a lone allreduce then costs one
  // round, not two).
  mode_ = !flags.any_busy || flags.only_cached ? Mode::Idle
          : progress                          ? Mode::Continue
                                              : Mode::Waiting;
  ++round_;
  last_round_end_ = now_seconds();
  if (early_delay >= 0) {
    int64_t delay = own_delay_.read(current_thread_id()) - early_delay;
    const int64_t caller_now = caller_delay >= 0 ? caller_delay_.read(caller) : -1;
    if (caller_now >= 0) delay += caller_now - caller_delay;
    burst_cap_.early_round(last_round_end_ - early_start, delay);
  }
  if (progress) last_progress_ = last_round_end_;
  return Error::success();
}

void BackgroundLoop::run() {
  prctl(PR_SET_TIMERSLACK, 1UL);  // short naps must be short
  Error pinned = pin_background_thread(rt_.pin);
  if (!pinned.ok()) HVD_LOG(Warning, "background thread pinning skipped: %s", pinned.message.c_str());
  // A GPU's transfers overlap the pushes whatever the CPUs: nothing to measure there.
  burst_cap_ = BurstCap(rt_.rounds_overlap_pushes, rt_.params.burst_cap_measure &&
                                                       rt_.gpu_device < 0 &&
                                                       own_delay_.read(current_thread_id()) >= 0);
  start_device();
  MPI_Irecv(&doorbell_value_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kDoorbellTag, rt_.control,
            &doorbell_request_);
  Error exit_reason = make_error(HVD_ERR_SHUT_DOWN, "libhvd was shut down");
  bool clean_shutdown = false;  // every rank left in the same shutdown round
  while (true) {
    wait_for_round();
    bool shutdown = false;
    Error err = run_round(&shutdown);
    if (!err.ok()) {
      watchdog_.end();  // the round stopped half-way: nothing is in flight any more
      HVD_LOG(Error, "background loop stopped: %s", err.message.c_str());
      exit_reason = err;
      break;
    }
    if (shutdown) {
      clean_shutdown = true;
      if (!rt_.shutdown_requested.load()) {
        // A rank that refused a call and exited: its reason is why this rank's call of
        // that name cannot run, the more useful half of the message.
        const std::string refusals = controller_.unmet_refusals(rt_.rank);
        exit_reason = make_error(HVD_ERR_SHUT_DOWN,
                                 "libhvd was shut down because another rank called hvd_shutdown "
                                 "(or exited)%s%s",
                                 refusals.empty() ? "" : "; before that, ", refusals.c_str());
      }
      break;
    }
  }
  if (tuner_ && tuner_->tuning()) tuner_->finish();  // the log ends with the best setting
  fail_everything(exit_reason);
  MPI_Cancel(&doorbell_request_);
  MPI_Wait(&doorbell_request_, MPI_STATUS_IGNORE);
  // Doorbells that arrived after the last round are received here, so the transport
  // holds no unmatched messages when the communicator is freed.
  int pending = 1;
  while (pending) {
    MPI_Iprobe(MPI_ANY_SOURCE, kDoorbellTag, rt_.control, &pending, MPI_STATUS_IGNORE);
    if (pending)
      MPI_Recv(&doorbell_value_, 1, MPI_INT64_T, MPI_ANY_SOURCE, kDoorbellTag, rt_.control,
               MPI_STATUS_IGNORE);
  }
  // The summary's gather needs every rank: only after a shutdown round, which all
  // ranks leave together (a round that failed, a rank that died, skips it), and with
  // bounded waits in case a rank was not asked for it.
  if (clean_shutdown && (rt_.params.summary || !rt_.params.summary_file.empty()))
    step_summary_at_shutdown(rt_.control, rt_.rank, rt_.size, rt_.params, 5.0);
  rt_.loop_exited.store(true);
}

}  // namespace hvd
