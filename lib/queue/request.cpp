#include "queue/request.h"

#include <chrono>
#include <string_view>

namespace hvd {

const char* op_type_name(OpType op) {
  switch (op) {
    case OpType::Allreduce: return "allreduce";
    case OpType::Broadcast: return "broadcast";
    case OpType::Allgather: return "allgather";
    case OpType::Alltoall: return "alltoall";
    case OpType::Reducescatter: return "reducescatter";
    case OpType::Barrier: return "barrier";
    case OpType::Join: return "join";
    case OpType::ProcessSetAdd: return "add_process_set";
    case OpType::ProcessSetRemove: return "remove_process_set";
  }
  return "unknown";
}

const char* op_type_label(OpType op) {
  switch (op) {
    case OpType::Allreduce: return "ALLREDUCE";
    case OpType::Broadcast: return "BROADCAST";
    case OpType::Allgather: return "ALLGATHER";
    case OpType::Alltoall: return "ALLTOALL";
    case OpType::Reducescatter: return "REDUCESCATTER";
    case OpType::Barrier: return "BARRIER";
    case OpType::Join: return "JOIN";
    case OpType::ProcessSetAdd: return "ADD_PROCESS_SET";
    case OpType::ProcessSetRemove: return "REMOVE_PROCESS_SET";
  }
  return "UNKNOWN";
}

std::string timeline_row(const TensorSpec& spec, const std::string& name) {
  std::string row;
  switch (spec.op) {
    case OpType::Allreduce:
    case OpType::Broadcast:
    case OpType::Allgather:
    case OpType::Alltoall:
    case OpType::Reducescatter: {
      const std::string_view prefix = op_type_name(spec.op);
      const bool prefixed = name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
                            name[prefix.size()] == '.';
      if (!prefixed) row.append(prefix).push_back('.');
      break;
    }
    default:  // barrier, join, process set changes: their reserved names say it
      break;
  }
  row += name;
  if (spec.process_set != 0) row += " (process set " + std::to_string(spec.process_set) + ")";
  return row;
}

int64_t TensorSpec::row_elements() const {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

int64_t TensorSpec::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return shape.empty() ? 0 : n;
}

size_t repeat_identity(const std::string& name, size_t key_hash, const TensorSpec& spec) {
  if (name.find(kAutoNameInfix) == std::string::npos) return key_hash ? key_hash : 1;
  // A metric or loss averaged without a name: the same call every step.
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  uint64_t h = kMul;
  for (uint64_t part : {static_cast<uint64_t>(spec.op), static_cast<uint64_t>(spec.dtype),
                        static_cast<uint64_t>(spec.reduce_op),
                        static_cast<uint64_t>(spec.num_elements()),
                        static_cast<uint64_t>(static_cast<uint32_t>(spec.process_set))}) {
    h = (h ^ part) * kMul;
    h ^= h >> 29;
  }
  return static_cast<size_t>(h | 1);
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int64_t monotonic_ns() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace hvd
