// Exported: life cycle, topology queries, status text, versions and build queries.
#include <cstring>

#include "api/validate.h"
#include "base/dtype.h"
#include "params/params.h"
#include "hvd/hvd.h"
#include "hvd/hvd_mpi.h"
#include "hvd/hvd_version.h"
#include "hvd_build_config.h"
#if HVD_HAVE_NCCL
#include "ops/nccl/nccl_backend.h"
#endif

using namespace hvd;

namespace {

// In a forked child the parent's values, as Horovod's copied state gives them: a
// DataLoader worker seeds itself with hvd.rank(), though it cannot communicate.
int query(int Runtime::*field) {
  if (const Runtime* parent = forked_parent_runtime()) return parent->*field;
  auto rt = current_runtime();
  return rt ? (*rt).*field : -1;
}

}  // namespace

extern "C" {

HVD_API hvd_status_t hvd_op_options_init(hvd_op_options_t* options) {
  if (!options) return fail(HVD_ERR_INVALID_ARGUMENT, "options is NULL");
  *options = hvd_op_options_t HVD_OP_OPTIONS_INITIALIZER;
  return HVD_SUCCESS;
}

HVD_API hvd_status_t hvd_init(void) {
  HVD_API_GUARD(return finish(runtime_init(MPI_COMM_NULL, {}));)
}

HVD_API hvd_status_t hvd_init_with_process_sets(int nsets, const int* const* ranks,
                                                const int* nranks) {
  HVD_API_GUARD({
    // Invalid sets still go to init, which meets the other ranks and fails on every
    // one of them: a rank that returned here would leave them waiting in init.
    std::vector<std::vector<int>> sets;
    Error invalid = Error::success();
    if (nsets < 0) {
      invalid = make_error(HVD_ERR_INVALID_ARGUMENT, "nsets is %d; it must be >= 0", nsets);
    } else if (nsets > 0 && (!ranks || !nranks)) {
      invalid = make_error(HVD_ERR_INVALID_ARGUMENT, "ranks or nranks is NULL while nsets is %d",
                           nsets);
    }
    for (int i = 0; invalid.ok() && i < nsets; ++i) {
      // Ids count from 1: 0 is the global set.
      if (nranks[i] <= 0 || !ranks[i]) {
        invalid = make_error(HVD_ERR_INVALID_ARGUMENT,
                             "process set %d (ranks[%d]) is empty or NULL", i + 1, i);
        break;
      }
      for (int k = 0; k < nranks[i]; ++k)
        if (ranks[i][k] < 0 || (k > 0 && ranks[i][k] <= ranks[i][k - 1])) {
          invalid = make_error(HVD_ERR_INVALID_ARGUMENT,
                               "process set %d (ranks[%d]): ranks must be ascending, distinct and "
                               ">= 0 (ranks[%d][%d] is %d)",
                               i + 1, i, i, k, ranks[i][k]);
          break;
        }
      if (invalid.ok()) sets.emplace_back(ranks[i], ranks[i] + nranks[i]);
    }
    if (!invalid.ok()) sets.clear();
    return finish(runtime_init(MPI_COMM_NULL, sets, invalid));
  })
}

HVD_API hvd_status_t hvd_init_comm(MPI_Comm comm) {
  HVD_API_GUARD({
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_init_comm needs MPI to be initialized first (MPI_Init_thread)");
    if (comm == MPI_COMM_NULL)
      return fail(HVD_ERR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
    return finish(runtime_init(comm, {}));
  })
}

HVD_API hvd_status_t hvd_init_comm_f(int fortran_handle) {
  HVD_API_GUARD({
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "hvd_init_comm_f needs MPI to be initialized first (MPI_Init_thread)");
    return hvd_init_comm(MPI_Comm_f2c(fortran_handle));
  })
}

HVD_API hvd_status_t hvd_shutdown(void) { HVD_API_GUARD(return finish(runtime_shutdown());) }

HVD_API int hvd_is_initialized(void) { return current_runtime() ? 1 : 0; }
HVD_API int hvd_rank(void) { return query(&Runtime::rank); }
HVD_API int hvd_size(void) { return query(&Runtime::size); }
HVD_API int hvd_local_rank(void) { return query(&Runtime::local_rank); }
HVD_API int hvd_local_size(void) { return query(&Runtime::local_size); }
HVD_API int hvd_cross_rank(void) { return query(&Runtime::cross_rank); }
HVD_API int hvd_cross_size(void) { return query(&Runtime::cross_size); }
HVD_API int hvd_gpu_device(void) { return query(&Runtime::gpu_device); }

HVD_API int hvd_is_homogeneous(void) {
  if (const Runtime* parent = forked_parent_runtime()) return parent->homogeneous ? 1 : 0;
  auto rt = current_runtime();
  return rt ? (rt->homogeneous ? 1 : 0) : -1;
}

HVD_API const char* hvd_status_string(hvd_status_t status) { return status_text(status); }
HVD_API const char* hvd_last_error(void) { return last_error(); }

HVD_API int hvd_version(void) { return HVD_VERSION_NUMBER; }
HVD_API const char* hvd_version_string(void) { return HVD_VERSION_STRING; }
HVD_API int hvd_mpi_built(void) { return 1; }
HVD_API int hvd_cuda_built(void) { return HVD_HAVE_CUDA; }
HVD_API int hvd_nccl_built(void) { return HVD_HAVE_NCCL; }
HVD_API int hvd_nccl_version(void) {
#if HVD_HAVE_NCCL
  return NcclBackend::version_code();
#else
  return 0;
#endif
}
HVD_API int hvd_hwloc_built(void) { return HVD_HAVE_HWLOC; }

HVD_API const char* hvd_mpi_library_version(void) {
  static char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  if (!version[0]) {
    int len = 0;
    MPI_Get_library_version(version, &len);
    char* newline = std::strchr(version, '\n');
    if (newline) *newline = '\0';
  }
  return version;
}

HVD_API hvd_status_t hvd_param_get(const char* name, char* buf, size_t len) {
  HVD_API_GUARD({
    if (!name) return fail(HVD_ERR_INVALID_ARGUMENT, "name is NULL");
    if (!buf || len == 0) return fail(HVD_ERR_INVALID_ARGUMENT, "buf is NULL or len is 0");
    auto rt = current_runtime();
    Params params = rt ? rt->params : load_params_from_env(nullptr);
    std::string value;
    if (!param_value_text(params, name, &value))
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "'%s' is not a libhvd parameter (hvd-info -c lists them; docs/configuration.md)", name);
    std::snprintf(buf, len, "%s", value.c_str());
    return HVD_SUCCESS;
  })
}

HVD_API hvd_status_t hvd_get_counters(hvd_counters_t* counters) {
  HVD_API_GUARD({
    if (!counters) return fail(HVD_ERR_INVALID_ARGUMENT, "counters is NULL");
    if (counters->struct_size < offsetof(hvd_counters_t, reserved))
      return fail(HVD_ERR_INVALID_ARGUMENT,
                  "counters->struct_size is %zu: set it to sizeof(hvd_counters_t)",
                  counters->struct_size);
    std::shared_ptr<Runtime> rt;
    HVD_TRY(require_runtime("hvd_get_counters", &rt));
    counters->global_bytes = rt->counters.global_bytes.load();
    counters->local_bytes = rt->counters.local_bytes.load();
    counters->cross_bytes = rt->counters.cross_bytes.load();
    counters->collectives = rt->counters.collectives.load();
    counters->negotiation_rounds = rt->rounds.load();
    counters->speculative = rt->speculated.load();
    counters->ring_allreduces = rt->counters.ring_allreduces.load();
    counters->core_round_trip_ns = rt->counters.core_round_trip_ns.load();
    counters->far_cores = rt->counters.far_cores.load();
    counters->back_to_back = rt->counters.back_to_back.load();
    return HVD_SUCCESS;
  })
}

}  // extern "C"
