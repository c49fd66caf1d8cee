// Runs planned batches: fusion copies, the collective through a backend, scaling, and
// completion of the local requests. Every member of a batch's process set runs the
// same batches in the same order; a member without a local request (a joined rank)
// contributes zeros to allreduces.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "base/host_memory.h"
#include "negotiate/controller.h"
#include "execute/fusion_planner.h"
#include "adapt/layout_watch.h"
#include "params/params.h"
#include "fusion/fused_cursor.h"
#include "ops/backend.h"
#include "ops/hier/hier_allgather.h"
#include "ops/hier/hier_allreduce.h"
#include "timeline/timeline.h"

namespace hvd {

class DeviceEngine;

class Executor {
 public:
  // Completes a batch's local requests with one result (names released together).
  using Complete = std::function<void(std::span<Request* const> requests, const Error&)>;
  // Process-set changes and other runtime-level operations, run by the owner.
  using Admin = std::function<Error(const Response&, Request* local)>;

  Executor(Backend* host, ProcessSetTable* sets, TrafficCounters* counters, Complete complete,
           Admin admin)
      : host_(host), sets_(sets), counters_(counters), complete_(std::move(complete)),
        admin_(std::move(admin)) {}

  void run(const Batch& batch, const std::vector<Response>& responses, Controller& controller);

  // Hierarchical allreduce for the global set (nullptr: flat only). The choice is
  // made per round from parameters that are equal on every rank.
  void set_hierarchical(HierarchicalAllreduce* hier) { hier_ = hier; }
  void use_hierarchical(bool on) { use_hier_ = on; }
  // Whether this round's allreduces on the set go through the hierarchical algorithm.
  bool reduces_hierarchically(int32_t set_id) const {
    return use_hier_ && hier_ && set_id == 0 && hier_->useful();
  }
  void set_hierarchical_allgather(HierarchicalAllgather* hier) { hier_ag_ = hier; }
  void use_hierarchical_allgather(bool on) { use_hier_ag_ = on; }
  // Whether a fused host allreduce of this many bytes on a set goes through the
  // backend's scattered path (Backend::allreduce_scattered) where it has one; equal on
  // every rank.
  void set_fused_ring(std::function<bool(int32_t set_id, int64_t bytes)> fused_ring) {
    fused_ring_ = std::move(fused_ring);
  }
  // Where this rank's host allreduces lie, for the round's flags (nullptr: unwatched).
  void set_layout_watch(LayoutWatch* watch) { layout_watch_ = watch; }
  // The device engine (nullptr: none, and why_not says why device tensors fail).
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }
  void set_device(DeviceEngine* engine, std::string why_not) {
    device_ = engine;
    device_error_ = std::move(why_not);
  }
  // Step accounting: time spent in fusion copies and scaling passes on this thread
  // since the last take (0 while off).
  void time_copies(bool on) { time_copies_ = on; }
  int64_t take_copy_ns() {
    const int64_t ns = copy_ns_;
    copy_ns_ = 0;
    return ns;
  }

 private:
  Error dispatch(const Batch& batch, const std::vector<Response>& responses,
                 const std::vector<Request*>& locals, const ProcessSet& set);
  Error dispatch_device(const Batch& batch, const std::vector<Response>& responses,
                        const std::vector<Request*>& locals, const ProcessSet& set);
  Error allreduce_single(const Response& r, Request* local, const ProcessSet& set);
  // A set of one rank: copies and scaling only (execute_alone.cpp).
  Error allreduce_alone(const Batch& batch, const std::vector<Response>& responses,
                        const std::vector<Request*>& locals);
  Error allreduce_fused(const Batch& batch, const std::vector<Response>& responses,
                        const std::vector<Request*>& locals, const ProcessSet& set);
  // A fused batch reduced where its tensors are, by the backend's ring
  // (execute_ring.cpp); false in *taken when the batch does not go that way.
  Error allreduce_fused_ring(const Batch& batch, const std::vector<Response>& responses,
                             const std::vector<Request*>& locals, const ProcessSet& set,
                             bool* taken);
  Error allreduce_adasum(const Batch& batch, const std::vector<Response>& responses,
                         const std::vector<Request*>& locals, const ProcessSet& set);
  Error broadcast(const Response& r, Request* local, const ProcessSet& set);
  Error allgather(const Batch& batch, const std::vector<Response>& responses,
                  const std::vector<Request*>& locals, const ProcessSet& set);
  Error alltoall(const Response& r, Request* local, const ProcessSet& set);
  Error reducescatter(const Response& r, Request* local, const ProcessSet& set);
  Error reducescatter_fused(const Batch& batch, const std::vector<Response>& responses,
                            const std::vector<Request*>& locals, const ProcessSet& set);
  void* scratch(size_t bytes, bool zero);
  // Elements [offset, offset + n) of a fused batch's operand into the start of buffer
  // (prescaled; zeros for a member without a request, a joined rank), and back out of
  // it into the members' outputs (divided by divisor, postscaled). in and out walk the
  // batch's tensors; ranges come in increasing order.
  // The buffer holds wire elements (transport_dtype).
  void fill_fused(FusedCursor& in, const std::vector<Request*>& locals, const TensorSpec& spec,
                  hvd_dtype_t wire, unsigned char* buffer, int64_t offset, int64_t n);
  void drain_fused(FusedCursor& out, const std::vector<Request*>& locals, const TensorSpec& spec,
                   hvd_dtype_t wire, int divisor, const unsigned char* buffer, int64_t offset,
                   int64_t n);
  // Whether this round reduces (gathers) the set's tensors hierarchically: chosen for
  // the global set only, when the layout makes it useful.
  bool hierarchical_allreduce(const ProcessSet& set) const { return reduces_hierarchically(set.id); }
  bool hierarchical_allgather(const ProcessSet& set) const {
    return use_hier_ag_ && hier_ag_ && set.id == 0 && hier_ag_->useful();
  }
  // MEMCPY_* activities also count as copy time for step accounting.
  void activity_start(const char* activity);
  void activity_end();
  // Runs a copy, counting its time when step accounting is on.
  template <typename F>
  void timed_copy(F&& copy) {
    if (!time_copies_) {
      copy();
      return;
    }
    const int64_t start = monotonic_ns();
    copy();
    copy_ns_ += monotonic_ns() - start;
  }
  // recv = reduction of send over the set, flat or hierarchical.
  Error reduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype, hvd_reduce_op_t op,
               const ProcessSet& set);
  // Allgatherv over the set, flat or hierarchical.
  Error gather(const void* send, void* recv, const std::vector<int64_t>& counts,
               const std::vector<int64_t>& displs, hvd_dtype_t dtype, const ProcessSet& set);
  // At least `bytes` of the fusion buffer (what it held is not kept when it grows).
  unsigned char* fusion_buffer(size_t bytes);

  Backend* host_;
  ProcessSetTable* sets_;
  TrafficCounters* counters_;  // a set of one rank's allreduce counts without a backend
  Complete complete_;
  Admin admin_;
  HierarchicalAllreduce* hier_ = nullptr;
  bool use_hier_ = false;
  HierarchicalAllgather* hier_ag_ = nullptr;
  bool use_hier_ag_ = false;
  DeviceEngine* device_ = nullptr;
  Timeline* timeline_ = nullptr;
  std::vector<std::string> batch_keys_;  // the running batch's timeline rows
  bool tracing_ = false;                 // the timeline records this batch
  std::string device_error_ = "this rank has no usable GPU";
  HostBuffer fusion_buffer_;  // in huge pages: MPI moves it between ranks
  std::vector<int64_t> counts_;  // elements of each tensor of the fused batch being run
  // For each tensor of that batch: the first tensor of the run of in-place tensors,
  // back to back in memory, that it belongs to; -1 when it is in none.
  std::vector<int64_t> run_of_;
  void mark_contiguous_runs(const std::vector<Request*>& locals, size_t esize);
  // Where elements [offset, offset + n) of the fused batch (index_, run_of_) lie whole
  // in the caller's memory: in one run of in-place tensors, or in one tensor (reduced
  // out of place: its operand is copied into its output). The operand, prescaled, is
  // then ready there; nullptr elsewhere.
  unsigned char* locate_in_place(const std::vector<Request*>& locals, const TensorSpec& spec,
                                 int64_t offset, int64_t n);
  HostBuffer scratch_;
  std::function<bool(int32_t, int64_t)> fused_ring_;
  LayoutWatch* layout_watch_ = nullptr;
  FusedIndex index_;                        // the fused batch's tensors, for ranges in any order
  std::vector<unsigned char> ring_scaled_;  // a prescaled part, for accumulate
  // The running batch's local requests, by item (nullptr: none), and those of them
  // that were announced by name, moved here from the controller (the rest stay where
  // they waited: Controller::take_local_in_place). Capacity reused.
  std::vector<Request*> locals_;
  std::vector<Request*> completing_;  // the non-null locals_
  std::vector<Request> announced_;
  bool time_copies_ = false;
  int64_t copy_ns_ = 0;
  int64_t copy_started_ns_ = 0;  // an open MEMCPY_* activity, when timed
};

// Offsets of consecutive blocks of the given sizes (an exclusive prefix sum), as the
// v-variants of MPI and NCCL collectives take them.
std::vector<int64_t> displacements(const std::vector<int64_t>& counts);

// Elements of a reducescatter's input that each set rank receives: whole rows, the
// first dim0 % size ranks one row more than the others.
std::vector<int64_t> reducescatter_counts(const TensorSpec& spec, int size);

// What the transport reduces for a reduce op (AVERAGE is a SUM divided afterwards),
// and that divisor for a tensor of the set.
hvd_reduce_op_t transport_op(hvd_reduce_op_t op);
int divisor_of(const TensorSpec& spec, const ProcessSet& set);
// The dtype the transport sums an AVERAGE in: a wider integer for the integer dtypes
// whose sum would overflow (fusion/scale.h: average_wire_dtype); spec.dtype otherwise.
// A widened tensor always takes the fused path's copies (allreduce_fused), which
// convert on the way in and out.
hvd_dtype_t transport_dtype(const TensorSpec& spec, const ProcessSet& set);
// The timeline's words for a finished tensor, as Horovod writes them: its dtype
// ("HOROVOD_FLOAT32") and its output's shape on this rank ("[2, 3]"; allgather: all
// ranks' rows, reducescatter: this rank's block, alltoall: the rows received).
std::string horovod_dtype_label(hvd_dtype_t dtype);
std::string output_shape_text(const Response& r, const ProcessSet& set);
// A broadcast's root as a rank of its set: the spec carries the global rank, as the
// caller passed it (every rank validated it at enqueue).
Error broadcast_root(const Response& r, const ProcessSet& set, int* root);

// Output memory for results of negotiated size (allgather, alltoall): the request's
// allocator, else malloc (released by hvd_free). Never NULL for a successful return;
// zero bytes still give a valid pointer.
Error allocate_output(const Request& request, size_t bytes, void** out);

}  // namespace hvd
