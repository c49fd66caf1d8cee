// The names in flight on this rank, interned. Each key (process set and name, as
// TensorQueue::key_of makes it) gets an entry that outlives its operation, so a
// tensor that comes back every step is found with one lookup when it is pushed and
// released with none (its request carries the entry), and the background thread
// keeps what it learned about the tensor (its response cache slot) in the entry
// instead of looking the key up again. Used under TensorQueue's lock, except the
// background thread's hint, which only that thread reads and writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "base/tensor_key.h"
#include "queue/node_pool.h"
#include "queue/request.h"

namespace hvd {

struct NameEntry {
  bool in_flight = false;
  // Forgotten when released: names libhvd made up (new every call), and every name
  // once the table holds kMaxKeptNames.
  bool transient = false;
  // The background thread's hint: the response cache slot last found for this key,
  // or -1, and the version of the response it held then (Response::version): valid
  // while the slot still holds that version, which no other put ever repeats.
  int32_t cache_slot = -1;
  uint64_t cache_version = 0;
  const TensorKey* key = nullptr;  // the table's key of this entry
  // The spec of the last push under this key, when that was a plain one (see
  // NameTable::remember): a call that repeats it exactly passed the API's checks
  // then and passes them again, so it is queued without them (acquire_repeat).
  bool repeat_valid = false;
  TensorSpec repeat;
  // The entry that the repeat push after this one took, the last time one followed it
  // on the same thread: a training step pushes its tensors in the same order every
  // step, so the next name is usually this entry's and is found without hashing it
  // (RepeatCursor). Only kept (non-transient) entries are linked: they live as long
  // as the table.
  NameEntry* next_repeat = nullptr;
};

// What a plain allreduce call says besides its name and buffers, compared with an
// entry's last push as it is (a repeat needs no TensorSpec built to be recognized).
struct RepeatCall {
  hvd_dtype_t dtype = HVD_FLOAT32;
  hvd_reduce_op_t op = HVD_OP_SUM;
  int64_t count = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  const int64_t* shape = nullptr;  // the caller's ndim dimensions; ndim 0: none given
  int32_t ndim = 0;
};

// A calling thread's place in its sequence of repeat pushes: the entry it took last,
// in the table of that serial (a table made later, by a new initialization, at the
// same address is not mistaken for it).
struct RepeatCursor {
  uint64_t table_serial = 0;
  NameEntry* last = nullptr;
};

class NameTable {
 public:
  NameTable();
  // The entry of (process_set, name), made if new, marked in flight; *key_hash gets
  // the key's hash. nullptr when the name is in flight already.
  NameEntry* acquire(int32_t process_set, const std::string& name, size_t* key_hash);
  bool in_flight(int32_t process_set, const std::string& name);
  // The entry of a global-set name whose last push was plain and said exactly what
  // this call says, marked in flight; nullptr when the name is unknown, in flight, or
  // its last push differed (the caller then takes the checked path). The entry that
  // followed *cursor's last time is tried before the name is looked up; *cursor then
  // moves to the entry taken.
  NameEntry* acquire_repeat(std::string_view name, const RepeatCall& call, RepeatCursor* cursor);
  // Whether a push of this spec, stream and allocator is plain: a host allreduce on the
  // global set, alone (not a group member), without a stream or an allocator. Only a
  // plain push is remembered, so only a plain call can repeat one.
  static bool plain(const TensorSpec& spec, const void* stream, hvd_allocator_fn allocator) {
    return spec.op == OpType::Allreduce && spec.group_size == 0 &&
           plain_placement(spec.device, spec.process_set, stream, allocator);
  }
  // The part of plain() a single allreduce's options decide, which the API checks
  // before any spec is built.
  static bool plain_placement(int32_t device, int32_t process_set, const void* stream,
                              hvd_allocator_fn allocator) {
    return device == HVD_DEVICE_CPU && process_set == 0 && !stream && !allocator;
  }
  // Remembers a request just acquired as its entry's repeat when it is plain (above).
  // Its spec then says everything the API checked.
  static void remember(const Request& request);
  // The operation is done: the name may be used again.
  void release(NameEntry* entry);
  void release(const TensorKeyRef& key);
  size_t size() const { return map_.size(); }

  // Kept names beyond this are forgotten when released, so a job that makes up new
  // names all the time holds only those in flight.
  static constexpr size_t kMaxKeptNames = 65536;

 private:
  const std::string& key_for(int32_t process_set, const std::string& name);
  void forget(NameEntry* entry);

  using Map = std::unordered_map<TensorKey, NameEntry, TensorKeyHash, TensorKeyEqual>;
  Map map_;
  NodePool<Map> spare_nodes_;
  std::string scratch_;  // the key of a name in a process set other than the global one
  const uint64_t serial_;  // unique per table made in this process (RepeatCursor)
};

}  // namespace hvd
