#include "comm.h"

#include <cstdio>

namespace hvdbench {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

void max_over_ranks(std::vector<double>* values) {
  MPI_Allreduce(MPI_IN_PLACE, values->data(), static_cast<int>(values->size()), MPI_DOUBLE,
                MPI_MAX, MPI_COMM_WORLD);
}

int64_t sum_over_ranks(int64_t value) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return value;
}

void abort_job(const std::string& message) {
  std::fprintf(stderr, "hvd-bench (rank %d): %s\n", world_rank(), message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void check_hvd(hvd_status_t status, const char* what) {
  if (status == HVD_SUCCESS) return;
  abort_job(std::string(what) + " failed: " + hvd_status_string(status) + ": " + hvd_last_error());
}

Layout job_layout() {
  Layout layout;
  int counts[2] = {hvd_local_rank() == 0 ? 1 : 0, hvd_local_size()};
  MPI_Allreduce(MPI_IN_PLACE, &counts[0], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &counts[1], 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  layout.nodes = counts[0];
  layout.max_local = counts[1];
  char value[16] = "";
  if (hvd_param_get("HOROVOD_HIERARCHICAL_ALLREDUCE", value, sizeof value) == HVD_SUCCESS)
    layout.hierarchical_allreduce = std::string(value) == "1";
  return layout;
}

hvd_counters_t hvd_counters_now() {
  hvd_counters_t c{};
  c.struct_size = sizeof c;
  check_hvd(hvd_get_counters(&c), "hvd_get_counters");
  return c;
}

}  // namespace hvdbench
