// The process-wide runtime: communicators, topology, the queue, the handles and the
// background thread. Created by hvd_init, destroyed by hvd_shutdown; user threads
// hold a shared_ptr to it for the length of one call.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <mpi.h>

#include "queue/handles.h"
#include "params/params.h"
#include "queue/process_sets.h"
#include "queue/tensor_queue.h"
#include "ops/backend.h"
#include "topo/pin.h"

namespace hvd {

class BackgroundLoop;

struct Runtime {
  Params params;
  MPI_Comm world = MPI_COMM_NULL;    // duplicate of the communicator given at init
  MPI_Comm control = MPI_COMM_NULL;  // negotiation rounds and doorbells
  MPI_Comm local = MPI_COMM_NULL;    // ranks on this node
  MPI_Comm cross = MPI_COMM_NULL;    // ranks with this local rank, one per node
  int rank = -1, size = -1;
  int local_rank = -1, local_size = -1;
  int cross_rank = -1, cross_size = -1;
  bool homogeneous = true;
  int num_nodes = 1;          // equal on every rank
  int max_local_size = 1;     // equal on every rank
  int64_t speculative_bytes = 0;  // HVD_SPECULATIVE_BYTES, the smallest over the ranks
  // Every rank asked for the step summary: batches wait for their last rank at a
  // barrier, timed apart from the transfer (BackgroundLoop::await_arrivals).
  bool await_arrivals = false;
  std::vector<int> node_of;        // world rank -> node index (its leader's cross rank)
  std::vector<int> local_rank_of;  // world rank -> local rank
  int gpu_device = -1;
  PinResult pin;  // GPU and CPU placement chosen at init
  // The placement's judgement that a round's transfers can overlap the caller's next
  // pushes: the background thread has a CPU of its own (at least two CPUs for this
  // rank, cpus_per_rank, counted on the thread that called hvd_init), or a GPU does the
  // transfers (NCCL) while the caller goes on (a backward pass's hooks push gradients
  // as fast as the CPU walks the graph, ahead of the GPU). The burst cap starts from
  // it and, without a GPU, measures (adapt/burst_cap.h).
  bool rounds_overlap_pushes = true;
  // No rank shares its CPUs with another rank (cpus_per_rank >= 1 on every rank; the
  // same on every rank). A ring's steps each wait for a neighbour, and on oversubscribed
  // CPUs each wait can cost a scheduler slice (1,000 x 4 KB at 3 ranks on 2 cores:
  // 63 ms a step against 20 through MPI_Allreduce).
  bool every_rank_has_a_cpu = true;

  ProcessSetTable sets;
  TensorQueue queue;
  TrafficCounters counters;
  std::atomic<uint64_t> rounds{0};
  std::atomic<uint64_t> speculated{0};  // allreduces completed in their negotiation round
  // Automatic names count per process set: the ranks of a set make the same sequence
  // of calls on it, whatever they do on other sets.
  std::mutex auto_name_mutex;
  std::unordered_map<int32_t, int64_t> auto_name_counters;

  std::atomic<bool> shutdown_requested{false};
  std::atomic<bool> loop_exited{false};
  std::unique_ptr<BackgroundLoop> loop;
  std::thread thread;

  ~Runtime();
  void free_comms();  // after the background thread has ended
};

// The initialized runtime or nullptr. Cheap; safe from any thread. nullptr in the
// child of a fork() taken after init (see runtime.cpp).
std::shared_ptr<Runtime> current_runtime();
bool in_forked_child();
// In the child of a fork() taken after init: the parent's runtime as it was at the
// fork, for its topology alone (rank, sizes: plain values the fork copied); nullptr
// elsewhere. Nothing in it may be used to communicate.
const Runtime* forked_parent_runtime();
// HVD_ERR_NOT_INITIALIZED for function in such a child, saying why and what to do.
Error forked_child_error(const char* function);

// comm == MPI_COMM_NULL means MPI_COMM_WORLD (initializing MPI if needed).
// static_sets_invalid: what was wrong with this rank's static_sets (or success); init
// still meets the other ranks, so that it fails on all of them rather than leaving
// them waiting in its collectives (runtime/init_agreement.h).
Error runtime_init(MPI_Comm comm, const std::vector<std::vector<int>>& static_sets,
                   const Error& static_sets_invalid = Error::success());
Error runtime_shutdown();

}  // namespace hvd
