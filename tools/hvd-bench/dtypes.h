// Element types of the sweep: their libhvd and MPI names, and element access through
// double, which holds every value the correctness check uses exactly.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include <hvd/hvd.h>

namespace hvdbench {

struct Dtype {
  const char* name;      // as in nccl-tests: float, double, half, bfloat16, int32, ...
  hvd_dtype_t hvd;
  MPI_Datatype mpi;      // MPI_DATATYPE_NULL when MPI has no such type (half, bfloat16)
  size_t size;
  bool is_float;
  double (*load)(const void* data, size_t index);
  void (*store)(void* data, size_t index, double value);
};

// nullptr for an unknown name.
const Dtype* find_dtype(const std::string& name);
// "float, double, ..." for messages.
std::string dtype_names();

}  // namespace hvdbench
