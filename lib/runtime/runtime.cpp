#include "runtime/runtime.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

#include "base/op_progress.h"
#include "base/spin_lock.h"
#include "runtime/background.h"
#include "runtime/enqueue.h"
#include "runtime/init_agreement.h"
#include "adapt/shared_cpus.h"
#include "base/log.h"
#include "observe/step_stats.h"
#include "observe/step_summary.h"
#include "timeline/timeline.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_types.h"

namespace hvd {

namespace {

std::mutex g_lifecycle_mutex;  // serializes init and shutdown
SpinLock g_runtime_lock;  // guards g_runtime; held only to copy or swap the pointer
// Never destroyed by exit(): finalize_at_exit shuts the runtime down where that is
// possible, and where it is not (exit() on the background thread itself, from a
// signal handler or an MPI error handler) destroying it there joined the thread from
// itself or waited for ever on a condition variable the thread was waiting on.
std::shared_ptr<Runtime>& g_runtime = *new std::shared_ptr<Runtime>;
bool g_we_initialized_mpi = false;
bool g_atexit_registered = false;

// True on libhvd's background thread: exit() called there (an MPI error handler that
// aborts) runs the exit handlers on it, and it cannot join itself.
thread_local bool t_on_background_thread = false;

// fork() after init: the child has a copy of the runtime's memory but none of its
// threads, and MPI's connections belong to the parent. Shutting the copy down (at the
// child's exit) blocked on locks held by the parent's threads at the fork, and an
// operation waited for ever. So the child forgets the runtime: it reads as not
// initialized, every call fails at once saying why, and its exit touches nothing.
// Plain data, written once in the child's single thread before anything else runs.
bool g_ever_initialized = false;  // libhvd initialized MPI or a runtime in this process
bool g_forked_child = false;
pid_t g_parent_pid = 0;
const Runtime* g_parent_runtime = nullptr;  // in a forked child: the parent's, read-only

void forget_runtime_in_child() {
  if (!g_ever_initialized) return;
  g_forked_child = true;
  g_parent_pid = getppid();
  // Leaked on purpose: destroying it would join the parent's thread and free the
  // parent's communicators. No lock: other threads did not come along.
  g_parent_runtime = g_runtime.get();
  if (g_runtime) new std::shared_ptr<Runtime>(std::move(g_runtime));
  process_timeline().abandon_after_fork();
}

// HVD_EXIT_NOTICE_FD (hvdrun's rank monitor), read at init.
int g_exit_notice_fd = -1;

// Tells the monitor that hvd_init began, before MPI's initialization: from then on
// this rank waits there for every other, and a peer that exits without initializing
// leaves it waiting for ever, which hvdrun ends (tools/hvdrun/rank_exit.h). Once per
// process; the exit notice follows on the same descriptor.
void send_init_notice() {
  static bool sent = false;
  if (g_exit_notice_fd < 0 || sent) return;
  sent = true;
  ssize_t written = write(g_exit_notice_fd, "init\n", 5);
  (void)written;
}

// Tells the monitor when this process began to exit and with which status: its own
// shutdown and MPI_Finalize follow, and meanwhile peers may fail because of it, exit
// sooner, and have the launcher kill this process before its status is seen.
void send_exit_notice(int status) {
  if (g_exit_notice_fd < 0) return;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char line[64];
  int n = std::snprintf(line, sizeof line, "%lld.%06ld %d\n", static_cast<long long>(ts.tv_sec),
                        ts.tv_nsec / 1000, status);
  ssize_t written = write(g_exit_notice_fd, line, static_cast<size_t>(n));
  (void)written;
  g_exit_notice_fd = -1;
}

// True on libhvd's background thread. The thread-local flag is the thread's first
// statement; a signal handler that runs on the thread before it (its exit() just
// after hvd_init) is told by the runtime's thread id.
bool on_background_thread() {
  if (t_on_background_thread) return true;
  std::lock_guard<SpinLock> lock(g_runtime_lock);
  return g_runtime && g_runtime->thread.get_id() == std::this_thread::get_id();
}

// HVD_FINALIZE_TIMEOUT_SECONDS and the world's shape, read at init for the exit handler.
double g_finalize_timeout_s = 30.0;
int g_world_rank = -1;
int g_world_size = 0;

// MPI_Finalize waits on every peer and on the launcher's process manager; one that
// became unreachable after the work was done (its node off the launcher's network)
// held the process there for ever, silently. A helper thread ends the process with
// its intended status when the finalize has not returned in time. Detached and
// leaked: the process may end while it still waits.
void finalize_mpi_bounded(int status) {
  auto* done = new std::atomic<bool>(false);
  const double limit = g_finalize_timeout_s;
  if (limit > 0) {
    std::thread([done, limit, status] {
      for (double waited = 0; waited < limit; waited += 0.1) {
        usleep(100 * 1000);
        if (done->load()) return;
      }
      char line[512];
      const int n = std::snprintf(
          line, sizeof line,
          "libhvd: rank %d: gave up waiting for MPI_Finalize after %g s "
          "(HVD_FINALIZE_TIMEOUT_SECONDS): it waits on the launcher's process manager or a "
          "peer among the job's %d ranks that is unreachable (MPI does not say which); "
          "exiting with status %d without it\n",
          g_world_rank, limit, g_world_size, status);
      ssize_t written = write(STDERR_FILENO, line, static_cast<size_t>(std::max(n, 0)));
      (void)written;
      _exit(status);
    }).detach();
  }
  MPI_Finalize();
  done->store(true);
}

// Registered with on_exit (glibc), which passes the status given to exit().
void finalize_at_exit(int status, void*) {
  if (g_forked_child) return;  // the parent's MPI and runtime: not this process's to end
  if (on_background_thread()) return;
  send_exit_notice(status);
  runtime_shutdown();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_we_initialized_mpi && !finalized) finalize_mpi_bounded(status);
}

// The application's own MPI_Finalize while libhvd still runs, where the application
// initialized MPI (a C program's MPI_Init, mpi4py's finalize after an explicit
// MPI.Finalize()) and did not call hvd_shutdown first: MPI calls the delete callbacks
// of MPI_COMM_SELF's attributes first thing in MPI_Finalize, while calls still work,
// and libhvd shuts down there. Without it the background thread went on calling MPI
// after MPI_Finalize and the process always died at exit (MPICH: "Attempting to use
// an MPI routine after finalizing"). It is a safety net, not the way: MPICH 4 turns
// its thread locking off before these callbacks, so a call the background thread was
// inside at that moment leaves a lock held and MPICH can still abort at exit (often,
// measured with 4 ranks on 2 cores); Open MPI is clean. Hence the warning.
int shutdown_at_mpi_finalize(MPI_Comm, int, void*, void*) {
  if (current_runtime()) {
    HVD_LOG(Warning, "MPI_Finalize was called while libhvd was initialized; libhvd shut "
                     "itself down first. Call hvd_shutdown() (Python: hvd.shutdown()) before "
                     "MPI_Finalize: MPI may otherwise abort at exit");
    runtime_shutdown();
  }
  return MPI_SUCCESS;
}

void end_with_mpi_finalize() {
  int keyval = MPI_KEYVAL_INVALID;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, shutdown_at_mpi_finalize, &keyval, nullptr) !=
          MPI_SUCCESS ||
      MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr) != MPI_SUCCESS)
    HVD_LOG(Warning, "could not register libhvd's shutdown with MPI_Finalize: call hvd_shutdown "
                     "before MPI_Finalize");
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
  // The speculation limit changes the negotiation vector's length, so every rank must
  // use one value: the smallest (a rank that turned it off turns it off for all).
  // The summary's arrival barriers are collectives too: they run only where every rank
  // asked for the summary (the smallest of the 0/1 answers).
  int sizes[4] = {rt.local_size, -rt.local_size,
                  -static_cast<int>(std::min<int64_t>(rt.params.speculative_bytes, INT32_MAX)),
                  step_summary_requested(rt.params) ? 0 : 1};
  int extremes[4];
  MPI_Allreduce(sizes, extremes, 4, MPI_INT, MPI_MAX, rt.world);
  rt.homogeneous = extremes[0] == -extremes[1];
  rt.max_local_size = extremes[0];
  rt.speculative_bytes = -static_cast<int64_t>(extremes[2]);
  rt.await_arrivals = extremes[3] == 0;
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

Error forked_child_error(const char* function) {
  return make_error(HVD_ERR_NOT_INITIALIZED,
                    "%s: this process is a fork() of process %ld, which had initialized libhvd; "
                    "a forked child cannot use its parent's libhvd (the background thread and "
                    "MPI connections stay with the parent). Create worker processes before "
                    "hvd_init, or start them with the 'spawn' method (Python: "
                    "multiprocessing.get_context('spawn'), DataLoader(multiprocessing_context="
                    "'spawn'))",
                    function, static_cast<long>(g_parent_pid));
}

bool in_forked_child() { return g_forked_child; }

const Runtime* forked_parent_runtime() { return g_forked_child ? g_parent_runtime : nullptr; }

std::shared_ptr<Runtime> current_runtime() {
  if (g_forked_child) return nullptr;
  std::lock_guard<SpinLock> lock(g_runtime_lock);
  return g_runtime;
}

Error runtime_init(MPI_Comm comm, const std::vector<std::vector<int>>& static_sets,
                   const Error& static_sets_invalid) {
  if (g_forked_child) {
    Error err = forked_child_error("hvd_init");
    err.status = HVD_ERR_UNSUPPORTED;
    return err;
  }
  std::lock_guard<std::mutex> lifecycle(g_lifecycle_mutex);
  if (current_runtime()) return Error::success();

  std::vector<std::string> warnings;
  Params params = load_params_from_env(&warnings);
  set_log_level(params.log_level);
  g_exit_notice_fd = static_cast<int>(params.exit_notice_fd);
  g_finalize_timeout_s = params.finalize_timeout_s;
  op_progress().test_delay_us.store(params.test_progress_delay_ms * 1000);
  send_init_notice();

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
    g_ever_initialized = true;
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
    on_exit(finalize_at_exit, nullptr);
    end_with_mpi_finalize();
    pthread_atfork(nullptr, nullptr, forget_runtime_in_child);
    g_atexit_registered = true;
  }
  g_ever_initialized = true;
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  g_world_size = world_size;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
  HVD_RETURN_IF_ERROR(check_launcher_agrees(world_size));
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
  if (err.ok()) {
    set_log_rank(rt->rank);
    err = adopt_rank0_params(*rt);
  }
  if (err.ok()) err = agree_static_sets(*rt, static_sets, static_sets_invalid);
  if (!err.ok()) {
    rt->free_comms();
    return err;
  }
  if (rt->rank == 0) {
    for (const std::string& w : warnings) HVD_LOG(Warning, "%s", w.c_str());
    // A misspelt knob (HVD_FUSED_RNG) is named once per process: a re-initialization
    // (elastic generations) reads the same environment. g_lifecycle_mutex is held.
    static bool unknown_knobs_reported = false;
    if (!unknown_knobs_reported) {
      unknown_knobs_reported = true;
      for (const std::string& w : unknown_env_param_warnings()) HVD_LOG(Warning, "%s", w.c_str());
    }
  }

  // Placement problems (an unreadable topology file, a binding not allowed) are
  // reported and the job runs unpinned rather than failing.
  PinOptions placement = pin_options(rt->params);
  const MachinePeers peers = find_machine_peers(*rt);
  placement.machine_rank = peers.rank;
  placement.machine_size = peers.size;
  Error pinned = pin_this_rank(placement, rt->local_rank, rt->local_size, &rt->pin);
  if (!pinned.ok()) HVD_LOG(Warning, "GPU/CPU pinning skipped: %s", pinned.message.c_str());
  if (!rt->pin.log.empty()) HVD_LOG(Info, "%s", rt->pin.log.c_str());
  if (!rt->pin.notes.empty()) HVD_LOG(Debug, "%s", rt->pin.notes.c_str());
  rt->gpu_device = rt->pin.device;
  const double cpus = cpus_per_rank(rt->pin, rt->local_size);
  rt->rounds_overlap_pushes = cpus >= 2 || rt->gpu_device >= 0;
  // Agreed: it chooses MPI calls (the fused ring, HVD_FUSED_RING=auto).
  rt->every_rank_has_a_cpu = agree_every_rank_has_a_cpu(*rt, cpus);
  size_calls_for_shared_cpus(rt->every_rank_has_a_cpu, rt->world, rt->rank, &rt->params);
  HVD_LOG(Debug, "%.3g CPUs for this rank%s: %s", cpus, rt->gpu_device >= 0 ? " and a GPU" : "",
          rt->rounds_overlap_pushes
              ? "a round's transfers can overlap the caller's pushes"
              : "the background thread shares the caller's CPU (bursts may outlast the cycle time)");

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

  step_stats().start(rt->params.step_stats, rt->params.step_stats_warmup);
  rt->loop = std::make_unique<BackgroundLoop>(*rt);
  Runtime* raw = rt.get();
  rt->thread = std::thread([raw] {
    t_on_background_thread = true;
    raw->loop->run();
  });
  // Named here, before init returns, so that top -H, perf and gdb tell it from the
  // caller's threads from its first moment.
  pthread_setname_np(rt->thread.native_handle(), "hvd-background");
  HVD_LOG(Debug, "initialized: rank %d of %d, local %d of %d, cross %d of %d", rt->rank, rt->size,
          rt->local_rank, rt->local_size, rt->cross_rank, rt->cross_size);
  {
    std::lock_guard<SpinLock> lock(g_runtime_lock);
    g_runtime = rt;
  }
  return Error::success();
}

Error runtime_shutdown() {
  if (g_forked_child) return forked_child_error("hvd_shutdown");
  if (on_background_thread())
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "hvd_shutdown called on libhvd's own background thread, which cannot "
                      "wait for itself to end");
  std::lock_guard<std::mutex> lifecycle(g_lifecycle_mutex);
  std::shared_ptr<Runtime> rt;
  {
    std::lock_guard<SpinLock> lock(g_runtime_lock);
    rt.swap(g_runtime);
  }
  if (!rt) return Error::success();
  rt->shutdown_requested.store(true);
  rt->queue.poke();
  if (rt->thread.joinable()) rt->thread.join();
  rt->loop.reset();
  process_timeline().stop();
  // The background thread has ended, so this thread may call MPI now. Users that
  // still hold the runtime only see the closed queue. libhvd's reduction ops and
  // negotiation types go too (hvd_init makes them again): where the application owns
  // MPI, its MPI_Finalize would otherwise report them leaked.
  rt->free_comms();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) mpi_types_free();
  return Error::success();
}

}  // namespace hvd
