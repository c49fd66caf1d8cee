#include "core/runtime.h"

#include <cstdlib>
#include <mutex>

#include "core/background.h"
#include "core/enqueue.h"
#include "core/log.h"
#include "timeline/timeline.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_types.h"

namespace hvd {

namespace {

std::mutex g_lifecycle_mutex;  // serializes init and shutdown
std::mutex g_runtime_mutex;    // guards g_runtime; never held while waiting
std::shared_ptr<Runtime> g_runtime;
bool g_we_initialized_mpi = false;
bool g_atexit_registered = false;

void finalize_at_exit() {
  runtime_shutdown();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_we_initialized_mpi && !finalized) {
    mpi_types_free();
    MPI_Finalize();
  }
}

void free_comm(MPI_Comm* comm) {
  if (*comm != MPI_COMM_NULL) MPI_Comm_free(comm);
}

Error build_topology(Runtime& rt) {
  MPI_Comm_rank(rt.world, &rt.rank);
  MPI_Comm_size(rt.world, &rt.size);
  int rc = MPI_Comm_split_type(rt.world, MPI_COMM_TYPE_SHARED, rt.rank, MPI_INFO_NULL, &rt.local);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Comm_split_type (local communicator)");
  MPI_Comm_rank(rt.local, &rt.local_rank);
  MPI_Comm_size(rt.local, &rt.local_size);
  rc = MPI_Comm_split(rt.world, rt.local_rank, rt.rank, &rt.cross);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Comm_split (cross communicator)");
  MPI_Comm_rank(rt.cross, &rt.cross_rank);
  MPI_Comm_size(rt.cross, &rt.cross_size);
  int sizes[2] = {rt.local_size, -rt.local_size};
  int extremes[2];
  MPI_Allreduce(sizes, extremes, 2, MPI_INT, MPI_MAX, rt.world);
  rt.homogeneous = extremes[0] == -extremes[1];
  rt.max_local_size = extremes[0];
  int leader = rt.local_rank == 0 ? 1 : 0;
  MPI_Allreduce(&leader, &rt.num_nodes, 1, MPI_INT, MPI_SUM, rt.world);
  // Where every rank sits: hierarchical allgather orders node blocks by this.
  int node = rt.local_rank == 0 ? rt.cross_rank : 0;
  MPI_Bcast(&node, 1, MPI_INT, 0, rt.local);
  int mine[2] = {node, rt.local_rank};
  std::vector<int> all(2 * static_cast<size_t>(rt.size));
  MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, rt.world);
  rt.node_of.resize(rt.size);
  rt.local_rank_of.resize(rt.size);
  for (int r = 0; r < rt.size; ++r) {
    rt.node_of[r] = all[2 * r];
    rt.local_rank_of[r] = all[2 * r + 1];
  }
  MPI_Comm_set_errhandler(rt.local, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(rt.cross, MPI_ERRORS_RETURN);
  return Error::success();
}

}  // namespace

Runtime::~Runtime() {
  if (thread.joinable()) thread.join();
}

void Runtime::free_comms() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& set : sets.all()) free_comm(&set->comm);
  free_comm(&cross);
  free_comm(&local);
  free_comm(&control);
  free_comm(&world);
}

std::shared_ptr<Runtime> current_runtime() {
  std::lock_guard<std::mutex> lock(g_runtime_mutex);
  return g_runtime;
}

Error runtime_init(MPI_Comm comm, const std::vector<std::vector<int>>& static_sets) {
  std::lock_guard<std::mutex> lifecycle(g_lifecycle_mutex);
  if (current_runtime()) return Error::success();

  std::vector<std::string> warnings;
  Params params = load_params_from_env(&warnings);
  set_log_level(params.log_level);

  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return make_error(HVD_ERR_MPI, "MPI was already finalized; libhvd cannot be initialized again "
                                   "in this process");
  if (!initialized) {
    if (comm != MPI_COMM_NULL)
      return make_error(HVD_ERR_INVALID_ARGUMENT, "hvd_init_comm needs MPI to be initialized");
    // libhvd itself needs SERIALIZED (only its background thread calls MPI), but the
    // application may call MPI too while libhvd runs (mpi4py after hvd.init, its own
    // communicators), which needs MULTIPLE. Horovod asks for it as well; measured,
    // it costs nothing here. SERIALIZED is still accepted below.
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Init_thread");
    g_we_initialized_mpi = true;
    if (provided < MPI_THREAD_MULTIPLE)
      HVD_LOG(Info, "MPI provides thread level %d, not MPI_THREAD_MULTIPLE: the application "
                    "must not call MPI while libhvd is initialized", provided);
  }
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_SERIALIZED)
    return make_error(HVD_ERR_UNSUPPORTED,
                      "MPI was initialized with thread level %d; libhvd calls MPI from its "
                      "background thread and needs MPI_THREAD_SERIALIZED or higher (initialize "
                      "MPI with MPI_Init_thread)",
                      provided);
  if (!g_atexit_registered) {
    std::atexit(finalize_at_exit);
    g_atexit_registered = true;
  }
  mpi_types_init();

  auto rt = std::make_shared<Runtime>();
  rt->params = params;
  // A caller's communicator may be an invalid handle (hvd_init_comm_f with a bad
  // number): MPICH raises that on MPI_COMM_WORLD's handler, fatal by default, so it
  // returns an error only while the handler is MPI_ERRORS_RETURN.
  MPI_Errhandler world_handler;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_handler);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rc = MPI_Comm_dup(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, &rt->world);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_handler);
  MPI_Errhandler_free(&world_handler);
  if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Comm_dup");
  MPI_Comm_set_errhandler(rt->world, MPI_ERRORS_RETURN);
  MPI_Comm_dup(rt->world, &rt->control);
  MPI_Comm_set_errhandler(rt->control, MPI_ERRORS_RETURN);
  Error err = build_topology(*rt);
  if (!err.ok()) return err;
  set_log_rank(rt->rank);
  if (rt->rank == 0)
    for (const std::string& w : warnings) HVD_LOG(Warning, "%s", w.c_str());

  // Placement problems (an unreadable topology file, a binding not allowed) are
  // reported and the job runs unpinned rather than failing.
  Error pinned = pin_this_rank(rt->params, rt->local_rank, rt->local_size, &rt->pin);
  if (!pinned.ok()) HVD_LOG(Warning, "GPU/CPU pinning skipped: %s", pinned.message.c_str());
  if (!rt->pin.log.empty()) HVD_LOG(Info, "%s", rt->pin.log.c_str());
  if (!rt->pin.notes.empty()) HVD_LOG(Debug, "%s", rt->pin.notes.c_str());
  rt->gpu_device = rt->pin.device;

  for (size_t i = 0; i < static_sets.size(); ++i) {
    if (static_sets[i].back() >= rt->size) {
      rt->free_comms();
      return make_error(HVD_ERR_INVALID_ARGUMENT,
                        "process set %zu names rank %d but there are only %d ranks", i + 1,
                        static_sets[i].back(), rt->size);
    }
  }
  std::vector<int> all(rt->size);
  for (int i = 0; i < rt->size; ++i) all[i] = i;
  auto global = make_process_set(0, all, rt->world, rt->rank, rt->size);
  MPI_Comm_set_errhandler(global->comm, MPI_ERRORS_RETURN);
  rt->sets.add(global);
  for (size_t i = 0; i < static_sets.size(); ++i) {
    auto set = make_process_set(static_cast<int32_t>(i + 1), static_sets[i], rt->world, rt->rank,
                                rt->size);
    if (set->comm != MPI_COMM_NULL) MPI_Comm_set_errhandler(set->comm, MPI_ERRORS_RETURN);
    rt->sets.add(set);
  }

  // HOROVOD_TIMELINE: rank 0 records, as Horovod's coordinator does.
  if (!rt->params.timeline.empty() && rt->rank == 0) {
    std::string why;
    if (!process_timeline().start(rt->params.timeline, rt->params.timeline_mark_cycles, &why))
      HVD_LOG(Warning, "HOROVOD_TIMELINE: %s; running without a timeline", why.c_str());
  }

  rt->loop = std::make_unique<BackgroundLoop>(*rt);
  Runtime* raw = rt.get();
  rt->thread = std::thread([raw] { raw->loop->run(); });
  HVD_LOG(Debug, "initialized: rank %d of %d, local %d of %d, cross %d of %d", rt->rank, rt->size,
          rt->local_rank, rt->local_size, rt->cross_rank, rt->cross_size);
  {
    std::lock_guard<std::mutex> lock(g_runtime_mutex);
    g_runtime = rt;
  }
  set_wait_spin_us(rt->params.spin_us);
  return Error::success();
}

Error runtime_shutdown() {
  std::lock_guard<std::mutex> lifecycle(g_lifecycle_mutex);
  std::shared_ptr<Runtime> rt;
  {
    std::lock_guard<std::mutex> lock(g_runtime_mutex);
    rt.swap(g_runtime);
  }
  if (!rt) return Error::success();
  rt->shutdown_requested.store(true);
  rt->queue.poke();
  if (rt->thread.joinable()) rt->thread.join();
  rt->loop.reset();
  process_timeline().stop();
  // The background thread has ended, so this thread may call MPI now. Users that
  // still hold the runtime only see the closed queue.
  rt->free_comms();
  return Error::success();
}

}  // namespace hvd
