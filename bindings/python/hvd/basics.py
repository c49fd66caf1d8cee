"""Life cycle, rank queries, process sets, synchronization, timeline and build queries.

Framework-independent: the numpy and torch layers both re-export these.
"""
import atexit
import ctypes
import os

from . import _raw
from ._capi import Counters, StepStats, StepTensor, lib, HVD_DEVICE_CPU, HVD_GLOBAL_PROCESS_SET
from .errors import check, error_for

# Reduction operations, numbered as Horovod numbers them.
Average, Sum, Adasum, Min, Max, Product = range(6)
OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max",
            Product: "Product"}


def reduce_op(op, function):
    """The op code for hvd.Average, hvd.Sum, ... (ints as Horovod's are); anything else
    is an InvalidArgumentError (a ValueError) listing the valid ones."""
    if isinstance(op, int) and not isinstance(op, bool) and op in OP_NAMES:
        return int(op)
    valid = ", ".join(f"hvd.{n}" for n in OP_NAMES.values())
    raise error_for(2, function, f"op={op!r} is not a reduction operation; use one of {valid}")


class ProcessSet:
    """A subset of the global ranks that collectives can run on (Horovod's class).

    Create it with the member ranks, then register it with add_process_set() (or pass
    it to init(process_sets=...)); `process_set_id` is None until then.
    """

    def __init__(self, ranks):
        ranks = sorted(int(r) for r in ranks)
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"process set ranks must be distinct, got {ranks}")
        self.ranks = ranks
        self.process_set_id = None

    def _id(self):
        if self.process_set_id is None:
            raise ValueError("this ProcessSet is not registered: call hvd.add_process_set(ps) "
                             "or pass it to hvd.init(process_sets=[...]) first")
        return self.process_set_id

    def _lookup_error(self):
        """Horovod's ValueError for a set libhvd does not know (or before init)."""
        if lib.hvd_is_initialized() != 1:
            return error_for(1, "ProcessSet", "hvd.init() has not been called (or "
                             "hvd.shutdown() was): call hvd.init() first")
        return ValueError(f"process set {self.process_set_id} does not exist or has "
                          "been removed")

    def size(self):
        """Number of ranks in the set; None when it is not registered (as Horovod).
        Raises ValueError for a set libhvd does not know, or before init."""
        if self.process_set_id is None:
            return None
        n = lib.hvd_process_set_size(self.process_set_id)
        if n < 0:
            raise self._lookup_error()
        return n

    def rank(self):
        """This process's rank within the set; None when it is not registered (as
        Horovod). Raises ValueError, as Horovod, when this process is not a member, for
        a set libhvd does not know, and before init."""
        if self.process_set_id is None:
            return None
        r = lib.hvd_process_set_rank(self.process_set_id)
        if r >= 0:
            return r
        if lib.hvd_process_set_included(self.process_set_id) == 0:
            raise ValueError(f"this process (rank {lib.hvd_rank()}) is not part of process "
                             f"set {self.process_set_id} (ranks {self.ranks})")
        raise self._lookup_error()

    def included(self):
        """True if this process is a member of the set."""
        return lib.hvd_process_set_included(self._id()) == 1

    def __repr__(self):
        # Horovod's form, mpi_comm included (a set made from a communicator is not
        # kept as one: its ranks are what libhvd holds).
        return (f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, "
                "mpi_comm=None)")


class _GlobalProcessSet(ProcessSet):
    """Set 0: every rank. Its ranks are known only after init."""

    def __init__(self):
        self.process_set_id = HVD_GLOBAL_PROCESS_SET

    @property
    def ranks(self):
        n = lib.hvd_size()
        return list(range(n)) if n > 0 else []



global_process_set = _GlobalProcessSet()


def process_set_id(process_set):
    """The id to pass to libhvd for a ProcessSet, an int id, or None (global)."""
    if process_set is None:
        return HVD_GLOBAL_PROCESS_SET
    if isinstance(process_set, ProcessSet):
        return process_set._id()
    if isinstance(process_set, int):
        return process_set
    raise TypeError(f"process_set must be a ProcessSet or an int id, not {type(process_set)}")


def init(comm=None, process_sets=None):
    """Initializes libhvd (idempotent).

    comm: None for MPI_COMM_WORLD, or an mpi4py communicator (or a list of world
    ranks, as Horovod accepts) to run libhvd on a subset of the processes. MPI must then
    be initialized with at least MPI_THREAD_SERIALIZED, as mpi4py does by default.
    process_sets: ProcessSet objects to create at start-up; they get ids 1, 2, ...
    """
    if comm is not None and process_sets:
        raise ValueError("init: comm and process_sets cannot be combined")
    _elastic_stall_default()
    if comm is None:
        if process_sets:
            _init_with_sets(process_sets)
        else:
            check(lib.hvd_init(), "hvd_init")
        return
    if isinstance(comm, (list, tuple)):
        _init_on_world_ranks(list(comm))
        return
    if not hasattr(comm, "py2f"):
        raise TypeError("init: comm must be an mpi4py communicator (with py2f()) or a list "
                        f"of ranks, not {type(comm).__name__}")
    check(lib.hvd_init_comm_f(comm.py2f()), "hvd_init_comm_f")


# In an elastic job a stalled tensor (ranks that disagree on their collectives, a rank
# that committed once more than the others) must end the generation so that the next
# one starts from the last commit: it fails after this long unless the user chose.
ELASTIC_STALL_SHUTDOWN_SECONDS = "600"


def _elastic_stall_default():
    if os.environ.get("HOROVOD_ELASTIC") == "1":
        os.environ.setdefault("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
                              ELASTIC_STALL_SHUTDOWN_SECONDS)


def _init_with_sets(process_sets):
    sets = [ps if isinstance(ps, ProcessSet) else ProcessSet(ps) for ps in process_sets]
    arrays = [(ctypes.c_int * len(ps.ranks))(*ps.ranks) for ps in sets]
    ptrs = (ctypes.POINTER(ctypes.c_int) * len(sets))(
        *[ctypes.cast(a, ctypes.POINTER(ctypes.c_int)) for a in arrays])
    counts = (ctypes.c_int * len(sets))(*[len(ps.ranks) for ps in sets])
    check(lib.hvd_init_with_process_sets(len(sets), ptrs, counts), "hvd_init_with_process_sets")
    for i, ps in enumerate(sets):
        ps.process_set_id = i + 1


def _init_on_world_ranks(ranks):
    # Horovod's init(comm=[ranks]): a communicator of those world ranks, through mpi4py.
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError(
            "hvd.init(comm=[ranks]) builds the communicator of those ranks with mpi4py, which "
            f"this interpreter cannot import ({exc}). Install it, built against the same MPI "
            "as libhvd, in a virtual environment that still sees the system's torch and "
            "numpy: `python3 -m venv --system-site-packages VENV && VENV/bin/pip install "
            "mpi4py` (needs the MPI compiler wrapper mpicc, from the MPI's development "
            "package), then run the script with VENV/bin/python. Or call hvd.init() on "
            "every rank and use hvd.add_process_set(ranks).", name="mpi4py") from exc
    world = MPI.COMM_WORLD
    member = world.Get_rank() in ranks
    sub = world.Split(0 if member else MPI.UNDEFINED, world.Get_rank())
    if not member:
        raise ValueError(f"init: this rank ({world.Get_rank()}) is not in {ranks}")
    try:
        init(comm=sub)
    finally:
        sub.Free()


def process_set_included(process_set):
    """True if this process is a member of the set (a ProcessSet, an id or None)."""
    return lib.hvd_process_set_included(process_set_id(process_set)) == 1


def shutdown():
    """Stops libhvd; pending operations fail with ShutDownError. Safe to repeat."""
    try:
        check(lib.hvd_shutdown(), "hvd_shutdown")
    finally:
        _raw.complete_all_after_shutdown()


@atexit.register
def _shutdown_at_exit():
    """At interpreter exit libhvd shuts down, as Horovod does: operations still in
    flight would write into buffers Python is about to free, and where mpi4py owns MPI
    its MPI_Finalize comes after this (mpi4py finalizes in Py_AtExit, after every
    atexit function), which must not find libhvd's background thread still calling
    MPI (MPICH aborted at exit)."""
    if is_initialized():
        shutdown()


def is_initialized():
    return lib.hvd_is_initialized() == 1


def _query(fn, what):
    value = fn()
    if value < 0:
        from .errors import error_for
        raise error_for(1, what, f"{what}() called before hvd.init()")
    return value


def rank():
    return _query(lib.hvd_rank, "rank")


def size():
    return _query(lib.hvd_size, "size")


def local_rank():
    return _query(lib.hvd_local_rank, "local_rank")


def local_size():
    return _query(lib.hvd_local_size, "local_size")


def cross_rank():
    return _query(lib.hvd_cross_rank, "cross_rank")


def cross_size():
    return _query(lib.hvd_cross_size, "cross_size")


def is_homogeneous():
    return _query(lib.hvd_is_homogeneous, "is_homogeneous") == 1


def gpu_device():
    """The CUDA device this rank was pinned to, or -1."""
    return lib.hvd_gpu_device()


# --- process sets -------------------------------------------------------------------

def add_process_set(process_set):
    """Registers a ProcessSet (or a list of ranks) on every rank; returns the ProcessSet.
    Collective over all ranks, which must pass the same ranks. A set with the same
    ranks already registered is an InvalidArgumentError (a ValueError) on every rank,
    as Horovod raises ValueError: reuse that set, or remove it first."""
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    ranks = (ctypes.c_int * len(ps.ranks))(*ps.ranks)
    new_id = ctypes.c_int32(-1)
    check(lib.hvd_add_process_set(ranks, len(ps.ranks), ctypes.byref(new_id)),
          "hvd_add_process_set")
    ps.process_set_id = new_id.value
    return ps


def remove_process_set(process_set):
    """Removes a registered set (collective). Returns True when it was removed, False
    (as Horovod) for the global set and for a ProcessSet that is not registered."""
    if isinstance(process_set, ProcessSet) and process_set.process_set_id is None:
        return False
    set_id = process_set_id(process_set)
    if set_id == HVD_GLOBAL_PROCESS_SET:
        return False
    check(lib.hvd_remove_process_set(set_id), "hvd_remove_process_set")
    if isinstance(process_set, ProcessSet):
        process_set.process_set_id = None
    return True


def process_set_ranks(process_set):
    """Global ranks of a set, ascending."""
    set_id = process_set_id(process_set)
    n = ctypes.c_int(0)
    check(lib.hvd_process_set_ranks(set_id, None, 0, ctypes.byref(n)), "hvd_process_set_ranks")
    buf = (ctypes.c_int * max(n.value, 1))()
    check(lib.hvd_process_set_ranks(set_id, buf, n.value, ctypes.byref(n)),
          "hvd_process_set_ranks")
    return list(buf[:n.value])


def process_set_ids():
    """Ids of the existing process sets, ascending (0 is the global set)."""
    n = ctypes.c_int(0)
    check(lib.hvd_process_set_ids(None, 0, ctypes.byref(n)), "hvd_process_set_ids")
    buf = (ctypes.c_int32 * max(n.value, 1))()
    check(lib.hvd_process_set_ids(buf, n.value, ctypes.byref(n)), "hvd_process_set_ids")
    return list(buf[:n.value])


# --- synchronization ----------------------------------------------------------------

def barrier(process_set=None):
    """Returns when every rank of the set has called barrier()."""
    check(lib.hvd_barrier(process_set_id(process_set)), "hvd_barrier")


def join(device=HVD_DEVICE_CPU):
    """This rank has no more data: it contributes zeros to the other ranks'
    allreduces until all have joined. Returns the last rank to join."""
    last = ctypes.c_int(-1)
    check(lib.hvd_join(int(device), ctypes.byref(last)), "hvd_join")
    return last.value


# --- timeline -----------------------------------------------------------------------

def start_timeline(file_path, mark_cycles=False):
    """Starts writing a Chrome-trace timeline to file_path."""
    check(lib.hvd_start_timeline(str(file_path).encode(), 1 if mark_cycles else 0),
          "hvd_start_timeline")


def stop_timeline():
    check(lib.hvd_stop_timeline(), "hvd_stop_timeline")


# --- build and configuration --------------------------------------------------------

def version():
    """The library version as text, "MAJOR.MINOR.PATCH" (as hvd.__version__ and
    Horovod's horovod.__version__ are)."""
    return version_string()


def version_number():
    """The library version as MAJOR * 10000 + MINOR * 100 + PATCH, for comparisons
    (hvd_version() in C)."""
    return lib.hvd_version()


def version_string():
    return lib.hvd_version_string().decode()


def mpi_built():
    return lib.hvd_mpi_built() == 1


def mpi_enabled():
    return mpi_built()


def cuda_built():
    return lib.hvd_cuda_built() == 1


def nccl_built():
    """The NCCL version code (e.g. 21805) when libhvd was built with NCCL, else 0, as
    Horovod's nccl_built() returns."""
    return lib.hvd_nccl_version()


def hwloc_built():
    return lib.hvd_hwloc_built() == 1


# What Horovod's front ends ask of the build: libhvd has one MPI background thread and
# none of Gloo, ROCm, DDL or oneCCL.
def mpi_threads_supported():
    """libhvd drives MPI from one background thread; user threads never call MPI."""
    return True


def gloo_enabled():
    return False


def gloo_built():
    return False


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


def mpi_library_version():
    return lib.hvd_mpi_library_version().decode("utf-8", "replace")


def param(name):
    """Current value of a configuration knob by its environment name, as text."""
    buf = ctypes.create_string_buffer(4096)
    check(lib.hvd_param_get(name.encode(), buf, len(buf)), "hvd_param_get")
    return buf.value.decode()


def counters():
    """Traffic counters since init, as a dict."""
    c = Counters()
    c.struct_size = ctypes.sizeof(Counters)
    check(lib.hvd_get_counters(ctypes.byref(c)), "hvd_get_counters")
    return {name: getattr(c, name) for name, _ in Counters._fields_
            if name not in ("struct_size", "reserved")}


def mark_step():
    """Marks the end of a training step on this rank (hvd_mark_step): from the first
    call on, step accounting counts steps between marks instead of detecting them.
    DistributedOptimizer.step() calls it; call it once per step in other loops."""
    check(lib.hvd_mark_step(), "hvd_mark_step")


def step_stats(top=8):
    """This rank's step accounting (hvd_get_step_stats) as a dict with the keys of
    the HVD_SUMMARY_FILE JSON: seconds are means per measured step, bandwidths bytes/s.
    The job-wide keys (ranks, *_max_rank, per_rank) describe this rank alone.
    reference_bus_bandwidth is measured at shutdown, when a summary is asked for: it
    is 0 before, and stays readable after hvd.shutdown()."""
    s = StepStats()
    s.struct_size = ctypes.sizeof(StepStats)
    check(lib.hvd_get_step_stats(ctypes.byref(s)), "hvd_get_step_stats")
    entries = (StepTensor * max(1, int(top)))()
    count = ctypes.c_int(0)
    check(lib.hvd_get_step_top_tensors(entries, int(top), ctypes.byref(count)),
          "hvd_get_step_top_tensors")
    share = s.exposed_wait_seconds / s.step_seconds if s.step_seconds > 0 else 0.0
    my_rank = lib.hvd_rank()
    times = {
        "negotiate_seconds": s.negotiate_seconds,
        "copy_seconds": s.copy_seconds,
        "transfer_seconds": s.transfer_seconds,
        "bytes_per_step": s.bytes_per_step,
        "bus_bandwidth": s.bus_bandwidth,
        "reference_bus_bandwidth": s.reference_bus_bandwidth,
    }
    mine = {
        "rank": my_rank,
        "steps": s.steps,
        "step_seconds": s.step_seconds,
        "exposed_wait_seconds": s.exposed_wait_seconds,
        "exposed_share": share,
        **times,
    }
    return {
        "ranks": 1,
        "steps": s.steps,
        "warmup_steps": s.warmup_steps,
        "enabled": bool(s.enabled),
        "step_seconds": s.step_seconds,
        "step_seconds_max_rank": s.step_seconds,
        "exposed_wait_seconds": s.exposed_wait_seconds,
        "exposed_share": share,
        "exposed_share_max_rank": share,
        "exposed_share_worst_rank": my_rank,
        **times,
        "top_tensors": [{"name": entries[i].name.decode(errors="replace"),
                         "wait_seconds": entries[i].wait_seconds}
                        for i in range(count.value)],
        "per_rank": [mine],
    }


def reducescatter_rows(dim0, set_rank, set_size):
    """Rows that set_rank receives from a reducescatter of dim0 rows over set_size."""
    rows = lib.hvd_reducescatter_rows(int(dim0), int(set_rank), int(set_size))
    if rows < 0:
        raise ValueError(f"reducescatter_rows: invalid arguments ({dim0}, {set_rank}, "
                         f"{set_size})")
    return rows


def predivide_scales(op, gradient_predivide_factor):
    """(prescale, postscale) of a distributed optimizer's or tape's reduction: with
    Average, gradient_predivide_factor splits the averaging around the sum, as Horovod
    does (libhvd divides by the size for Average itself); other ops are not scaled."""
    if op == Average:
        return 1.0 / gradient_predivide_factor, gradient_predivide_factor
    return 1.0, 1.0


def reduces_gradients(process_set):
    """Whether a distributed optimizer's or tape's gradients are reduced on this rank:
    it is a member of `process_set` and the set has more than one rank. Otherwise they
    pass through unchanged, as in Horovod (a rank outside the set trains on its own)."""
    return process_set.included() and process_set.size() > 1
