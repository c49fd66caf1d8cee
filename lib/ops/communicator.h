// What a backend needs of a process set: its MPI communicator and this rank's place
// in it. Core's ProcessSet produces one by value (ProcessSet::communicator()), so ops
// never see process sets.
#pragma once

#include <cstdint>

#include <mpi.h>

namespace hvd {

struct Communicator {
  int32_t id = 0;                // the process set's id; backends key their own communicators by it
  MPI_Comm mpi = MPI_COMM_NULL;  // MPI_COMM_NULL on non-members
  int rank = -1;                 // this rank's rank in it; -1 on non-members
  int size = 0;

  bool member() const { return rank >= 0; }
};

}  // namespace hvd
