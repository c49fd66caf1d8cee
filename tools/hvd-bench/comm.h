// The few MPI helpers the modes share. hvd-bench calls MPI from its main thread
// beside libhvd's background thread, so it starts MPI with MPI_THREAD_MULTIPLE
// before hvd_init.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include <hvd/hvd.h>

namespace hvdbench {

int world_rank();
int world_size();

// Element-wise maximum over ranks (a step lasts until its slowest rank finishes).
void max_over_ranks(std::vector<double>* values);
int64_t sum_over_ranks(int64_t value);

// Prints the message on this rank and aborts the whole job: for failures that leave
// the ranks out of step, where returning would hang the others.
[[noreturn]] void abort_job(const std::string& message);

// Where the ranks run, as libhvd sees it: nodes (ranks sharing memory form one),
// the most ranks on one node, and whether allreduce goes hierarchically. Collective:
// every rank calls it.
struct Layout {
  int nodes = 1;
  int max_local = 1;
  bool hierarchical_allreduce = false;
};
Layout job_layout();

// Checks a libhvd status; anything but success aborts with hvd_last_error().
void check_hvd(hvd_status_t status, const char* what);

// This rank's libhvd counters now (traffic, collectives, negotiation rounds).
hvd_counters_t hvd_counters_now();

}  // namespace hvdbench
