#include "core/request.h"

#include <chrono>

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

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace hvd
