// Negotiation. Each round every rank contributes a bit vector (one bitwise AND over
// all ranks) and, only when some rank has tensors the response cache does not know,
// a message with their specs (one allgatherv). Every rank then derives the same list
// of ready Responses in the same order, without a coordinator broadcasting them.
//
// Bit vector layout (uint64 words, reduced with MPI_BAND):
// W is the cache capacity in words; 0 while the cache is off, when the vector is the
// flag word alone.
//   [0, W)    slot s set: this rank is ready to run cached response s (or is not in
//             its process set)
//   [W, 2W)   slot s clear: this rank found its spec differs from cached slot s
//   [2W, 3W)  slot s clear: this rank has a request waiting on slot s (inverted, so
//             that AND computes "no rank has one": joined ranks are ready for every
//             cached allreduce, but only a request makes it worth running)
//   [3W]      flag bits, inverted so that AND computes "no rank has ...":
//             bit 0: announcements pending, bit 1: busy, bit 2: shutdown requested,
//             bit 3 (not inverted): all pending work waits on cache slots
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/tensor_key.h"
#include "adapt/cache_churn.h"
#include "negotiate/announcements.h"
#include "queue/node_pool.h"
#include "queue/process_sets.h"
#include "queue/response.h"
#include "negotiate/response_cache.h"
#include "negotiate/wire.h"
#include "timeline/timeline.h"

namespace hvd {

struct RoundFlags {
  bool any_announcements = false;  // an allgatherv of messages follows
  bool any_busy = false;           // some rank had work: the next round follows soon
  bool shutdown = false;           // some rank asked to shut down
  bool cpus_free = false;          // every rank's CPUs are free for overlap (adapt/burst_cap.h)
  bool near_cores = false;         // no node's ranks on far cores (adapt/far_cores.h)
  // Every rank's large host allreduces lie back to back in memory (adapt/layout_watch.h).
  bool back_to_back = false;
  // Every rank's pending work is in the response cache: nothing can progress until
  // some rank enqueues more, and that rank rings the doorbells, so rounds can wait.
  bool only_cached = false;
};

// A rank's own judgements for the round's flags, each ANDed over the ranks.
struct RankWords {
  bool cpus_free = true;       // adapt/burst_cap.h
  bool near_cores = true;      // adapt/far_cores.h
  bool back_to_back = false;   // adapt/layout_watch.h
};

class Controller {
 public:
  Controller(int world_rank, int world_size, size_t cache_capacity, ProcessSetTable* sets);

  // Takes new local requests (already checked for duplicate names).
  void intake(std::vector<Request>&& requests);
  // Calls this rank refused (queue/request.h: Refusal): announced with this round's
  // messages. Every rank fails the tensor once each member of its set has announced
  // or refused it; a request that waits on the tensor's cache slot is announced by
  // name instead (the slot is invalidated), so it meets the refusal.
  void refuse(std::vector<Refusal>&& refusals);

  bool busy() const { return !pending_.empty() || waiting_count_ > 0; }
  bool has_unannounced() const { return !unannounced_.empty(); }

  size_t bit_words() const { return 3 * words_ + 1; }
  // stale_before: a local request that has waited on a cache slot since before this
  // time marks the slot invalid, so every rank drops it and announces the tensor by
  // name: the stall inspector then sees which ranks have not submitted it (the AND of
  // ready bits cannot say). Cheap for a healthy job: one announcement per long wait.
  // mine: this rank's words for the flags that are ANDed over the ranks.
  void fill_bits(uint64_t* words, bool shutdown_requested, double stale_before,
                 const RankWords& mine = {}) const;
  // Whether some local request has waited on a cache slot since before the time.
  bool has_cached_wait_before(double time) const;
  // Reads the ANDed vector: queues cached responses that every rank is ready for and
  // drops invalidated cache slots (their local requests are announced again).
  RoundFlags apply_bits(const uint64_t* words);

  // This rank's announcements (and, on the coordinator, its decisions).
  void encode_message(std::vector<uint8_t>* out);
  // Every rank's message, in world rank order. A corrupt message is an internal error.
  Error apply_messages(const std::vector<uint8_t>& data, const std::vector<int>& counts,
                       const std::vector<int>& displs);

  // Responses ready this round, in execution order (the same on every rank): swapped
  // with *out, whose first `returned count` elements are this round's. The elements
  // after them are stale; they are kept so that their memory is reused.
  size_t take_ready(std::vector<Response>* out);

  // The local request waiting on cache slot `slot` for that slot's tensor, else nullptr.
  const Request* find_local_on_slot(int slot) const;
  // Removes the local request of a response (to complete it); false if this rank has
  // none (not a member, or joined).
  bool take_local(const Response& response, Request* out);
  // The same without moving a request that waits on its cache slot: it leaves the slot
  // but stays in it, and the pointer is valid until the next intake (a batch runs and
  // completes within its round, before the next intake). One announced by name is
  // moved to the back of *announced, whose capacity the caller reserved for the batch
  // so that earlier pointers into it stay valid. nullptr if this rank has none.
  Request* take_local_in_place(const Response& response, std::vector<Request>* announced);
  // Every local request (shutdown).
  std::vector<Request> take_all_local();

  // Tensors announced by some but not all ranks, with the time first seen: the stall
  // inspector reads this. Coordinator decisions to fail one are queued here.
  using Stalled = StalledTensor;
  std::vector<Stalled> stalled(double older_than) const {
    return announcements_.stalled(older_than);
  }
  void decide_timeout(const Stalled& stalled, const std::string& message);
  // Other ranks' refusals no call of this rank has met (AnnouncementTable::unmet_refusals).
  std::string unmet_refusals(int my_rank) const { return announcements_.unmet_refusals(my_rank); }
  // Coordinator: decisions (timeouts, tuning) wait for the next round's messages.
  bool has_decisions() const { return !decisions_.empty(); }

  // "allreduce of 'a', 'b', broadcast of 'c'": this rank's pending requests, at most
  // max_names names (the operation watchdog's line for a stuck negotiation round).
  std::string describe_pending(size_t max_names) const;

  ResponseCache& cache() { return cache_; }

  // Turns the response cache on (empty, at the configured capacity) or off (dropped).
  // The bit vector's length follows, so every rank must call this with the same value
  // between the same two rounds, after the earlier round's ready responses have run:
  // the runtime does it when tuned parameters arrive. Requests that were waiting on a
  // dropped slot go back to announcements, so none is lost. Returns how many did.
  size_t set_cache_enabled(bool enabled);
  bool cache_enabled() const { return cache_enabled_; }

  // Coordinator: sends new tuned parameters with this round's messages.
  void send_tuning(const std::string& blob);
  // Every rank: tuned parameters that arrived in this round (from rank 0), if any.
  bool take_tuning(std::string* blob);

  // Where negotiation progress is recorded (may be nullptr).
  void set_timeline(Timeline* timeline) { announcements_.set_timeline(timeline); }

  // Local requests that can never run: a non-allreduce operation pending on a process
  // set with a joined rank (that rank will not submit it), cached or not. Completed by
  // the caller with the error. Announcements of such operations that could not complete
  // are dropped on every rank alike: ranks that name unnamed operations differently
  // after a join (one made a call the joined rank did not) never match them, and
  // waiting for the match would hang.
  std::vector<std::pair<Request, Error>> take_blocked_by_join();

  // A removed process set: forgets its cache slots and announcements and returns this
  // rank's pending requests on it. Deterministic: run at the same point on every rank.
  std::vector<Request> drop_process_set(int32_t id);

 private:
  struct Local {
    Request request;
    bool announced = false;
    double since = 0;       // when this rank took the request in
  };
  // The response cache slot of a request's key, or -1: the hint its name entry keeps
  // (queue/name_table.h) while the slot still holds the response found then, else a
  // lookup.
  int cached_slot(const Request& r);
  void add_response(Response&& response);
  void add_ready(const Response& response);
  void add_ready(Response&& response);
  void forget_slot(int slot);
  // The local request waiting on slot goes back to announcements (its slot is about to
  // be dropped or reused); none: nothing to do.
  void stop_waiting(int slot);
  bool waiting_on(int slot) const { return waiting_bits_[slot / 64] >> (slot % 64) & 1; }
  Local take_waiting(int slot);
  void release_slot(int slot);  // marks slot free; its Local is then moved out
  // The slot where the local request of a response waits, or -1 (announced, or none).
  int local_slot(const Response& response) const;
  // Keeps a request by key; returns the key.
  const std::string& add_pending(Local&& local);
  // Queues the tensors the announcement table completed (completed_), in its order:
  // into the response cache where they may be kept, then ready.
  void queue_completed();
  bool joined_locally() const;

  int world_rank_;
  int world_size_;
  size_t cache_capacity_;  // as configured; the cache holds it while enabled
  bool cache_enabled_;
  size_t words_;
  ProcessSetTable* sets_;
  ResponseCache cache_;
  CacheChurn churn_;  // says when steps cycle through more tensors than cache_ holds
  // Local requests are pending in one of two places. Those the response cache knows
  // wait on their slot: waiting_[slot], one at most per slot (a name is in flight once),
  // found by slot without a lookup: in steady state every tensor of a step. The rest
  // (announced by name) are kept by key. Nodes of completed requests are kept for
  // reuse: a node and a key allocation per tensor were a measurable share of a small
  // tensor's cost.
  using PendingMap = std::unordered_map<TensorKey, Local, TensorKeyHash, TensorKeyEqual>;
  PendingMap pending_;
  NodePool<PendingMap> spare_pending_;
  std::vector<Local> waiting_;          // by cache slot
  std::vector<uint64_t> waiting_bits_;  // slots with a local request waiting, 64 a word
  size_t waiting_count_ = 0;
  std::string scratch_key_;  // a key in a process set other than the global one
  std::vector<std::string> unannounced_;   // keys, in enqueue order
  std::vector<int> invalid_slots_;
  // What every rank announced by name, and the tensors that completed from it (their
  // capacity reused).
  AnnouncementTable announcements_;
  std::vector<Completed> completed_;
  std::vector<WireEntry> decisions_;       // coordinator's timeouts and tuning to send
  // Calls this rank refused, sent first in the message: before any call under the
  // same name that followed them.
  std::vector<WireEntry> refusals_;
  std::vector<Response> ready_;  // [0, ready_count_) ready; the rest stale, for reuse
  size_t ready_count_ = 0;
  std::string tuning_received_;
  bool has_tuning_ = false;
};

}  // namespace hvd
