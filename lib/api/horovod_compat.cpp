// Exported: the C entry points that Horovod's Python front end (HorovodBasics, loaded
// with ctypes) calls, mapped onto the hvd_* API, so that front end can drive libhvd.
// Horovod's conventions are kept: int results (1/0 for yes/no), -1 before init, and negative
// HOROVOD_PROCESS_SET_ERROR_* codes for process-set calls.
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "api/validate.h"
#include "base/log.h"
#include "hvd/hvd.h"
#include "hvd/hvd_mpi.h"

using namespace hvd;

extern "C" {

HVD_API extern const int HOROVOD_PROCESS_SET_ERROR_INIT = -1;
HVD_API extern const int HOROVOD_PROCESS_SET_ERROR_DYNAMIC = -2;
HVD_API extern const int HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET = -3;
HVD_API extern const int HOROVOD_PROCESS_SET_ERROR_FOREIGN_SET = -4;
HVD_API extern const int HOROVOD_PROCESS_SET_ERROR_EXISTING_SET = -5;
HVD_API extern const int HOROVOD_PROCESS_SET_ERROR_SHUTDOWN = -6;

}  // extern "C"

namespace {

// Horovod passes process sets as one flat rank array and an array of sizes.
std::vector<std::vector<int>> unflatten(const int* ranks, const int* sizes, int nsets) {
  std::vector<std::vector<int>> sets;
  if (!ranks || !sizes) return sets;
  size_t at = 0;
  for (int i = 0; i < nsets; ++i) {
    std::vector<int> set(ranks + at, ranks + at + sizes[i]);
    std::sort(set.begin(), set.end());
    sets.push_back(std::move(set));
    at += static_cast<size_t>(sizes[i]);
  }
  return sets;
}

hvd_status_t init_with_sets(MPI_Comm comm, const std::vector<std::vector<int>>& sets) {
  std::vector<const int*> pointers;
  std::vector<int> sizes;
  for (const auto& s : sets) {
    pointers.push_back(s.data());
    sizes.push_back(static_cast<int>(s.size()));
  }
  if (comm == MPI_COMM_NULL)
    return hvd_init_with_process_sets(static_cast<int>(sets.size()), pointers.data(), sizes.data());
  if (!sets.empty()) {
    hvd::set_last_error("process sets together with a communicator are not supported through "
                        "horovod_init; add them with hvd_add_process_set");
    return HVD_ERR_UNSUPPORTED;
  }
  return hvd_init_comm(comm);
}

bool ensure_mpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return true;
  int provided = 0;
  return MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) == MPI_SUCCESS;
}

int set_error_code(int32_t id) {
  if (!hvd_is_initialized()) return HOROVOD_PROCESS_SET_ERROR_INIT;
  if (hvd_process_set_size(id) < 0) return HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET;
  return 0;
}

}  // namespace

extern "C" {

// ranks/nranks: run on the job made of these world ranks (NULL or 0: all ranks).
HVD_API int horovod_init(const int* ranks, int nranks, const int* process_set_ranks,
                          const int* process_set_sizes, int num_process_sets) {
  auto sets = unflatten(process_set_ranks, process_set_sizes, num_process_sets);
  if (!ranks || nranks <= 0) return init_with_sets(MPI_COMM_NULL, sets) == HVD_SUCCESS;
  if (!ensure_mpi()) return 0;
  MPI_Group world_group, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, nranks, ranks, &group);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &comm);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  if (comm == MPI_COMM_NULL) return 0;  // this rank is not in ranks
  hvd_status_t status = init_with_sets(comm, sets);
  MPI_Comm_free(&comm);  // libhvd holds its own duplicate
  return status == HVD_SUCCESS;
}

// The first communicator is the job; Horovod makes process sets of the others.
HVD_API int horovod_init_multi_comm(MPI_Comm* comm, int ncomms, const int* process_set_ranks,
                                     const int* process_set_sizes, int num_process_sets) {
  if (!comm || ncomms < 1) return 0;
  auto sets = unflatten(process_set_ranks, process_set_sizes, num_process_sets);
  if (!ensure_mpi()) return 0;
  MPI_Group job_group;
  MPI_Comm_group(comm[0], &job_group);
  for (int i = 1; i < ncomms; ++i) {
    MPI_Group g;
    MPI_Comm_group(comm[i], &g);
    int n = 0;
    MPI_Group_size(g, &n);
    std::vector<int> in(n), out(n);
    for (int k = 0; k < n; ++k) in[k] = k;
    MPI_Group_translate_ranks(g, n, in.data(), job_group, out.data());
    MPI_Group_free(&g);
    std::sort(out.begin(), out.end());
    sets.push_back(out);
  }
  MPI_Group_free(&job_group);
  if (sets.empty()) return hvd_init_comm(comm[0]) == HVD_SUCCESS;
  // Sets need every rank's participation at init: run on the first communicator.
  if (hvd_init_comm(comm[0]) != HVD_SUCCESS) return 0;
  for (const auto& s : sets) {
    int32_t id;
    if (hvd_add_process_set(s.data(), static_cast<int>(s.size()), &id) != HVD_SUCCESS) return 0;
  }
  return 1;
}

HVD_API void horovod_shutdown(void) { hvd_shutdown(); }
HVD_API int horovod_is_initialized(void) { return hvd_is_initialized() != 0; }
HVD_API int horovod_start_timeline(const char* file_name, int mark_cycles) {
  return hvd_start_timeline(file_name, mark_cycles ? 1 : 0) == HVD_SUCCESS ? 0 : -1;
}
HVD_API int horovod_stop_timeline(void) { return hvd_stop_timeline() == HVD_SUCCESS ? 0 : -1; }

HVD_API int horovod_rank(void) { return hvd_rank(); }
HVD_API int horovod_local_rank(void) { return hvd_local_rank(); }
HVD_API int horovod_size(void) { return hvd_size(); }
HVD_API int horovod_local_size(void) { return hvd_local_size(); }
HVD_API int horovod_cross_rank(void) { return hvd_cross_rank(); }
HVD_API int horovod_cross_size(void) { return hvd_cross_size(); }
HVD_API int horovod_is_homogeneous(void) { return hvd_is_homogeneous() == 1; }

HVD_API int horovod_mpi_threads_supported(void) {
  if (!hvd_is_initialized()) return -1;
  int provided = 0;
  MPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE ? 1 : 0;
}
HVD_API int horovod_mpi_enabled(void) { return 1; }
HVD_API int horovod_mpi_built(void) { return 1; }
HVD_API int horovod_gloo_enabled(void) { return 0; }
HVD_API int horovod_gloo_built(void) { return 0; }
// Horovod's returns NCCL's version code (0 without NCCL): its front ends compare it
// with 2700 to decide whether NCCL alltoall is available.
HVD_API int horovod_nccl_built(void) { return hvd_nccl_version(); }
HVD_API int horovod_ddl_built(void) { return 0; }
HVD_API int horovod_ccl_built(void) { return 0; }
HVD_API int horovod_cuda_built(void) { return hvd_cuda_built() != 0; }
HVD_API int horovod_rocm_built(void) { return 0; }

HVD_API int horovod_reduce_op_average(void) { return HVD_OP_AVERAGE; }
HVD_API int horovod_reduce_op_sum(void) { return HVD_OP_SUM; }
HVD_API int horovod_reduce_op_adasum(void) { return HVD_OP_ADASUM; }
HVD_API int horovod_reduce_op_min(void) { return HVD_OP_MIN; }
HVD_API int horovod_reduce_op_max(void) { return HVD_OP_MAX; }
HVD_API int horovod_reduce_op_product(void) { return HVD_OP_PRODUCT; }

HVD_API int horovod_add_process_set(const int* ranks, int nranks) {
  if (!hvd_is_initialized()) return HOROVOD_PROCESS_SET_ERROR_INIT;
  int32_t id = -1;
  hvd_status_t status = hvd_add_process_set(ranks, nranks, &id);
  if (status == HVD_SUCCESS) return id;
  if (status == HVD_ERR_SHUT_DOWN) return HOROVOD_PROCESS_SET_ERROR_SHUTDOWN;
  return HOROVOD_PROCESS_SET_ERROR_EXISTING_SET;
}

HVD_API int horovod_remove_process_set(int process_set_id) {
  if (int err = set_error_code(process_set_id)) return err;
  hvd_status_t status = hvd_remove_process_set(process_set_id);
  if (status == HVD_SUCCESS) return process_set_id;
  if (status == HVD_ERR_SHUT_DOWN) return HOROVOD_PROCESS_SET_ERROR_SHUTDOWN;
  return HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET;
}

HVD_API int horovod_process_set_rank(int process_set_id) {
  if (int err = set_error_code(process_set_id)) return err;
  int rank = hvd_process_set_rank(process_set_id);
  return rank >= 0 ? rank : HOROVOD_PROCESS_SET_ERROR_FOREIGN_SET;
}

HVD_API int horovod_process_set_size(int process_set_id) {
  if (int err = set_error_code(process_set_id)) return err;
  return hvd_process_set_size(process_set_id);
}

HVD_API int horovod_process_set_included(int process_set_id) {
  if (int err = set_error_code(process_set_id)) return err;
  return hvd_process_set_included(process_set_id);
}

HVD_API int horovod_number_of_process_sets(void) {
  int count = 0;
  return hvd_process_set_ids(nullptr, 0, &count) == HVD_SUCCESS ? count : 0;
}

HVD_API void horovod_process_set_ids(int* ids_prealloc) {
  int count = 0;
  if (!ids_prealloc || hvd_process_set_ids(nullptr, 0, &count) != HVD_SUCCESS) return;
  std::vector<int32_t> ids(static_cast<size_t>(count));
  if (hvd_process_set_ids(ids.data(), count, &count) != HVD_SUCCESS) return;
  std::copy(ids.begin(), ids.end(), ids_prealloc);
}

HVD_API int horovod_process_set_ranks(int id, int* ranks_prealloc) {
  if (int err = set_error_code(id)) return err;
  int n = 0;
  int capacity = hvd_process_set_size(id);
  if (!ranks_prealloc || hvd_process_set_ranks(id, ranks_prealloc, capacity, &n) != HVD_SUCCESS)
    return HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET;
  return 0;
}

// The process set whose members are exactly the ranks of comm (world ranks of libhvd's
// job), or HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET.
HVD_API int horovod_comm_process_set(MPI_Comm comm) {
  if (!hvd_is_initialized()) return HOROVOD_PROCESS_SET_ERROR_INIT;
  int n = 0;
  MPI_Comm_size(comm, &n);
  std::vector<int> mine(1, hvd_rank());
  std::vector<int> members(static_cast<size_t>(n));
  MPI_Allgather(mine.data(), 1, MPI_INT, members.data(), 1, MPI_INT, comm);
  std::sort(members.begin(), members.end());
  int count = 0;
  hvd_process_set_ids(nullptr, 0, &count);
  std::vector<int32_t> ids(static_cast<size_t>(count));
  hvd_process_set_ids(ids.data(), count, &count);
  for (int32_t id : ids) {
    std::vector<int> ranks(static_cast<size_t>(std::max(0, hvd_process_set_size(id))));
    int got = 0;
    if (hvd_process_set_ranks(id, ranks.data(), static_cast<int>(ranks.size()), &got) == HVD_SUCCESS &&
        ranks == members)
      return id;
  }
  return HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET;
}

}  // extern "C"
