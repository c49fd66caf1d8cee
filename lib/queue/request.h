// What a rank asks for: a named tensor operation (Request, local) and the part of it
// that every rank must agree on (TensorSpec, sent to the peers during negotiation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/dims.h"
#include "queue/handles.h"
#include "hvd/hvd.h"

namespace hvd {

struct NameEntry;  // queue/name_table.h

enum class OpType : uint8_t {
  Allreduce = 0,
  Broadcast,
  Allgather,
  Alltoall,
  Reducescatter,
  Barrier,
  Join,
  ProcessSetAdd,     // shape: the member ranks
  ProcessSetRemove,  // root: the set id
};
constexpr int kNumOpTypes = static_cast<int>(OpType::ProcessSetRemove) + 1;
const char* op_type_name(OpType op);
// The name in capitals, as the timeline shows it ("ALLREDUCE").
const char* op_type_label(OpType op);

struct TensorSpec {
  OpType op = OpType::Allreduce;
  hvd_dtype_t dtype = HVD_FLOAT32;
  hvd_reduce_op_t reduce_op = HVD_OP_SUM;
  int32_t root = -1;         // broadcast: root's global rank (a member of the set)
  int32_t device = HVD_DEVICE_CPU;
  int32_t process_set = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t group_size = 0;    // grouped allreduce: tensors in the group, else 0
  Dims shape;                    // allreduce/broadcast: the caller's shape, or {count}
  // Allreduce/broadcast: shape is the caller's (compared across the ranks that gave
  // one) rather than {count} (compared by its element count only).
  bool shape_given = false;
  std::vector<int64_t> splits;  // alltoall: rows this rank sends to each set rank

  int64_t num_elements() const;
  // Elements per row: the product of every dimension after the first.
  int64_t row_elements() const;
  bool operator==(const TensorSpec& other) const = default;
};

struct Request {
  std::string name;
  TensorSpec spec;
  const void* send = nullptr;
  void* recv = nullptr;
  // Outputs of unknown size (allgather, alltoall) and the caller's per-rank outputs.
  void** out_buffer = nullptr;
  int64_t* out_dim0 = nullptr;
  int64_t* out_per_rank = nullptr;
  // Join: the last rank to join; ProcessSetAdd: the new set's id. Points into the
  // blocked caller's frame.
  int64_t* out_value = nullptr;
  hvd_allocator_fn allocator = nullptr;
  void* allocator_data = nullptr;
  void* stream = nullptr;
  HandleState* handle = nullptr;  // pooled; valid until the handle is waited for
  double enqueue_time = 0;  // seconds, monotonic
  // hash_key of the request's key (process set and name), set when it is queued;
  // 0 until then.
  size_t key_hash = 0;
  // The name's entry in the queue's table of names (queue/name_table.h), set when it is
  // queued; released when the operation completes.
  NameEntry* name_entry = nullptr;
};

// A call this rank refused (a bad argument) after its name and process set were
// known. The set's other ranks made, or will make, the same call and would wait for
// this rank's tensor for ever; the refusal is announced to them instead, and the
// tensor fails on every rank with this rank's message (Controller::refuse).
struct Refusal {
  std::string name;
  OpType op = OpType::Allreduce;
  int32_t process_set = 0;
  int32_t group_size = 0;  // a grouped call's member: the group's tensor count
  std::string message;     // why this rank refused it
};

// Names libhvd gives unnamed calls: "<op>.noname.<n>", n counting per process set
// (Horovod's form), so a new name every call.
inline constexpr const char* kAutoNameInfix = ".noname.";

// What the burst wait compares to tell a call repeated alone (runtime/background.cpp):
// the tensor's key hash, or for a name libhvd made up (new every call) the kind of
// call: operation, element type, reduction, element count and process set. Never 0.
size_t repeat_identity(const std::string& name, size_t key_hash, const TensorSpec& spec);

double now_seconds();
int64_t monotonic_ns();  // the clock of now_seconds, in nanoseconds

// The tensor's row in the timeline, named as Horovod names its rows: the operation,
// a dot and the tensor's name ("allreduce.grad.0"; names that already start so, as
// automatic ones do, are kept), and for a process set other than the global one its
// id in words ("allreduce.pair.sum (process set 1)").
std::string timeline_row(const TensorSpec& spec, const std::string& name);

}  // namespace hvd
