#include "queue/tensor_queue.h"

#include "topo/run_delay.h"

#include <chrono>

namespace hvd {

std::string TensorQueue::key_of(int32_t process_set, const std::string& name) {
  std::string key;
  key_into(process_set, name, &key);
  return key;
}

void TensorQueue::key_into(int32_t process_set, const std::string& name, std::string* out) {
  if (process_set == 0) {
    out->assign(name);
    return;
  }
  out->assign(std::to_string(process_set));
  out->push_back('\x1f');
  out->append(name);
}

namespace {
Error name_in_flight(const std::string& name) {
  return make_error(HVD_ERR_DUPLICATE_NAME,
                    "a tensor named '%s' is already in flight on this rank; wait for its "
                    "handle before reusing the name, or give this one another name",
                    name.c_str());
}
}  // namespace

Error TensorQueue::push(std::vector<Request>&& requests) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return make_error(HVD_ERR_SHUT_DOWN, "%s", close_reason_.c_str());
    // Each name taken in turn: one that is in flight, before or within this call,
    // gives back those taken so far, so nothing of the call is queued. (Compared with
    // the earlier members instead, a grouped call of a thousand tensors cost
    // 20,000 instructions a member.)
    for (size_t i = 0; i < requests.size(); ++i) {
      if (acquire_name(requests[i])) continue;
      for (size_t j = 0; j < i; ++j) release_locked(requests[j]);
      return name_in_flight(requests[i].name);
    }
    bool notify = false;
    for (Request& r : requests) {
      NameTable::remember(r);
      notify = note_push_locked(r.handle) || notify;
      queue_.push_back(std::move(r));
    }
    if (!notify) return Error::success();
  }
  cv_.notify_one();
  return Error::success();
}

namespace {
// Released name strings kept for reuse: enough for a large model's step of tensors
// pushed one by one (grouped pushes do not take them back).
constexpr size_t kMaxSpareNames = 4096;
// The capacity of a string that holds no memory of its own.
const size_t kInlineCapacity = std::string().capacity();
}  // namespace

Error TensorQueue::push(Request&& request, std::string* spare_name) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return make_error(HVD_ERR_SHUT_DOWN, "%s", close_reason_.c_str());
    if (!acquire_name(request))
      return name_in_flight(request.name);
    NameTable::remember(request);
    const bool notify = note_push_locked(request.handle);
    queue_.push_back(std::move(request));
    if (spare_name && spare_name->capacity() <= kInlineCapacity && !spare_names_.empty()) {
      spare_name->swap(spare_names_.back());
      spare_names_.pop_back();
    }
    if (!notify) return Error::success();
  }
  cv_.notify_one();
  return Error::success();
}

namespace {
// Each pushing thread's own sequence: two threads pushing in turn would only make each
// other's predictions miss.
thread_local RepeatCursor t_repeat_cursor;
}  // namespace

bool TensorQueue::push_repeat(std::string_view name, const RepeatCall& call, const void* send,
                              void* recv, HandleState* handle, double enqueue_time) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return false;
    NameEntry* entry = names_.acquire_repeat(name, call, &t_repeat_cursor);
    if (!entry) return false;
    const bool notify = note_push_locked(handle);
    // Built where it is queued: no request to move, and the name's string reuses a
    // released name's memory.
    Request& r = queue_.emplace_back();
    if (!spare_names_.empty()) {
      r.name = std::move(spare_names_.back());
      spare_names_.pop_back();
    }
    r.name.assign(name);
    r.spec = entry->repeat;
    r.send = send;
    r.recv = recv;
    r.handle = handle;
    r.enqueue_time = enqueue_time;
    r.key_hash = entry->key->hash;
    r.name_entry = entry;
    if (!notify) return true;
  }
  cv_.notify_one();
  return true;
}

bool TensorQueue::note_push_locked(HandleState* handle) {
  if (handle) handle->set_queued_at(drains_.load(std::memory_order_relaxed));
  // A burst's first push names its thread (a thread-local read per burst, not per push).
  if (queue_.empty()) pusher_.store(current_thread_id(), std::memory_order_relaxed);
  signalled_.store(true, std::memory_order_release);
  return wake_locked();
}

bool TensorQueue::wake_locked() {
  // Wake the background thread only if it sleeps, and once: a futex call per tensor
  // is a measurable share of a small tensor's cost, and where the thread does not get
  // a CPU at once (two ranks' threads on two cores) it would otherwise be woken again
  // by every push until it runs. It sets sleeping_ again before its next sleep.
  if (!sleeping_) return false;
  sleeping_ = false;
  return true;
}

bool TensorQueue::acquire_name(Request& request) {
  request.name_entry = names_.acquire(request.spec.process_set, request.name, &request.key_hash);
  return request.name_entry != nullptr;
}

void TensorQueue::release_locked(Request& r) {
  if (r.name_entry) {
    names_.release(r.name_entry);
    r.name_entry = nullptr;
  } else if (r.spec.process_set == 0) {
    names_.release(TensorKeyRef(r.name, r.key_hash));
  } else {
    names_.release(TensorKeyRef(key_of(r.spec.process_set, r.name), r.key_hash));
  }
}

void TensorQueue::take_refusals_locked(std::vector<Refusal>* refused) {
  for (Refusal& r : refusals_) refused->push_back(std::move(r));
  refusals_.clear();
  poked_ = false;  // the round now starting carries whatever the poke was for
}

void TensorQueue::drain(std::vector<Request>* out, std::vector<Refusal>* refused) {
  std::lock_guard<std::mutex> lock(mutex_);
  take_refusals_locked(refused);
  flushed_ = false;
  drains_.fetch_add(1, std::memory_order_release);
  signalled_.store(false, std::memory_order_release);
  if (out->empty()) {
    out->swap(queue_);  // both vectors keep their capacity for the next rounds
    return;
  }
  for (Request& r : queue_) out->push_back(std::move(r));
  queue_.clear();
}

void TensorQueue::drain_refusals(std::vector<Refusal>* refused) {
  std::lock_guard<std::mutex> lock(mutex_);
  take_refusals_locked(refused);
  signalled_.store(!queue_.empty(), std::memory_order_release);
}

void TensorQueue::push_refusal(Refusal&& refusal) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A call under a name already in flight here would have been refused as a
    // duplicate: the call in flight is the one the peers match.
    if (closed_ || names_.in_flight(refusal.process_set, refusal.name)) return;
    refusals_.push_back(std::move(refusal));
    poked_ = true;  // a round must carry it even if nothing else is queued
    signalled_.store(true, std::memory_order_release);
  }
  cv_.notify_one();
}

void TensorQueue::release_name(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  names_.release(TensorKeyRef(key, 0));
}

void TensorQueue::release_name(Request& completed) {
  std::lock_guard<std::mutex> lock(mutex_);
  release_locked(completed);
}

void TensorQueue::release_names(std::span<Request* const> completed) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Request* r : completed) {
    release_locked(*r);
    if (r->name.capacity() > kInlineCapacity && spare_names_.size() < kMaxSpareNames) {
      spare_names_.push_back(std::move(r->name));
      r->name.clear();
    }
  }
}

bool TensorQueue::wait(int64_t timeout_us) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!queue_.empty() || poked_) return true;
  if (timeout_us <= 0) return false;
  sleeping_ = true;
  cv_.wait_for(lock, std::chrono::microseconds(timeout_us),
               [&] { return !queue_.empty() || poked_; });
  sleeping_ = false;
  return !queue_.empty() || poked_;
}

void TensorQueue::flush(uint64_t queued_at) {
  if (drains() != queued_at) return;  // taken already: nothing to hurry
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (drains_.load(std::memory_order_relaxed) != queued_at || flushed_) return;
    flushed_ = true;
    if (!napping_) return;
  }
  flush_cv_.notify_one();
}

bool TensorQueue::nap_unless_flushed(int64_t timeout_us) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (flushed_) return true;
  napping_ = true;
  flush_cv_.wait_for(lock, std::chrono::microseconds(timeout_us), [&] { return flushed_; });
  napping_ = false;
  return flushed_;
}

void TensorQueue::poke() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    poked_ = true;
    signalled_.store(true, std::memory_order_release);
  }
  cv_.notify_one();
}

void TensorQueue::close(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  close_reason_ = reason;
}

size_t TensorQueue::queued(size_t* only_identity) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (only_identity) {
    const Request* only = queue_.size() == 1 ? &queue_.front() : nullptr;
    *only_identity = only ? repeat_identity(only->name, only->key_hash, only->spec) : 0;
  }
  return queue_.size();
}

bool TensorQueue::empty() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty();
}

}  // namespace hvd
