#include "ops/mpi/negotiation_op.h"

#include <map>
#include <mutex>

#include "base/dtype.h"
#include "ops/mpi/mpi_types.h"

namespace hvd {

namespace {

NegotiationLayout g_layout;  // of the allreduce in flight (read by the reduction)
MPI_Op g_op = MPI_OP_NULL;
std::map<int64_t, MPI_Datatype> g_types;  // by byte length
std::mutex g_mutex;  // init and free only: rounds come from one thread

void reduce_negotiation(void* in, void* inout, int* len, MPI_Datatype*) {
  const NegotiationLayout& l = g_layout;
  const int64_t bytes = l.words * 8 + l.count * static_cast<int64_t>(dtype_size(l.dtype));
  for (int e = 0; e < *len; ++e) {
    auto* a = static_cast<unsigned char*>(in) + e * bytes;
    auto* b = static_cast<unsigned char*>(inout) + e * bytes;
    const uint64_t* wa = reinterpret_cast<const uint64_t*>(a);
    uint64_t* wb = reinterpret_cast<uint64_t*>(b);
    for (int64_t w = 0; w < l.words; ++w) wb[w] &= wa[w];
    reduce_elements(a + l.words * 8, b + l.words * 8, l.count, l.dtype, l.op);
  }
}

}  // namespace

void negotiation_op_for(const NegotiationLayout& layout, MPI_Op* op, MPI_Datatype* type) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_op == MPI_OP_NULL) MPI_Op_create(reduce_negotiation, 1, &g_op);
  const int64_t bytes = layout.words * 8 + layout.count * static_cast<int64_t>(dtype_size(layout.dtype));
  auto it = g_types.find(bytes);
  if (it == g_types.end()) {
    MPI_Datatype t;
    MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &t);
    MPI_Type_commit(&t);
    it = g_types.emplace(bytes, t).first;
  }
  g_layout = layout;
  *op = g_op;
  *type = it->second;
}

void negotiation_op_free() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_op != MPI_OP_NULL) MPI_Op_free(&g_op);
  for (auto& [bytes, t] : g_types) MPI_Type_free(&t);
  g_types.clear();
}

}  // namespace hvd
