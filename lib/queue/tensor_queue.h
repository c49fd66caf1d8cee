// The tensor queue: user threads push requests, the background thread drains them.
// It also owns the set of names in flight on this rank (HVD_ERR_DUPLICATE_NAME) and
// the wake-up of the background thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/tensor_key.h"
#include "queue/name_table.h"
#include "queue/request.h"

namespace hvd {

class TensorQueue {
 public:
  // Pushes all requests or none: a name in flight (or repeated within the batch)
  // fails the whole push with HVD_ERR_DUPLICATE_NAME; after close(), HVD_ERR_SHUT_DOWN.
  Error push(std::vector<Request>&& requests);
  // The same for a single request (the common case: no vector to allocate).
  // spare_name: the caller's storage for its next name; when it holds no memory of its
  // own, it gets the string of a released name, so that naming a tensor allocates
  // nothing in steady state.
  Error push(Request&& request, std::string* spare_name = nullptr);
  // A repeat of the last push under a global-set name (NameEntry::repeat), queued with
  // these buffers and handle: true when queued; false, with nothing queued, when the
  // name is unknown or in flight, its last push differed from the call or was not
  // plain, or the queue is closed (the caller then builds and pushes the request, which
  // reports why). The calling thread's last repeat predicts the entry (RepeatCursor).
  bool push_repeat(std::string_view name, const RepeatCall& call, const void* send, void* recv,
                   HandleState* handle, double enqueue_time);

  // Moves every queued request into *out and every refusal into *refused (appending),
  // under one lock: a refusal is announced no later than a call pushed after it.
  void drain(std::vector<Request>* out, std::vector<Refusal>* refused);
  // Moves only the refusals: for a round that takes no requests (see
  // BackgroundLoop::let_burst_finish). Requests stay queued and flushable, and the
  // queue stays signalled while any is.
  void drain_refusals(std::vector<Refusal>* refused);
  // A call refused on this rank, for the background thread to announce (it is woken);
  // dropped after close() or while the name is in flight here. Holds no name: the
  // caller may call again under it at once.
  void push_refusal(Refusal&& refusal);

  // Called when an operation completes: its name may be used again.
  void release_name(Request& completed);
  void release_name(const std::string& key);
  // The same for several, under one lock. Their name strings are kept for push's
  // spare_name (the requests' names are left empty).
  void release_names(std::span<Request* const> completed);

  // Sleeps until something is pushed, poke() is called, or timeout_us passes.
  // Returns true if there was something to do (queue non-empty or poked).
  bool wait(int64_t timeout_us);
  void poke();
  // Lock-free check for the background thread's short spin: true when wait() would
  // return at once.
  bool ready() const { return signalled_.load(std::memory_order_acquire); }
  // Requests pushed since the last drain; with only_identity, also the
  // repeat_identity (queue/request.h) of the only one (0 when there are none or several).
  size_t queued(size_t* only_identity = nullptr);

  // Drains so far. A request pushed when this was g is still queued while it is g
  // (push records it in the request's handle: HandleState::queued_at).
  uint64_t drains() const { return drains_.load(std::memory_order_acquire); }
  // A caller waits for an operation queued at drain count `queued_at`: while it is
  // still queued, the background thread's burst wait ends at once (nap_unless_flushed),
  // since a caller that waits has finished its burst.
  void flush(uint64_t queued_at);
  // The burst wait's nap: sleeps up to timeout_us, or until flush() for the queued
  // requests; returns true if flushed. Pushes do not end it (each would wake it).
  bool nap_unless_flushed(int64_t timeout_us);

  // The kernel's id of the thread that pushed the first request now queued (or, when
  // none is, the last burst's first), for the burst cap's measurement
  // (adapt/burst_cap.h); 0: nothing pushed yet.
  int last_pusher() const { return pusher_.load(std::memory_order_relaxed); }

  // Rejects further pushes with HVD_ERR_SHUT_DOWN; drain() still returns what is left.
  void close(const std::string& reason);
  bool empty();

  static std::string key_of(int32_t process_set, const std::string& name);
  // The same into *out, reusing its capacity.
  static void key_into(int32_t process_set, const std::string& name, std::string* out);

 private:
  std::atomic<int> pusher_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Request> queue_;
  std::vector<Refusal> refusals_;
  // Marks a request's name in flight with one lookup and sets its key_hash and
  // name_entry; false if it is in flight already.
  bool acquire_name(Request& request);
  void release_locked(Request& request);
  // Moves every refusal into *refused and clears the poke (mutex_ held).
  void take_refusals_locked(std::vector<Refusal>* refused);
  // Under mutex_, before a request joins queue_: records when it was queued and who
  // pushed first; true when the caller must notify cv_ (see wake_locked).
  bool note_push_locked(HandleState* handle);
  // Under mutex_: true when the caller must notify cv_ (the background thread sleeps
  // and was not woken yet; it counts as woken from here on).
  bool wake_locked();

  NameTable names_;
  std::vector<std::string> spare_names_;  // released names' strings, for reuse
  bool poked_ = false;
  bool sleeping_ = false;  // the background thread waits on cv_, and nobody woke it yet
  std::condition_variable flush_cv_;
  std::atomic<uint64_t> drains_{0};  // written under mutex_
  bool flushed_ = false;   // a caller waits for the queued requests (drain clears it)
  bool napping_ = false;   // the background thread waits on flush_cv_
  std::atomic<bool> signalled_{false};  // queue non-empty or poked
  bool closed_ = false;
  std::string close_reason_;
};

}  // namespace hvd
